//! What an operator reads (admin API, status page, CLI): deliveries, jobs,
//! merchant orders, events, fraud reviews, health and counts, as plain
//! serialisable values. Backend-neutral.

use serde::Serialize;
use serde_json::Value;

pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 500;

/// A listing's limit as asked (0: the default), capped.
pub(crate) fn clamp(limit: usize) -> i64 {
    if limit == 0 {
        DEFAULT_LIMIT as i64
    } else {
        limit.min(MAX_LIMIT) as i64
    }
}

#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    pub account: Option<String>,
    pub kind: Option<String>,
    pub topic: Option<String>,
    /// Unix milliseconds.
    pub since: Option<i64>,
    /// Only deliveries older than this id (the next page).
    pub before: Option<i64>,
    pub limit: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeliverySummary {
    pub id: i64,
    pub received_at: String,
    pub account: String,
    pub kind: &'static str,
    pub topic: String,
    pub resource_id: String,
    pub duplicate_of: Option<i64>,
    pub signature: &'static str,
    /// `None`: a topic not acted on.
    pub job_key: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub summary: DeliverySummary,
    pub notification_id: Option<String>,
    pub source_news: Option<String>,
    pub remote_addr: String,
    pub query: String,
    pub headers: Value,
    /// The body exactly as received, when it is UTF-8 (else `body_base64`).
    pub body: Option<String>,
    pub body_base64: Option<String>,
    /// Set when the body kept was cut short (nothing reads it again): the
    /// size received, and the SHA-256 (hex) of the whole body.
    pub body_size: Option<i64>,
    pub body_sha256: Option<String>,
    pub job: Option<JobSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobSummary {
    pub id: i64,
    pub account: String,
    pub key: String,
    pub kind: &'static str,
    pub state: &'static str,
    pub attempts: i64,
    pub next_run: Option<String>,
    pub last_error: Option<String>,
    /// What `last_error` is, typed: what the inbox groups by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<crate::domain::Failure>,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobDetail {
    #[serde(flatten)]
    pub summary: JobSummary,
    pub created_at: String,
    pub lease_until: Option<String>,
    pub rerun_requested: bool,
    pub input_delivery_id: Option<i64>,
    pub deliveries: Vec<i64>,
    pub fetches: Vec<FetchView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FetchView {
    pub job_id: i64,
    pub endpoint: String,
    pub resource_id: String,
    /// HTTP status; 0 when no answer came.
    pub status: i64,
    pub elapsed_ms: i64,
    pub at: String,
    /// The resource as the API answered it, where it was kept (reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DecisionView {
    pub id: i64,
    pub subject: String,
    pub key: String,
    pub event_type: String,
    pub event_id: Option<String>,
    pub job_id: Option<i64>,
    pub created_at: String,
    pub data: Option<Value>,
    /// Why the rule decided so, in words, where the store keeps it.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventSummary {
    pub id: String,
    pub account: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub subject: String,
    pub state: &'static str,
    pub attempts: i64,
    pub created_at: String,
    pub delivered_at: Option<String>,
    pub last_error: Option<String>,
    /// Where it stands at each destination it goes to, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<EventAt>,
    /// In a list of one state (what gave up, what waits): the destination
    /// this entry is about; an event that gave up at two is listed twice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listed_at: Option<String>,
}

/// An event's state and attempts at one destination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventAt {
    pub destination: String,
    pub state: &'static str,
    pub attempts: i64,
}

impl EventAt {
    /// "delivered to shop", "gave up at erp", "paused at erp" …
    pub fn words(&self) -> String {
        let d = &self.destination;
        match self.state {
            "delivered" => format!("delivered to {d}"),
            "dead" => format!("gave up at {d}"),
            "pending" if self.attempts > 0 => format!("failing at {d}"),
            state => format!("{state} at {d}"),
        }
    }
}

impl EventSummary {
    /// The event's state at each destination, in words ("delivered to
    /// shop, gave up at erp"); the event's own state where it goes nowhere.
    pub fn where_(&self) -> String {
        if self.destinations.is_empty() {
            return self.state.to_string();
        }
        self.destinations
            .iter()
            .map(EventAt::words)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Its attempts at each destination ("shop 1, erp 3"), or the count.
    pub fn attempts_at(&self) -> String {
        if self.destinations.is_empty() {
            return self.attempts.to_string();
        }
        self.destinations
            .iter()
            .map(|d| format!("{} {}", d.destination, d.attempts))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// This entry's destination, where a list names one.
    pub fn at(&self) -> Option<&EventAt> {
        let name = self.listed_at.as_deref()?;
        self.destinations.iter().find(|d| d.destination == name)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EventDetail {
    #[serde(flatten)]
    pub summary: EventSummary,
    pub job_id: Option<i64>,
    pub next_attempt_at: Option<String>,
    /// The exact JSON that is POSTed.
    pub body: Value,
    /// Where it goes: each destination's own attempts and state.
    pub destinations: Vec<EventDelivery>,
}

/// One event at one destination.
#[derive(Debug, Clone, Serialize)]
pub struct EventDelivery {
    pub destination: String,
    pub state: &'static str,
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub last_error: Option<String>,
    pub delivered_at: Option<String>,
    /// When it last failed, was paused or gave up here (what a recovery
    /// since a time picks by).
    pub failed_at: Option<String>,
}

/// A destination as the console, the admin API, the CLI and `/metrics`
/// see it.
#[derive(Debug, Clone, Serialize)]
pub struct DestinationView {
    pub name: String,
    /// Without credentials or query.
    pub url: Option<String>,
    /// `enabled` or `disabled`.
    pub state: &'static str,
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<String>,
    /// Events waiting for it: pending and paused.
    pub backlog: i64,
    pub paused: i64,
    /// Events it gave up (until recovered).
    pub gave_up: i64,
    /// When the oldest event waiting for it was decided.
    pub oldest_event: Option<String>,
    /// Its age in seconds at the time of reading (0 when none waits).
    pub oldest_seconds: i64,
    /// Every attempt has failed since then.
    pub failing_since: Option<String>,
    /// Since when something here waits for a recovery (the failure's
    /// start, kept after the destination is enabled; cleared by a
    /// recovery).
    pub outage_since: Option<String>,
    /// What a recovery covers when no time is given: the failure's start,
    /// else when it began failing or was disabled.
    pub recover_since: Option<String>,
    pub last_success_at: Option<String>,
    pub recovery: Option<RecoveryView>,
}

/// The last recovery of a destination and how far it got.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryView {
    /// Events that failed, were paused or gave up since then were queued
    /// again.
    pub since: String,
    pub asked_at: String,
    pub queued: i64,
    /// Of the events it covers: sent, still waiting, given up again.
    pub delivered: i64,
    pub waiting: i64,
    pub gave_up: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct OrderView {
    pub account: String,
    /// `merchant_order`, or `platform_order` for an `ORD…` id.
    pub kind: &'static str,
    pub merchant_order_id: String,
    pub total_amount: Option<String>,
    pub paid_amount: Option<String>,
    /// The latest of released, awaiting shipment, blocked, fraud after release.
    pub decision: Option<String>,
    pub released_at: Option<String>,
    pub blocked: bool,
    pub blocked_at: Option<String>,
    pub at_risk_at: Option<String>,
    pub deliveries: Vec<DeliverySummary>,
    pub fetches: Vec<FetchView>,
    /// Every decision about the order, oldest first, each with its reason.
    pub decisions: Vec<DecisionView>,
    pub events: Vec<EventSummary>,
}

/// What `/metrics` reads from the database at scrape time.
#[derive(Debug, Clone, Default)]
pub struct MetricsSnapshot {
    pub jobs: Vec<(&'static str, i64)>,
    pub outbox_backlog: i64,
    /// Age of the oldest pending event, in ms (0 when none).
    pub outbox_oldest_ms: i64,
    /// Each configured destination's backlog, oldest event and state.
    pub destinations: Vec<DestinationView>,
}

/// The health the status page shows: the last API call, and how the
/// merchant's endpoint has been answering.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Health {
    pub last_api_call: Option<FetchView>,
    pub last_delivered_at: Option<String>,
    /// An event that is waiting after failed attempts, and why.
    pub merchant_failing: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewView {
    pub id: i64,
    pub account: String,
    pub state: &'static str,
    /// Which review of the alert's key (a later alert opens the next).
    pub round: u32,
    /// The alert's subject, which names its block.
    pub alert: String,
    /// The delivery it covers.
    pub delivery_id: Option<i64>,
    pub merchant_order_id: Option<String>,
    pub payment_id: Option<String>,
    pub reason: String,
    pub job_key: String,
    pub created_at: String,
    pub decided_at: Option<String>,
}

/// What a person's answer to a fraud review changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Done(Box<ReviewView>),
    NotFound,
    /// Confirmed or dismissed already.
    AlreadyDecided(&'static str),
}

/// Rows deleted per transaction, so a prune never holds the writer long.
pub const PRUNE_BATCH: usize = 2000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    pub deliveries: usize,
    pub jobs: usize,
    pub events: usize,
    pub fetches: usize,
}

impl Pruned {
    pub fn total(&self) -> usize {
        self.deliveries + self.jobs + self.events + self.fetches
    }

    pub fn add(&mut self, other: Pruned) {
        self.deliveries += other.deliveries;
        self.jobs += other.jobs;
        self.events += other.events;
        self.fetches += other.fetches;
    }
}

/// What an id names when nothing else says (the subject and endpoint its
/// history is kept under): `ORD…` an order of the Orders API, digits a
/// merchant order, anything else a payment intent.
pub fn order_kind(id: &str) -> &'static str {
    if crate::domain::PlatformOrderId::parse(id).is_ok() {
        "platform_order"
    } else if id.bytes().all(|b| b.is_ascii_digit()) {
        "merchant_order"
    } else {
        "payment_intent"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_says_what_it_names() {
        assert_eq!(order_kind("4945357007"), "merchant_order");
        assert_eq!(
            order_kind("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3"),
            "platform_order"
        );
        assert_eq!(
            order_kind("7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1"),
            "payment_intent"
        );
    }
}
