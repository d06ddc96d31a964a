//! What the inbox lists: one typed item (`Item`) of a kind (`ItemKind`)
//! under a typed key (`ItemKey`), offering the actions its kind offers.
//! A kind says, in one place (`ItemKind::spec`), its heading, the alert
//! that tells of it and the gauge label that counts it, so a new kind is
//! shown, told and counted by adding it here and reading it in the store.
//!
//! A key's text is the one acknowledgements and the audit have always
//! kept (`at_risk:ACCOUNT:ORDER`, `missed:7`), read back only here.

use std::fmt;

use strum::{EnumIter, EnumString, IntoStaticStr};

use super::attention::{AlertKind, Severity};

/// Each kind of thing the inbox lists, in the order it lists them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, IntoStaticStr, EnumString, EnumIter,
)]
#[strum(serialize_all = "snake_case")]
pub enum ItemKind {
    /// A fraud alert held for a person.
    Review,
    /// A hold of any kind (`rules::holds`).
    Hold,
    AfterRelease,
    AtRisk,
    /// A payment that is not its intent's: no rule decides it.
    Mismatch,
    /// Dead jobs, grouped by their failure's class, endpoint and hour.
    DeadJobs,
    /// An event that gave up at a destination.
    GaveUp,
    Missed,
    DestinationDisabled,
    DestinationFailing,
}

/// What a kind is, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindSpec {
    /// The inbox's heading for the kind (a count follows it).
    pub heading: &'static str,
    /// The label of `pointhook_attention_items{kind}` that counts it.
    pub gauge: &'static str,
    /// The alert that tells a person of it.
    pub alert: AlertKind,
    /// What the inbox offers on each item of the kind.
    pub actions: &'static [ItemAction],
}

/// What a person can do to an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, EnumString, EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum ItemAction {
    /// Seen and dealt with: it leaves the inbox.
    Acknowledge,
    /// A dead job, or every job of a group, runs again.
    Retry,
    /// An event goes again to where it gave up.
    Redeliver,
    /// A disabled destination takes events again.
    Enable,
    /// A fraud review's alert confirmed (cancel or refund).
    Confirm,
    /// A fraud review's alert dismissed.
    Dismiss,
    Approve,
    Reject,
}

impl ItemAction {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<ItemAction> {
        s.parse().ok()
    }

    /// The words on its button.
    pub fn label(self) -> &'static str {
        match self {
            ItemAction::Acknowledge => "Acknowledge: dealt with",
            ItemAction::Retry => "Retry",
            ItemAction::Redeliver => "Deliver again (same id)",
            ItemAction::Enable => "Enable",
            ItemAction::Confirm => "Confirm the alert…",
            ItemAction::Dismiss => "Dismiss: not fraud…",
            ItemAction::Approve => "Approve…",
            ItemAction::Reject => "Reject…",
        }
    }

    /// Whether the console asks a second time before doing it.
    pub fn asks_twice(self) -> bool {
        matches!(
            self,
            ItemAction::Confirm | ItemAction::Dismiss | ItemAction::Approve | ItemAction::Reject
        )
    }
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<ItemKind> {
        s.parse().ok()
    }

    pub fn all() -> impl Iterator<Item = ItemKind> {
        <ItemKind as strum::IntoEnumIterator>::iter()
    }

    pub fn spec(self) -> KindSpec {
        use ItemAction::*;
        let (heading, gauge, alert, actions): (_, _, _, &'static [ItemAction]) = match self {
            ItemKind::Review => (
                "Fraud alerts held for you",
                "fraud_review_held",
                AlertKind::FraudReviewHeld,
                &[Confirm, Dismiss],
            ),
            ItemKind::Hold => ("Held for you", "hold", AlertKind::Held, &[Approve, Reject]),
            ItemKind::AfterRelease => (
                "Orders released before a fraud alert",
                "released_before_fraud_alert",
                AlertKind::ReleasedBeforeFraudAlert,
                &[Acknowledge],
            ),
            ItemKind::AtRisk => (
                "Orders at risk",
                "order_at_risk",
                AlertKind::OrderAtRisk,
                &[Acknowledge],
            ),
            ItemKind::Mismatch => (
                "Payments that are not their intent's",
                "payment_mismatch",
                AlertKind::DeadJobs,
                &[Retry],
            ),
            ItemKind::DeadJobs => (
                "Dead jobs, by cause",
                "dead_jobs",
                AlertKind::DeadJobs,
                &[Retry],
            ),
            ItemKind::GaveUp => (
                "Events that gave up at a destination",
                "events_given_up",
                AlertKind::EventsWaiting,
                &[Redeliver],
            ),
            ItemKind::Missed => (
                "Notifications the platform never sent",
                "missed_notifications",
                AlertKind::MissedNotifications,
                &[Acknowledge],
            ),
            ItemKind::DestinationDisabled => (
                "Destinations that need you",
                "destination_disabled",
                AlertKind::DestinationFailing,
                &[Enable],
            ),
            ItemKind::DestinationFailing => (
                "Destinations that need you",
                "destination_failing",
                AlertKind::DestinationFailing,
                &[],
            ),
        };
        KindSpec {
            heading,
            gauge,
            alert,
            actions,
        }
    }

    pub fn severity(self) -> Severity {
        self.spec().alert.severity()
    }

    pub fn offers(self, action: ItemAction) -> bool {
        self.spec().actions.contains(&action)
    }
}

