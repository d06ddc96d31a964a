//! What the decision kernel (`rules::kernel::decide`) is given and what it
//! answers. The store reads the context inside its deciding transaction,
//! calls the kernel it was opened with, and writes what the verdict says;
//! it decides nothing itself.

use std::sync::Arc;

use super::decision::{Decision, EventType, GuardFacts, Mark};
use super::states::EventState;

/// What the deciding transaction knows when a decision comes to it.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    pub account: &'a str,
    /// Unix ms.
    pub now: i64,
    /// The subject's recorded final outcome, read for a final decision.
    pub recorded_final: Option<EventType>,
    pub facts: &'a GuardFacts,
}

/// What to write for one decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A guard does not hold: nothing is written (it may be taken later).
    Skip,
    /// The same final outcome is recorded already: nothing to do.
    Same,
    /// Contradicts the recorded final outcome: the conflict is recorded
    /// under `key`, with no event, and nothing else changes.
    Conflict {
        key: String,
        reason: String,
    },
    Record(Record),
}

/// A decision to record, once per (account, subject, key): if the key is
/// taken already, nothing of it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub key: String,
    pub event_type: EventType,
    /// The event to queue with it; `None` for what is recorded for a person
    /// but never told (a rejected fraud alert).
    pub event: Option<NewEvent>,
    pub marks: Vec<Mark>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub id: String,
    /// The envelope as sent: `{"id","type","created_at","account","data"}`.
    pub body: String,
    /// `pending` when it goes to a destination, else `stored`.
    pub state: EventState,
    /// The destinations it is queued for, one queue row each (none:
    /// only stored and listed).
    pub destinations: Vec<String>,
}

/// One destination as the routing reads it: its name and what it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub destination: String,
    /// The event types it takes: its `types` patterns, resolved against
    /// every type there is when the configuration is read.
    pub types: Vec<EventType>,
    /// The accounts whose events it takes; `None`: every account.
    pub accounts: Option<Vec<String>>,
}

/// What becomes of the events decided, fixed when the store opens: the
/// routing table of the destinations (`rules::routing` reads it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventPolicy {
    pub routes: Arc<[Route]>,
}

impl EventPolicy {
    pub fn new(routes: Vec<Route>) -> EventPolicy {
        EventPolicy {
            routes: routes.into(),
        }
    }

    /// Whether any event can go anywhere (else every one is only stored).
    pub fn delivers(&self) -> bool {
        !self.routes.is_empty()
    }
}

/// The kernel a store is opened with (`rules::kernel::decide`).
pub type Kernel = fn(&Decision, &Context<'_>, &EventPolicy) -> Verdict;

/// A fraud review a person dismissed, as read in the dismissing
/// transaction.
#[derive(Debug, Clone)]
pub struct DismissedReview {
    pub review_id: i64,
    /// The alert's subject, which names its block.
    pub alert: String,
    pub merchant_order: Option<String>,
    pub payment: Option<String>,
    pub reason: String,
}

/// What a store decides with, fixed when it opens: the rules' pure
/// functions and the event policy. The store calls them inside its
/// transactions and writes what they answer. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DecisionRules {
    pub decide: Kernel,
    /// `fraud_alert.dismissed` for a dismissed review.
    pub dismissal: fn(&DismissedReview) -> Decision,
    /// What a hold's kind decides when a person answers it.
    pub holds: super::holds::OnDecided,
    /// The destinations an event of a type and account goes to (an event
    /// sent again goes where it would go now).
    pub route: fn(&EventPolicy, &str, EventType) -> Vec<String>,
    pub events: EventPolicy,
}
