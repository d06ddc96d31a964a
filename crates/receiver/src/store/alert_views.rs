//! What the alerter writes and reads: one round's
//! incidents opened, told and resolved, and the counts of what needs a
//! person that `/metrics` shows. Backend-neutral, as `views`.

use crate::domain::attention::{AlertKind, Incident};

/// One round of the alerter, recorded in one transaction.
#[derive(Debug, Clone, Default)]
pub struct IncidentRound {
    pub now: i64,
    /// New incidents (told now, or waiting for a digest).
    pub opened: Vec<Incident>,
    /// Open incidents whose opening goes out now.
    pub notified: Vec<(AlertKind, String)>,
    /// Incidents that no longer stand.
    pub resolved: Vec<(AlertKind, String)>,
    /// Resolved incidents older than this (unix ms) are forgotten.
    pub forget_before: i64,
}

/// What needs a person now, counted (the inbox's kinds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttentionCounts {
    pub held_reviews: i64,
    pub released_before_fraud_alert: i64,
    pub at_risk: i64,
    pub dead_jobs: i64,
    pub events_given_up: i64,
    /// Changes found missed and not acknowledged.
    pub missed: i64,
}
