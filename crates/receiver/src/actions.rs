//! What a person may do: confirm or dismiss a held
//! fraud review, approve or reject a hold of any kind (`holds.rs`), run dead jobs again, send an event again, acknowledge an
//! item, enable or recover a destination (`destinations.rs`), cancel or
//! refund an order of the Orders API (`platform_orders.rs`). The console,
//! the admin API and the CLI all act through here, so
//! each action is recorded in the audit with who, when, what and how it
//! ended: the entry is written before the action runs (no action without
//! its record) and completed after.

mod acknowledge;
mod dead_groups;
mod destinations;
mod holds;
pub mod items;
pub mod platform_orders;

pub use holds::hold_does;

use std::sync::Arc;

use crate::domain::platform::PaymentStatus;
use crate::domain::subject::Subject;
use crate::domain::{Action, AuditOutcome};
use crate::operators::Actor;
use crate::rules::fraud::{Undo, undo_for};
use crate::store::console_views::{NewAudit, ReviewDetail};
use crate::store::{Again, Answer, Redelivered, ReviewView, Store, StoreError};
use pointhook_common::clock::Clock;

/// How an action ended when storage did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done<T> {
    Done(T),
    /// Not done, and why (no such item, not in a state that allows it).
    Refused(String),
    /// Perhaps done: the platform gave no clear answer (a timeout, a 5xx).
    /// Asking again is safe where the call carries an idempotency key.
    Unknown(String),
}

/// An action recorded: its audit entry, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acted<T> {
    pub audit: i64,
    pub done: Done<T>,
}

/// What confirming a held review will do, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consequence {
    pub words: String,
    /// Money moves (a cancel or a refund): a second confirmation is asked.
    pub moves_money: bool,
    /// `cancel` or `refund`, when money moves.
    pub undo: Option<&'static str>,
    pub amount: Option<String>,
}

/// What confirming `r` will do, from the payment's last known status and
/// the order's state (`rules::fraud::undo_for` decides; this only says it).
pub fn consequence(r: &ReviewDetail) -> Consequence {
    let released = r.order.as_ref().is_some_and(|o| o.released_at.is_some());
    if released {
        return Consequence {
            words: "the order was released already: nothing is cancelled or refunded \
                    automatically (order.fraud_after_release goes to a person)"
                .into(),
            moves_money: false,
            undo: None,
            amount: None,
        };
    }
    let Some(p) = &r.payment else {
        return Consequence {
            words: "cancel the payment if it is still pending, or refund it if approved \
                    (its status and amount are read at confirmation; a refund cannot be undone)"
                .into(),
            moves_money: true,
            undo: None,
            amount: None,
        };
    };
    let amount = p.amount.clone();
    let money = |a: &Option<String>| {
        let cur = p
            .currency
            .as_deref()
            .map(|c| format!(" {c}"))
            .unwrap_or_default();
        a.as_deref()
            .map_or("the payment's amount".to_string(), |a| format!("{a}{cur}"))
    };
    let (words, moves, how) = match undo_for(&PaymentStatus::parse(&p.status)) {
        Undo::Cancel => (
            format!("cancel the pending payment of {}", money(&amount)),
            true,
            Some("cancel"),
        ),
        Undo::Refund => (
            format!("refund {} to the buyer; cannot be undone", money(&amount)),
            true,
            Some("refund"),
        ),
        Undo::AlreadyDone(event) => (
            format!(
                "nothing to undo: the payment is {} already ({event})",
                p.status
            ),
            false,
            None,
        ),
        Undo::NothingMoved => (
            "nothing to undo: the payment was rejected, no money moved".into(),
            false,
            None,
        ),
        Undo::Impossible(why) => (format!("nothing automatic: {why}"), false, None),
    };
    Consequence {
        words,
        moves_money: moves,
        undo: how,
        amount: amount.filter(|_| moves),
    }
}

/// The order (or intent, or payment) an event's subject or a job's key is
/// about: a subject as `domain::subject` reads it; a job's key is its
/// subject's text but for a fraud alert's (`fraud:ORDER:PAYMENT`, or
/// `fraud:ipn:N`, which names no order).
pub fn order_of(key: &str) -> Option<String> {
    if let Some(subject) = Subject::parse(key) {
        return subject.order().map(str::to_string);
    }
    key.strip_prefix("fraud:")?
        .split(':')
        .next()
        .filter(|o| *o != "-" && *o != "ipn")
        .map(str::to_string)
}

/// Acts for a person, recording each action.
#[derive(Clone)]
pub struct Actions {
    pub store: Store,
    pub clock: Arc<dyn Clock>,
}

/// What an audit entry is about.
struct About {
    item: String,
    account: Option<String>,
    order_id: Option<String>,
    detail: String,
}

impl Actions {
    fn now(&self) -> i64 {
        crate::store::unix_ms(self.clock.now())
    }

