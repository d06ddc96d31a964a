//! The alerter's tables and reads on PostgreSQL (as SQLite's `alerts.rs`),
//! and its advisory lock: one instance of several tells a person.

use super::PgStore;
use super::reconcile::{Leader, lead};
use crate::domain::attention::{AlertKind, Incident};
use crate::domain::{EventState, JobState, Kind, Review};
use crate::store::StoreError;
use crate::store::alert_views::{AttentionCounts, IncidentRound};

/// The session lock the alerter holds for a round ("ptHn").
const ALERTER_LOCK: i64 = 0x7074_486e;

impl PgStore {
    pub async fn lead_alerts(&self) -> Result<Option<Leader>, StoreError> {
        lead(self.client().await?, ALERTER_LOCK).await
    }

    pub fn commits_failing_for(&self) -> Option<std::time::Duration> {
        self.health.failing_for()
    }

    pub async fn open_incidents(&self) -> Result<Vec<Incident>, StoreError> {
        self.client()
            .await?
            .query(
                "SELECT kind, item, text, path, opened_at, notified_at FROM incidents
                 WHERE resolved_at IS NULL ORDER BY opened_at, id",
                &[],
            )
            .await?
            .iter()
            .map(|r| {
                Ok(Incident {
                    kind: r.try_get(0)?,
                    key: r.try_get(1)?,
                    text: r.try_get(2)?,
                    path: r.try_get(3)?,
                    opened_at: r.try_get(4)?,
                    notified_at: r.try_get(5)?,
                })
            })
            .collect()
    }

    pub async fn last_alerts_sent(&self) -> Result<Vec<(AlertKind, i64)>, StoreError> {
        self.client()
            .await?
            .query(
                "SELECT kind, max(notified_at) FROM incidents
                 WHERE notified_at IS NOT NULL GROUP BY kind",
                &[],
            )
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    pub async fn record_incidents(&self, round: IncidentRound) -> Result<(), StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        let open = tx
            .prepare(
                "INSERT INTO incidents (kind, item, text, path, opened_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (kind, item) WHERE resolved_at IS NULL DO NOTHING",
            )
            .await?;
        for i in &round.opened {
            tx.execute(&open, &[&i.kind, &i.key, &i.text, &i.path, &i.opened_at])
                .await?;
        }
        let told = tx
            .prepare(
                "UPDATE incidents SET notified_at = $3
                 WHERE kind = $1 AND item = $2 AND resolved_at IS NULL AND notified_at IS NULL",
            )
            .await?;
        for (kind, key) in &round.notified {
            tx.execute(&told, &[kind, key, &round.now]).await?;
        }
        let resolve = tx
            .prepare(
                "UPDATE incidents SET resolved_at = $3
                 WHERE kind = $1 AND item = $2 AND resolved_at IS NULL",
            )
            .await?;
        for (kind, key) in &round.resolved {
            tx.execute(&resolve, &[kind, key, &round.now]).await?;
        }
        tx.execute(
            "DELETE FROM incidents WHERE resolved_at < $1",
            &[&round.forget_before],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn attention_counts(&self) -> Result<AttentionCounts, StoreError> {
        let c = self.client().await?;
        // The kind as a literal, so that a generic plan can use the
        // partial index of missed changes.
        let r = c
            .query_one(
                &format!(
                    "SELECT
                   (SELECT count(*) FROM fraud_reviews WHERE state = $1),
                   (SELECT count(*) FROM decisions d
                     WHERE d.event_type = 'order.fraud_after_release' AND NOT EXISTS (
                       SELECT 1 FROM acknowledgements a WHERE a.item = 'after_release:' || d.id)),
                   (SELECT count(*) FROM orders o
                     WHERE o.at_risk_at IS NOT NULL AND NOT EXISTS (
                       SELECT 1 FROM acknowledgements a
                       WHERE a.item = 'at_risk:' || o.account || ':' || o.order_id)),
                   (SELECT count(*) FROM jobs WHERE state = $2),
                   (SELECT count(*) FROM events WHERE state = $3),
                   (SELECT count(*) FROM deliveries d
                     WHERE d.kind = {} AND NOT EXISTS (
                       SELECT 1 FROM acknowledgements a WHERE a.item = 'missed:' || d.id))",
                    Kind::Reconcile as i16
                ),
                &[&Review::Held, &JobState::Dead, &EventState::Dead],
            )
            .await?;
        Ok(AttentionCounts {
            held_reviews: r.try_get(0)?,
            released_before_fraud_alert: r.try_get(1)?,
            at_risk: r.try_get(2)?,
            dead_jobs: r.try_get(3)?,
            events_given_up: r.try_get(4)?,
            missed: r.try_get(5)?,
        })
    }

    pub async fn last_heard(&self, after: i64) -> Result<Vec<(String, i64)>, StoreError> {
        self.client()
            .await?
            .query(
                "SELECT account, max(received_at) FROM deliveries
                 WHERE received_at > $1 AND kind <> $2 GROUP BY account",
                &[&after, &Kind::Reconcile],
            )
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }
}
