//! The alerter's part of `Store`: incidents (open, told, resolved), the
//! counts of what needs a person, when each account last heard from the
//! platform, how long commits have failed, and the lock that lets one
//! instance of several tell a person.

use std::time::Duration;

use super::alert_views::{AttentionCounts, IncidentRound};
use super::{Backend, Leadership, Store, StoreError};
use crate::domain::attention::{AlertKind, Incident};

impl Store {
    /// Incidents not resolved, oldest first.
    pub async fn open_incidents(&self) -> Result<Vec<Incident>, StoreError> {
        on!(self, b => b.open_incidents().await)
    }

    /// When an opening of each kind was last sent (unix ms).
    pub async fn last_alerts_sent(&self) -> Result<Vec<(AlertKind, i64)>, StoreError> {
        on!(self, b => b.last_alerts_sent().await)
    }

    /// Records a round: what opened, what was told, what resolved; in one
    /// transaction, so a round is told once or not at all.
    pub async fn record_incidents(&self, round: IncidentRound) -> Result<(), StoreError> {
        if round.opened.is_empty() && round.notified.is_empty() && round.resolved.is_empty() {
            return Ok(());
        }
        on!(self, b => b.record_incidents(round).await)
    }

    /// What needs a person, counted, for `/metrics`.
    pub async fn attention_counts(&self) -> Result<AttentionCounts, StoreError> {
        on!(self, b => b.attention_counts().await)
    }

    /// Each account's latest notification received after `after` (unix
    /// ms; reconciliation's own records left out), read by the time index
    /// from `after` on.
    pub async fn last_heard(&self, after: i64) -> Result<Vec<(String, i64)>, StoreError> {
        on!(self, b => b.last_heard(after).await)
    }

    /// How long this process's commits have failed with none succeeding
    /// (`None`: the last succeeded).
    pub fn commits_failing_for(&self) -> Option<Duration> {
        on!(self, b => b.commits_failing_for())
    }

    /// The alerter's leadership: always on SQLite (one process owns the
    /// file); on PostgreSQL an advisory lock of its own, `None` while
    /// another instance holds it.
    pub async fn lead_alerts(&self) -> Result<Option<Leadership>, StoreError> {
        Ok(match &self.inner.backend {
            Backend::Sqlite(_) => Some(Leadership(None)),
            Backend::Postgres(b) => b.lead_alerts().await?.map(|l| Leadership(Some(l))),
        })
    }
}
