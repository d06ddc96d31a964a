//! The inbox as one typed list (`domain::Item`): each kind read from the
//! store once (`Store::inbox`, the held holds) and turned into items here,
//! and one way to act on an item by its key (`Actions::act`), which the
//! console, the CLI and the admin API share. Dead jobs come grouped by
//! cause: the class of their failure as the job keeps it (never its
//! words), the endpoint it names and the hour the job died.

pub use super::dead_groups::{Group, HOUR_MS, group, is_mismatch};
use super::{Acted, Actions, Done, consequence};
use crate::domain::{HoldAnswer, HoldSeen, HoldState, Item, ItemAction, ItemKey, ItemKind};
use crate::operators::Actor;
use crate::store::console_views::{Flagged, Missed, ReviewDetail};
use crate::store::views::{EventSummary, JobSummary};
use crate::store::{Again, DestinationView, StoreError};

/// Why an action on an item was not taken before it began.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("{kind} offers no {action}")]
    NotOffered {
        kind: &'static str,
        action: &'static str,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn item(kind: ItemKind, key: ItemKey, account: Option<&str>, subject: String) -> Item {
    Item {
        kind,
        key,
        account: account.map(str::to_string),
        order: None,
        subject,
        text: String::new(),
        evidence: Vec::new(),
        path: String::new(),
        count: 1,
        actions: kind.spec().actions.to_vec(),
    }
}

fn order_subject(order: Option<&str>) -> String {
    format!("merchant_order:{}", order.unwrap_or("unknown"))
}

fn review(d: &ReviewDetail) -> Item {
    let r = &d.review;
    let mut i = item(
        ItemKind::Review,
        ItemKey::Review(r.id),
        Some(&r.account),
        order_subject(r.merchant_order_id.as_deref()),
    );
    i.text = format!(
        "fraud review {}: merchant order {}, payment {}; confirming will {}",
        r.id,
        r.merchant_order_id.as_deref().unwrap_or("unknown"),
        r.payment_id.as_deref().unwrap_or("unknown"),
        consequence(d).words
    );
    i.evidence = vec![r.reason.clone()];
    i.path = format!("/fraud-reviews/{}", r.id);
    i
}

fn hold(h: &HoldSeen) -> Item {
    let what = crate::rules::holds::kind(&h.kind).map_or(h.kind.as_str(), |k| k.title);
    let mut i = item(
        ItemKind::Hold,
        ItemKey::Hold(h.id),
        Some(&h.account),
        h.subject.clone(),
    );
    i.text = format!(
        "{what}: {}; approving will {}",
        h.subject,
        super::hold_does(h, HoldAnswer::Approve)
    );
    i.evidence = vec![h.reason.clone(), h.evidence.clone()];
    i.path = format!("/holds/{}", h.id);
    i
}

pub fn flagged(kind: ItemKind, f: &Flagged, what: &str) -> Option<Item> {
    let key = ItemKey::parse(&f.item).ok()?;
    let mut i = item(
        kind,
        key,
        Some(&f.account),
        order_subject(Some(&f.order_id)),
    );
    i.text = format!("Merchant order {} {what}", f.order_id);
    i.evidence = vec![format!("since {}", f.at)];
    i.path = format!(
        "/orders/{}?account={}&kind=merchant_order",
        enc(&f.order_id),
        enc(&f.account)
    );
    Some(i)
}