    /// Records the action, runs it, records how it ended.
    async fn audited<T>(
        &self,
        who: &Actor,
        action: Action,
        about: About,
        run: impl std::future::Future<Output = Result<Done<T>, StoreError>>,
        said: impl Fn(&T) -> String,
    ) -> Result<Acted<T>, StoreError> {
        let id = self
            .store
            .begin_audit(NewAudit {
                at: self.now(),
                actor: who.name.clone(),
                via: who.via,
                action,
                item: about.item,
                account: about.account,
                order_id: about.order_id,
                detail: about.detail,
            })
            .await?;
        let done = run.await;
        let (outcome, result) = match &done {
            Ok(Done::Done(t)) => (AuditOutcome::Done, said(t)),
            Ok(Done::Refused(why)) => (AuditOutcome::Refused, why.clone()),
            Ok(Done::Unknown(why)) => (AuditOutcome::Unknown, why.clone()),
            Err(e) => (AuditOutcome::Failed, e.to_string()),
        };
        if let Err(e) = self.store.end_audit(id, outcome, result, self.now()).await {
            tracing::error!(audit_id = id, error = %e, "an action's outcome was not recorded");
        }
        Ok(Acted {
            audit: id,
            done: done?,
        })
    }

    fn review_about(&self, id: i64, r: Option<&ReviewDetail>, verb: &str) -> About {
        match r {
            Some(d) => {
                let v = &d.review;
                let mut detail = format!(
                    "{verb} fraud review {id} (merchant order {}, payment {})",
                    v.merchant_order_id.as_deref().unwrap_or("-"),
                    v.payment_id.as_deref().unwrap_or("-")
                );
                if verb == "confirm" {
                    detail = format!("{detail}: {}", consequence(d).words);
                }
                About {
                    item: format!("fraud_review:{id}"),
                    account: Some(v.account.clone()),
                    order_id: v.merchant_order_id.clone(),
                    detail,
                }
            }
            None => About {
                item: format!("fraud_review:{id}"),
                account: None,
                order_id: None,
                detail: format!("{verb} fraud review {id}"),
            },
        }
    }

    fn review_done(id: i64, answer: Answer) -> Done<ReviewView> {
        match answer {
            Answer::Done(r) => Done::Done(*r),
            Answer::NotFound => Done::Refused(format!("no fraud review {id}")),
            Answer::AlreadyDecided(state) => {
                Done::Refused(format!("fraud review {id} is {state} already"))
            }
        }
    }

    /// The held alert's cancel or refund goes ahead.
    pub async fn confirm_review(
        &self,
        who: &Actor,
        id: i64,
    ) -> Result<Acted<ReviewView>, StoreError> {
        let review = self.store.review(id).await?;
        let about = self.review_about(id, review.as_ref(), "confirm");
        let run = async {
            let by = who.name.clone();
            let answer = self.store.confirm_review(id, by, self.now()).await?;
            Ok(Self::review_done(id, answer))
        };
        self.audited(who, Action::Confirm, about, run, |_| {
            "confirmed: its job runs the undo".into()
        })
        .await
    }

    /// The alert's block is lifted and its order decided again.
    pub async fn dismiss_review(
        &self,
        who: &Actor,
        id: i64,
    ) -> Result<Acted<ReviewView>, StoreError> {
        let review = self.store.review(id).await?;
        let about = self.review_about(id, review.as_ref(), "dismiss");
        let run = async {
            let by = who.name.clone();
            let answer = self.store.dismiss_review(id, by, self.now()).await?;
            Ok(Self::review_done(id, answer))
        };
        self.audited(who, Action::Dismiss, about, run, |_| {
            "dismissed: the block is lifted, the order is decided again".into()
        })
        .await
    }

    /// A dead job runs again with fresh attempts (its dead run is kept).
    pub async fn retry_job(&self, who: &Actor, id: i64) -> Result<Acted<i64>, StoreError> {
        let job = self.store.get_job(id).await?;
        let about = About {
            item: format!("job:{id}"),
            account: job.as_ref().map(|j| j.summary.account.clone()),
            order_id: job.as_ref().and_then(|j| order_of(&j.summary.key)),
            detail: match &job {
                Some(j) => format!(
                    "retry job {id} ({}), dead after {} attempts: {}",
                    j.summary.key,
                    j.summary.attempts,
                    j.summary
                        .last_error
                        .as_deref()
                        .unwrap_or("no error recorded")
                ),
                None => format!("retry job {id}"),
            },
        };
        let run = async {
            Ok(if self.store.retry_job(id, self.now()).await? {
                Done::Done(id)
            } else {
                Done::Refused(format!("job {id} does not exist or is not dead"))
            })
        };
        self.audited(who, Action::Retry, about, run, |_| "pending again".into())
            .await
    }