/// An item's key, typed; its text (`Display`, `ItemKey::parse`) is the
/// one acknowledgements and the audit keep.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ItemKey {
    Review(i64),
    Hold(i64),
    /// The decision that released the order (its id).
    AfterRelease(i64),
    AtRisk {
        account: String,
        order: String,
    },
    Job(i64),
    /// Dead jobs of one cause, endpoint and hour (its start, unix ms).
    JobGroup {
        class: String,
        endpoint: String,
        hour: i64,
    },
    Event(String),
    Missed(i64),
    Destination(String),
}

/// A key's text that is no item's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no item has the key {0:?}")]
pub struct NotAnItem(pub String);

/// Keys longer than this are no item's (a bound on outside text).
const KEY_MAX: usize = 300;

impl ItemKey {
    pub fn parse(text: &str) -> Result<ItemKey, NotAnItem> {
        let bad = || NotAnItem(text.chars().take(80).collect());
        if text.len() > KEY_MAX {
            return Err(bad());
        }
        let (prefix, rest) = text.split_once(':').ok_or_else(bad)?;
        let number = || rest.parse::<i64>().map_err(|_| bad());
        let named = || {
            (!rest.is_empty() && !rest.chars().any(char::is_control))
                .then(|| rest.to_string())
                .ok_or_else(bad)
        };
        Ok(match prefix {
            "fraud_review" => ItemKey::Review(number()?),
            "hold" => ItemKey::Hold(number()?),
            "after_release" => ItemKey::AfterRelease(number()?),
            "job" => ItemKey::Job(number()?),
            "missed" => ItemKey::Missed(number()?),
            "event" => ItemKey::Event(named()?),
            "destination" => ItemKey::Destination(named()?),
            "at_risk" => {
                let (account, order) = rest.split_once(':').ok_or_else(bad)?;
                if account.is_empty() || order.is_empty() {
                    return Err(bad());
                }
                ItemKey::AtRisk {
                    account: account.into(),
                    order: order.into(),
                }
            }
            "job_group" => {
                // The class may hold a space ("server error 500"), never
                // a slash; the endpoint neither.
                let mut parts = rest.rsplitn(3, '/');
                let hour = parts.next().and_then(|h| h.parse().ok()).ok_or_else(bad)?;
                let endpoint = parts.next().ok_or_else(bad)?.to_string();
                let class = parts.next().ok_or_else(bad)?.to_string();
                ItemKey::JobGroup {
                    class,
                    endpoint,
                    hour,
                }
            }
            _ => return Err(bad()),
        })
    }

    /// The kind an item of this key is; a job's is a mismatch (a dead
    /// job of any other cause is listed in its group).
    pub fn kind(&self) -> ItemKind {
        match self {
            ItemKey::Review(_) => ItemKind::Review,
            ItemKey::Hold(_) => ItemKind::Hold,
            ItemKey::AfterRelease(_) => ItemKind::AfterRelease,
            ItemKey::AtRisk { .. } => ItemKind::AtRisk,
            ItemKey::Job(_) => ItemKind::Mismatch,
            ItemKey::JobGroup { .. } => ItemKind::DeadJobs,
            ItemKey::Event(_) => ItemKind::GaveUp,
            ItemKey::Missed(_) => ItemKind::Missed,
            ItemKey::Destination(_) => ItemKind::DestinationDisabled,
        }
    }

