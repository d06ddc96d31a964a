//! What the operator console writes and reads: operators and sessions,
//! the audit, the inbox's items, an order's timeline, paged lists, and the
//! health charts' samples. Backend-neutral, as `views`.

use serde::Serialize;
use serde_json::Value;

use super::views::{
    DecisionView, DeliverySummary, EventSummary, FetchView, JobSummary, ReviewView,
};
use crate::domain::{Action, AuditOutcome, Via};

/// Rows a bounded listing scans at most for one page when a filter its
/// index cannot seek is given: a page that finds fewer says where it
/// stopped, and the next one goes on from there.
pub const SCAN_WINDOW: i64 = 20_000;

#[derive(Debug, Clone, Serialize)]
pub struct OperatorView {
    pub name: String,
    pub created_at: String,
    pub updated_at: String,
    /// Sessions open now.
    pub sessions: i64,
}

/// A signed-in person's session, as stored.
#[derive(Debug, Clone)]
pub struct Session {
    pub operator: String,
    pub csrf: String,
    pub seen_at: i64,
}

/// An action about to run, for the audit.
#[derive(Debug, Clone)]
pub struct NewAudit {
    pub at: i64,
    pub actor: String,
    pub via: Via,
    pub action: Action,
    /// What it acts on: `fraud_review:12`, `job:5`, `event:evt_…`, …
    pub item: String,
    pub account: Option<String>,
    /// The order it concerns, so that the order's timeline shows it.
    pub order_id: Option<String>,
    /// What was asked, in words.
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AuditView {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub via: &'static str,
    pub action: &'static str,
    pub item: String,
    pub account: Option<String>,
    pub order_id: Option<String>,
    pub detail: String,
    pub outcome: &'static str,
    pub result: Option<String>,
}

impl AuditView {
    pub fn outcome(&self) -> Option<AuditOutcome> {
        AuditOutcome::parse(self.outcome)
    }
}

#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Only entries about this item.
    pub item: Option<String>,
    pub actor: Option<String>,
    /// Leave out the messages sent to `[[alerts]]` channels.
    pub without_alerts: bool,
    /// Only entries older than this id (the next page).
    pub before: Option<i64>,
    pub limit: usize,
}

/// One page of a listing, and where the next one starts (`None`: this
/// was the last).
#[derive(Debug, Clone, Serialize)]
pub struct Page<T> {
    pub rows: Vec<T>,
    pub next: Option<String>,
}

/// What a merchant order is known to be, from the store's `orders` row.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OrderState {
    pub total_amount: Option<String>,
    pub paid_amount: Option<String>,
    pub released_at: Option<String>,
    pub blocked_at: Option<String>,
    pub at_risk_at: Option<String>,
}

/// A payment as its latest `payment.updated` event told it.
#[derive(Debug, Clone, Serialize)]
pub struct PaymentSeen {
    pub status: String,
    pub amount: Option<String>,
    pub currency: Option<String>,
    pub at: String,
}

/// A fraud review with the evidence a person decides on.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewDetail {
    pub review: ReviewView,
    /// The alert's notifications, oldest first.
    pub notifications: Vec<DeliverySummary>,
    /// The payment's last status and amount, if a read of it was told.
    pub payment: Option<PaymentSeen>,
    pub order: Option<OrderState>,
}

/// An order that needs a person's eyes (at risk, released before a fraud
/// alert), until acknowledged.
#[derive(Debug, Clone, Serialize)]
pub struct Flagged {
    pub account: String,
    pub order_id: String,
    pub at: String,
    /// What to acknowledge: `at_risk:ACCOUNT:ORDER`, `after_release:ID`.
    pub item: String,
    /// The event's data, for the evidence.
    pub data: Option<Value>,
}

/// A change the sweeper found with no notification, not acknowledged.
#[derive(Debug, Clone, Serialize)]
pub struct Missed {
    pub delivery: DeliverySummary,
    /// The job it fed, now.
    pub job_state: Option<&'static str>,
}