    /// Dead jobs of one group run again; `what` names the group. One entry
    /// for the group, and one per job retried.
    pub async fn retry_jobs(
        &self,
        who: &Actor,
        ids: Vec<i64>,
        group: &str,
        what: &str,
    ) -> Result<Acted<Vec<i64>>, StoreError> {
        let about = About {
            item: format!("job_group:{group}"),
            account: None,
            order_id: None,
            detail: format!("retry {} dead jobs: {what}", ids.len()),
        };
        let run = async {
            let retried = self.store.retry_jobs(ids.clone(), self.now()).await?;
            Ok(Done::Done(retried))
        };
        let acted = self
            .audited(who, Action::Retry, about, run, |r: &Vec<i64>| {
                format!("{} of {} pending again", r.len(), ids.len())
            })
            .await?;
        if let Done::Done(retried) = &acted.done {
            for id in retried {
                let entry = NewAudit {
                    at: self.now(),
                    actor: who.name.clone(),
                    via: who.via,
                    action: Action::Retry,
                    item: format!("job:{id}"),
                    account: None,
                    order_id: None,
                    detail: format!("retry job {id} with its group: {what}"),
                };
                let a = self.store.begin_audit(entry).await?;
                self.store
                    .end_audit(a, AuditOutcome::Done, "pending again".into(), self.now())
                    .await?;
            }
        }
        Ok(acted)
    }

    /// Every dead job runs again.
    pub async fn retry_dead_jobs(&self, who: &Actor) -> Result<Acted<usize>, StoreError> {
        let about = About {
            item: "jobs:dead".into(),
            account: None,
            order_id: None,
            detail: "retry every dead job".into(),
        };
        let run = async { Ok(Done::Done(self.store.retry_dead_jobs(self.now()).await?)) };
        self.audited(who, Action::Retry, about, run, |n| {
            format!("{n} pending again")
        })
        .await
    }

    /// The event is sent again, with the same id: to the destinations
    /// that gave it up or failed it, or (`Again::Everywhere`, asked for in
    /// those words) to every destination that takes it.
    pub async fn redeliver(
        &self,
        who: &Actor,
        event: &str,
        again: Again,
    ) -> Result<Acted<Vec<String>>, StoreError> {
        let found = self.store.get_event(event.to_string()).await?;
        let to = match again {
            Again::Unfinished => "to the destinations that gave it up or failed it",
            Again::Everywhere => "to every destination",
        };
        let about = About {
            item: format!("event:{event}"),
            account: found.as_ref().map(|e| e.summary.account.clone()),
            order_id: found.as_ref().and_then(|e| order_of(&e.summary.subject)),
            detail: match &found {
                Some(e) => format!(
                    "redeliver {} {event} {to} ({})",
                    e.summary.event_type,
                    e.summary.where_()
                ),
                None => format!("redeliver event {event} {to}"),
            },
        };
        let run = async {
            if !self.store.delivers_events() {
                return Ok(Done::Refused(
                    "events are only stored: set [fulfillment] url to deliver them".into(),
                ));
            }
            Ok(
                match self
                    .store
                    .redeliver_event(event.to_string(), again, self.now())
                    .await?
                {
                    Redelivered::To(names) => Done::Done(names),
                    Redelivered::NoSuchEvent => Done::Refused(format!("no event {event}")),
                    Redelivered::NothingFailed => Done::Refused(NOTHING_FAILED.into()),
                },
            )
        };
        self.audited(who, Action::Redeliver, about, run, |names| {
            format!("pending again, same id, at {}", names.join(", "))
        })
        .await
    }
}

/// Why "deliver again" sends nothing when every destination took it.
pub const NOTHING_FAILED: &str = "every destination took it already: \
    deliver it again to every destination to send it to all";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::console_views::{OrderState, PaymentSeen};

    fn review(status: Option<&str>, released: bool) -> ReviewDetail {
        ReviewDetail {
            review: ReviewView {
                id: 1,
                account: "default".into(),
                state: "held",
                round: 1,
                alert: "order 9".into(),
                delivery_id: Some(1),
                merchant_order_id: Some("9".into()),
                payment_id: Some("5".into()),
                reason: "r".into(),
                job_key: "fraud:9:5".into(),
                created_at: String::new(),
                decided_at: None,
            },
            notifications: vec![],
            payment: status.map(|s| PaymentSeen {
                status: s.into(),
                amount: Some("480.00".into()),
                currency: None,
                at: String::new(),
            }),
            order: Some(OrderState {
                released_at: released.then(String::new),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn confirming_says_what_it_will_do() {
        let c = consequence(&review(Some("approved"), false));
        assert_eq!(c.words, "refund 480.00 to the buyer; cannot be undone");
        assert_eq!((c.moves_money, c.undo), (true, Some("refund")));
        let c = consequence(&review(Some("pending"), false));
        assert_eq!(c.words, "cancel the pending payment of 480.00");
        assert_eq!(c.undo, Some("cancel"));
        assert!(!consequence(&review(Some("rejected"), false)).moves_money);
        assert!(!consequence(&review(Some("approved"), true)).moves_money);
        assert!(consequence(&review(None, false)).moves_money);
    }

    #[test]
    fn items_name_their_order() {
        assert_eq!(order_of("merchant_order:12").as_deref(), Some("12"));
        assert_eq!(order_of("fraud:12:34").as_deref(), Some("12"));
        assert_eq!(order_of("fraud:-:34"), None);
        assert_eq!(order_of("chargeback:1"), None);
        assert_eq!(order_of("fraud_alert:12:34#2").as_deref(), Some("12"));
        assert_eq!(order_of("fraud:ipn:5"), None);
    }
}