    /// The account and merchant order the key names, when it names them.
    pub fn order(&self) -> Option<(&str, &str)> {
        match self {
            ItemKey::AtRisk { account, order } => Some((account, order)),
            _ => None,
        }
    }
}

impl fmt::Display for ItemKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemKey::Review(id) => write!(f, "fraud_review:{id}"),
            ItemKey::Hold(id) => write!(f, "hold:{id}"),
            ItemKey::AfterRelease(id) => write!(f, "after_release:{id}"),
            ItemKey::AtRisk { account, order } => write!(f, "at_risk:{account}:{order}"),
            ItemKey::Job(id) => write!(f, "job:{id}"),
            ItemKey::JobGroup {
                class,
                endpoint,
                hour,
            } => write!(f, "job_group:{class}/{endpoint}/{hour}"),
            ItemKey::Event(id) => write!(f, "event:{id}"),
            ItemKey::Missed(id) => write!(f, "missed:{id}"),
            ItemKey::Destination(name) => write!(f, "destination:{name}"),
        }
    }
}

impl serde::Serialize for ItemKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One thing that needs a person, as the inbox, the CLI and the API list
/// it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Item {
    #[serde(serialize_with = "kind_text")]
    pub kind: ItemKind,
    pub key: ItemKey,
    pub account: Option<String>,
    /// The merchant order it is about, when it is about one.
    pub order: Option<String>,
    /// What it is about (`merchant_order:12`, `job:7`, a destination).
    pub subject: String,
    /// One line for a person.
    pub text: String,
    /// What shows it is so (the error, the amount, when), one per line.
    pub evidence: Vec<String>,
    /// The console page that shows it.
    pub path: String,
    /// How many it stands for (a group of dead jobs); 1 otherwise.
    pub count: usize,
    #[serde(serialize_with = "actions_text")]
    pub actions: Vec<ItemAction>,
}

fn kind_text<S: serde::Serializer>(k: &ItemKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(k.as_str())
}

fn actions_text<S: serde::Serializer>(a: &[ItemAction], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(a.iter().map(|a| a.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_as_they_are_written() {
        let keys = [
            ItemKey::Review(12),
            ItemKey::Hold(3),
            ItemKey::AfterRelease(9),
            ItemKey::AtRisk {
                account: "default".into(),
                order: "123".into(),
            },
            ItemKey::Job(7),
            ItemKey::JobGroup {
                class: "server error 500".into(),
                endpoint: "payment".into(),
                hour: 1_764_000_000_000,
            },
            ItemKey::Event("evt_1".into()),
            ItemKey::Missed(4),
            ItemKey::Destination("erp".into()),
        ];
        for k in keys {
            assert_eq!(ItemKey::parse(&k.to_string()), Ok(k.clone()), "{k}");
        }
        assert_eq!(
            ItemKey::parse("at_risk:shop:77").map(|k| k.to_string()),
            Ok("at_risk:shop:77".to_string())
        );
    }

    #[test]
    fn what_is_no_item_is_refused() {
        for text in [
            "",
            "missed:",
            "missed:x",
            "at_risk:default",
            "at_risk::1",
            "unknown:1",
            "job_group:x/1",
            "event:a\nb",
        ] {
            assert!(ItemKey::parse(text).is_err(), "{text:?}");
        }
        assert!(ItemKey::parse(&format!("event:{}", "e".repeat(400))).is_err());
    }

    #[test]
    fn each_kind_says_its_gauge_alert_and_actions_once() {
        let mut gauges: Vec<_> = ItemKind::all().map(|k| k.spec().gauge).collect();
        gauges.sort_unstable();
        gauges.dedup();
        assert_eq!(gauges.len(), ItemKind::all().count());
        assert!(ItemKind::AtRisk.offers(ItemAction::Acknowledge));
        assert!(!ItemKind::DeadJobs.offers(ItemAction::Acknowledge));
        assert_eq!(ItemKind::Review.severity(), Severity::Critical);
        assert_eq!(ItemKind::Missed.severity(), Severity::Warning);
        assert_eq!(
            ItemKey::parse("missed:4").map(|k| k.kind()),
            Ok(ItemKind::Missed)
        );
    }
}