fn enc(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

fn mismatch(j: &JobSummary) -> Item {
    let mut i = item(
        ItemKind::Mismatch,
        ItemKey::Job(j.id),
        Some(&j.account),
        j.key.clone(),
    );
    i.text = format!("job {} ({}): no rule decides it", j.id, j.key);
    i.evidence = j.last_error.iter().cloned().collect();
    i.path = format!("/jobs/{}", j.id);
    i
}

fn dead_group(g: &Group) -> Item {
    let key = ItemKey::JobGroup {
        class: g.class.clone(),
        endpoint: g.endpoint.clone(),
        hour: g.hour,
    };
    let mut i = item(
        ItemKind::DeadJobs,
        key,
        None,
        format!("jobs:{}", g.endpoint),
    );
    i.text = format!("{} dead: {} on {}", g.count(), g.class, g.endpoint);
    i.evidence = g
        .listed()
        .iter()
        .map(|j| {
            format!(
                "job {} {}: {}",
                j.id,
                j.key,
                j.last_error.as_deref().unwrap_or("")
            )
        })
        .collect();
    i.evidence.push(format!("died between {}", g.window));
    i.count = g.count();
    i.path = "/jobs?state=dead".into();
    i
}

fn gave_up(e: &EventSummary) -> Item {
    let mut i = item(
        ItemKind::GaveUp,
        ItemKey::Event(e.id.clone()),
        Some(&e.account),
        e.subject.clone(),
    );
    i.text = format!(
        "{} {}: gave up at {}",
        e.event_type,
        e.subject,
        e.listed_at.as_deref().unwrap_or("its destination")
    );
    i.evidence = e.last_error.iter().cloned().collect();
    i.path = format!("/events/{}", enc(&e.id));
    i
}

pub fn missed(m: &Missed) -> Item {
    let d = &m.delivery;
    let mut i = item(
        ItemKind::Missed,
        ItemKey::Missed(d.id),
        Some(&d.account),
        format!("{}:{}", d.topic, d.resource_id),
    );
    i.text = format!("{} {}: the platform never sent it", d.topic, d.resource_id);
    i.subject = format!("{} {}", d.topic, d.resource_id);
    i.evidence = vec![format!(
        "found {}; its job: {}",
        d.received_at,
        m.job_state.unwrap_or("none")
    )];
    i.path = format!("/deliveries/{}", d.id);
    i
}

fn destination(d: &DestinationView) -> Item {
    let kind = if d.state == "disabled" {
        ItemKind::DestinationDisabled
    } else {
        ItemKind::DestinationFailing
    };
    let mut i = item(
        kind,
        ItemKey::Destination(d.name.clone()),
        None,
        format!("destination:{}", d.name),
    );
    i.text = match (kind, &d.disabled_reason) {
        (ItemKind::DestinationDisabled, Some(r)) => {
            format!("destination {} is disabled ({r})", d.name)
        }
        (ItemKind::DestinationDisabled, None) => format!("destination {} is disabled", d.name),
        _ => format!("destination {} is failing", d.name),
    };
    i.evidence = vec![format!("{} waiting, {} gave up", d.backlog, d.gave_up)];
    i.evidence.extend(
        d.failing_since
            .iter()
            .map(|at| format!("every attempt failed since {at}")),
    );
    i.path = format!("/destinations/{}", enc(&d.name));
    i
}

impl Actions {
    /// Everything that needs a person, each kind in the inbox's order, at
    /// most `limit` of each kind (dead jobs before grouping).
    pub async fn items(&self, limit: usize) -> Result<Vec<Item>, StoreError> {
        let inbox = self.store.inbox(limit, self.now()).await?;
        let holds = self
            .store
            .holds(Some(HoldState::Held), None, None, limit)
            .await?;
        let (mismatches, dead): (Vec<_>, Vec<_>) =
            inbox.dead_jobs.into_iter().partition(is_mismatch);
        let mut items: Vec<Item> = inbox.reviews.iter().map(review).collect();
        items.extend(holds.iter().map(hold));
        items.extend(inbox.after_release.iter().filter_map(|f| {
            flagged(
                ItemKind::AfterRelease,
                f,
                "was released before a fraud alert: the goods left, nothing was undone",
            )
        }));
        items.extend(inbox.at_risk.iter().filter_map(|f| {
            flagged(
                ItemKind::AtRisk,
                f,
                "is at risk: released, then a chargeback",
            )
        }));
        items.extend(mismatches.iter().map(mismatch));
        items.extend(group(dead).iter().map(dead_group));
        items.extend(inbox.dead_events.iter().map(gave_up));
        items.extend(inbox.missed.iter().map(missed));
        items.extend(inbox.destinations.iter().map(destination));
        Ok(items)
    }

    /// Acts on the item `key` names, as the console, the CLI and the API
    /// do; recorded in the audit as each action is. Asking a second time
    /// is the caller's (the console's pages); the kind must offer it.
    pub async fn act(
        &self,
        who: &Actor,
        key: &ItemKey,
        action: ItemAction,
    ) -> Result<Acted<String>, ActError> {
        let order = key.order().map(|(a, o)| (a.to_string(), o.to_string()));
        self.act_about(who, key, action, order).await
    }

    /// `act`, the audit naming the (account, merchant order) the caller
    /// listed the item with when its key does not name it (an order
    /// released before a fraud alert is keyed by its decision).
    pub async fn act_about(
        &self,
        who: &Actor,
        key: &ItemKey,
        action: ItemAction,
        order: Option<(String, String)>,
    ) -> Result<Acted<String>, ActError> {
        let kind = key.kind();
        let offered = kind.offers(action)
            // A destination's key names it whether disabled or failing.
            || (matches!(key, ItemKey::Destination(_)) && action == ItemAction::Enable);
        if !offered {
            return Err(ActError::NotOffered {
                kind: kind.as_str(),
                action: action.as_str(),
            });
        }
        let said = |done: &str| done.to_string();
        Ok(match (key, action) {
            (ItemKey::Review(id), ItemAction::Confirm) => {
                words(self.confirm_review(who, *id).await?, |_| said("confirmed"))
            }
            (ItemKey::Review(id), ItemAction::Dismiss) => {
                words(self.dismiss_review(who, *id).await?, |_| said("dismissed"))
            }
            (ItemKey::Hold(id), ItemAction::Approve | ItemAction::Reject) => {
                let answer = if action == ItemAction::Approve {
                    HoldAnswer::Approve
                } else {
                    HoldAnswer::Reject
                };
                words(self.answer_hold(who, *id, answer).await?, |h| {
                    h.state.as_str().to_string()
                })
            }
            (ItemKey::Job(id), ItemAction::Retry) => {
                words(self.retry_job(who, *id).await?, |_| said("pending again"))
            }
            (
                ItemKey::JobGroup {
                    class,
                    endpoint,
                    hour,
                },
                ItemAction::Retry,
            ) => self.retry_group(who, class, endpoint, *hour).await?,
            (ItemKey::Event(id), ItemAction::Redeliver) => {
                words(self.redeliver(who, id, Again::Unfinished).await?, |to| {
                    format!("sent again to {}", to.join(", "))
                })
            }
            (ItemKey::Destination(name), ItemAction::Enable) => {
                words(self.enable_destination(who, name).await?, |_| {
                    said("enabled")
                })
            }
            (_, ItemAction::Acknowledge) => {
                let detail = self.acknowledged_what(key, order.as_ref()).await?;
                let (account, order) = order.map(|(a, o)| (Some(a), Some(o))).unwrap_or_default();
                let acted = self
                    .acknowledge(who, &key.to_string(), account, order, detail)
                    .await?;
                words(acted, |_| said("acknowledged"))
            }
            _ => {
                return Err(ActError::NotOffered {
                    kind: kind.as_str(),
                    action: action.as_str(),
                });
            }
        })
    }

    /// What an acknowledgement is about, in the inbox's words.
    async fn acknowledged_what(
        &self,
        key: &ItemKey,
        order: Option<&(String, String)>,
    ) -> Result<String, StoreError> {
        let printable = pointhook_common::text::printable;
        Ok(match key {
            ItemKey::AtRisk { account, order } => format!(
                "acknowledge merchant order {} ({}) at risk",
                printable(order),
                printable(account)
            ),
            ItemKey::Missed(id) => match self.store.get_delivery(*id).await? {
                Some(d) => format!(
                    "acknowledge a missed notification: {} {} ({})",
                    printable(&d.summary.topic),
                    printable(&d.summary.resource_id),
                    printable(&d.summary.account)
                ),
                None => format!("acknowledge a missed notification (delivery {id})"),
            },
            ItemKey::AfterRelease(_) => match order {
                Some((account, order)) => format!(
                    "acknowledge merchant order {} ({}) released before a fraud alert",
                    printable(order),
                    printable(account)
                ),
                None => "acknowledge an order released before a fraud alert".into(),
            },
            other => format!("acknowledge {}", printable(&other.to_string())),
        })
    }

    /// Every dead job of one group, found again now: its hour read again,
    /// each job's failure as it keeps it.
    pub async fn retry_group(
        &self,
        who: &Actor,
        class: &str,
        endpoint: &str,
        hour: i64,
    ) -> Result<Acted<String>, StoreError> {
        let dead = self
            .store
            .dead_jobs_between(hour, hour.saturating_add(HOUR_MS))
            .await?;
        let ids: Vec<i64> = group(dead.into_iter().filter(|j| !is_mismatch(j)).collect())
            .into_iter()
            .filter(|g| g.class == class && g.endpoint == endpoint && g.hour == hour)
            .flat_map(|g| g.jobs.into_iter().map(|j| j.id))
            .collect();
        if ids.is_empty() {
            return Ok(Acted {
                audit: 0,
                done: Done::Refused("no dead job is left in that group".into()),
            });
        }
        let what = format!(
            "{class} on {endpoint} between {} and {}",
            pointhook_common::clock::rfc3339(hour),
            pointhook_common::clock::rfc3339(hour.saturating_add(HOUR_MS))
        );
        let group = format!("{class}/{endpoint}/{hour}");
        let acted = self.retry_jobs(who, ids, &group, &what).await?;
        Ok(words(acted, |r| format!("{} pending again", r.len())))
    }
}

/// An action's outcome in words, whatever it returned.
fn words<T>(a: Acted<T>, say: impl FnOnce(&T) -> String) -> Acted<String> {
    Acted {
        audit: a.audit,
        done: match a.done {
            Done::Done(t) => Done::Done(say(&t)),
            Done::Refused(why) => Done::Refused(why),
            Done::Unknown(why) => Done::Unknown(why),
        },
    }
}