/// Everything that needs a person, newest first within each kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Inbox {
    pub reviews: Vec<ReviewDetail>,
    pub after_release: Vec<Flagged>,
    pub at_risk: Vec<Flagged>,
    /// Every dead job (up to a bound); the console groups them by cause.
    pub dead_jobs: Vec<JobSummary>,
    pub dead_events: Vec<EventSummary>,
    pub missed: Vec<Missed>,
    /// Destinations disabled, or failing every attempt.
    pub destinations: Vec<super::views::DestinationView>,
}

/// One decision as recorded, with its event's data.

#[derive(Debug, Clone, Serialize)]
pub struct AttemptView {
    /// Where it was sent: each destination counts its own attempts.
    pub destination: String,
    pub attempt: i64,
    pub at: String,
    pub state: &'static str,
    pub error: Option<String>,
}

/// A dead run of a job, kept when it ran again.
#[derive(Debug, Clone, Serialize)]
pub struct DeathView {
    pub died_at: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub revived_at: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Entry {
    Notification(DeliverySummary),
    ApiCall(FetchView),
    Decision(DecisionView),
    Event {
        event: EventSummary,
        attempts: Vec<AttemptView>,
    },
    Review(ReviewView),
    Action(AuditView),
}

/// An order's story, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub account: String,
    /// `merchant_order`, `platform_order`, `payment_intent` or `payment`.
    pub kind: &'static str,
    pub id: String,
    pub state: Option<OrderState>,
    /// `(unix ms, entry)`, oldest first.
    pub entries: Vec<(i64, Entry)>,
}

/// What a search found: an order (or intent, or payment) to open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    pub account: String,
    pub kind: &'static str,
    pub id: String,
    /// How the text matched: `merchant order`, `payment`, `external reference` …
    pub matched: &'static str,
}

/// The states an order list is filtered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum OrderList {
    Released,
    AwaitingShipment,
    Blocked,
    AtRisk,
    FraudAfterRelease,
    /// Every order, the latest changed first.
    Any,
}

impl OrderList {
    pub const ALL: [OrderList; 5] = [
        OrderList::Released,
        OrderList::AwaitingShipment,
        OrderList::Blocked,
        OrderList::AtRisk,
        OrderList::FraudAfterRelease,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OrderList::Released => "released",
            OrderList::AwaitingShipment => "awaiting_shipment",
            OrderList::Blocked => "blocked",
            OrderList::AtRisk => "at_risk",
            OrderList::FraudAfterRelease => "fraud_after_release",
            OrderList::Any => "any",
        }
    }

    /// A state's name, or the command line's name of one
    /// (`released_before_fraud_alert`).
    pub fn parse(s: &str) -> Option<OrderList> {
        match s {
            "released_before_fraud_alert" => Some(OrderList::FraudAfterRelease),
            "any" => Some(OrderList::Any),
            _ => OrderList::ALL.into_iter().find(|l| l.as_str() == s),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct OrderRow {
    pub account: String,
    pub order_id: String,
    /// When it entered the listed state.
    pub at: String,
    pub total_amount: Option<String>,
    pub paid_amount: Option<String>,
}

/// Filters of the job list.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub state: Option<crate::domain::JobState>,
    pub kind: Option<crate::domain::JobKind>,
    pub account: Option<String>,
    pub cursor: Option<String>,
    pub limit: usize,
}

/// Filters of the event list.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// With a state, one entry per destination where the event is in it
    /// (given up at one while another still holds it is listed as dead).
    pub state: Option<crate::domain::EventState>,
    /// Only what is at this destination (with a state).
    pub destination: Option<String>,
    pub event_type: Option<String>,
    pub account: Option<String>,
    pub cursor: Option<String>,
    pub limit: usize,
}

/// One minute's value of one series, from one instance (`""`: the
/// store's own numbers, the same whoever samples them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub minute: i64,
    pub instance: String,
    pub series: String,
    pub value: i64,
}

/// A cursor `A.B` of two numbers (a time and an id).
pub fn parse_cursor(text: &str) -> Option<(i64, i64)> {
    let (a, b) = text.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The `data` of an event's stored envelope.
pub(crate) fn event_data(body: Option<String>) -> Option<Value> {
    let body: Value = serde_json::from_str(&body?).ok()?;
    body.get("data").cloned()
}
