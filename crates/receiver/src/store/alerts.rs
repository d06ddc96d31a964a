//! The alerter's part of `Store`: incidents (open, told, resolved), the
//! counts of what needs a person, when each account last heard from the
//! platform, how long commits have failed, and the lock that lets one
//! instance of several tell a person.

use std::time::Duration;

use super::alert_views::{AttentionCounts, IncidentRound};
use super::sql::{Conn, sql};
use super::{Backend, Leadership, Store, StoreError};
use crate::domain::attention::{AlertKind, Incident};
use crate::domain::{EventState, JobState, Kind, Review};

impl Store {
    /// Incidents not resolved, oldest first.
    pub async fn open_incidents(&self) -> Result<Vec<Incident>, StoreError> {
        self.read(|c| Box::pin(open_incidents(c))).await
    }

    /// When an opening of each kind was last sent (unix ms).
    pub async fn last_alerts_sent(&self) -> Result<Vec<(AlertKind, i64)>, StoreError> {
        self.read(|c| {
            Box::pin(c.query(
                sql!(
                    "SELECT kind, max(notified_at) FROM incidents
                     WHERE notified_at IS NOT NULL GROUP BY kind"
                ),
                &[],
                |r| Ok((r.get(0)?, r.get(1)?)),
            ))
        })
        .await
    }

    /// Records a round: what opened, what was told, what resolved; in one
    /// transaction, so a round is told once or not at all.
    pub async fn record_incidents(&self, round: IncidentRound) -> Result<(), StoreError> {
        if round.opened.is_empty() && round.notified.is_empty() && round.resolved.is_empty() {
            return Ok(());
        }
        self.write(move |c| {
            let round = round.clone();
            Box::pin(async move { record(c, &round).await })
        })
        .await
    }

    /// What needs a person, counted, for `/metrics`.
    pub async fn attention_counts(&self) -> Result<AttentionCounts, StoreError> {
        self.read(|c| Box::pin(counts(c))).await
    }

    /// Each account's latest notification received after `after` (unix
    /// ms; reconciliation's own records left out), read by the time index
    /// from `after` on.
    pub async fn last_heard(&self, after: i64) -> Result<Vec<(String, i64)>, StoreError> {
        self.read(move |c| {
            Box::pin(async move {
                let index = c.indexed_by("deliveries_received_at");
                c.query(
                    &format!(
                        "SELECT account, max(received_at) FROM deliveries {index}
                         WHERE received_at > $1 AND kind <> $2 GROUP BY account"
                    ),
                    &[&after, &Kind::Reconcile],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .await
            })
        })
        .await
    }

    /// How long this process's commits have failed with none succeeding
    /// (`None`: the last succeeded).
    pub fn commits_failing_for(&self) -> Option<Duration> {
        match &self.inner.backend {
            Backend::Sqlite(b) => b.commits_failing_for(),
            Backend::Postgres(b) => b.commits_failing_for(),
        }
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

async fn record(c: &Conn<'_>, round: &IncidentRound) -> Result<(), StoreError> {
    for i in &round.opened {
        c.execute(
            sql!(
                "INSERT INTO incidents (kind, item, text, path, opened_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (kind, item) WHERE resolved_at IS NULL DO NOTHING"
            ),
            &[&i.kind, &i.key, &i.text, &i.path, &i.opened_at],
        )
        .await?;
    }
    for (kind, key) in &round.notified {
        c.execute(
            sql!(
                "UPDATE incidents SET notified_at = $3
                 WHERE kind = $1 AND item = $2 AND resolved_at IS NULL AND notified_at IS NULL"
            ),
            &[kind, key, &round.now],
        )
        .await?;
    }
    for (kind, key) in &round.resolved {
        c.execute(
            sql!(
                "UPDATE incidents SET resolved_at = $3
                 WHERE kind = $1 AND item = $2 AND resolved_at IS NULL"
            ),
            &[kind, key, &round.now],
        )
        .await?;
    }
    c.execute(
        sql!("DELETE FROM incidents WHERE resolved_at < $1"),
        &[&round.forget_before],
    )
    .await?;
    Ok(())
}

async fn open_incidents(c: &Conn<'_>) -> Result<Vec<Incident>, StoreError> {
    let index = c.indexed_by("incidents_open");
    c.query(
        &format!(
            "SELECT kind, item, text, path, opened_at, notified_at FROM incidents {index}
             WHERE resolved_at IS NULL ORDER BY opened_at, id"
        ),
        &[],
        |r| {
            Ok(Incident {
                kind: r.get(0)?,
                key: r.get(1)?,
                text: r.get(2)?,
                path: r.get(3)?,
                opened_at: r.get(4)?,
                notified_at: r.get(5)?,
            })
        },
    )
    .await
}

/// Every count in one statement, each by its index. The kind of missed
/// changes is a literal: with a parameter neither planner can use the
/// partial index.
async fn counts(c: &Conn<'_>) -> Result<AttentionCounts, StoreError> {
    let after_release = c.indexed_by("decisions_after_release");
    let at_risk = c.indexed_by("orders_at_risk");
    let missed = c.indexed_by("deliveries_missed");
    let reconcile = Kind::Reconcile as i16;
    c.query_one(
        &format!(
            "SELECT
               (SELECT count(*) FROM fraud_reviews WHERE state = $1),
               (SELECT count(*) FROM decisions d {after_release}
                 WHERE d.event_type = 'order.fraud_after_release' AND NOT EXISTS (
                   SELECT 1 FROM acknowledgements a WHERE a.item = 'after_release:' || d.id)),
               (SELECT count(*) FROM orders o {at_risk}
                 WHERE o.at_risk_at IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM acknowledgements a
                   WHERE a.item = 'at_risk:' || o.account || ':' || o.order_id)),
               (SELECT count(*) FROM jobs WHERE state = $2),
               (SELECT count(*) FROM outbox WHERE state = $3),
               (SELECT count(*) FROM deliveries d {missed}
                 WHERE d.kind = {reconcile} AND NOT EXISTS (
                   SELECT 1 FROM acknowledgements a WHERE a.item = 'missed:' || d.id))"
        ),
        &[&Review::Held, &JobState::Dead, &EventState::Dead],
        |r| {
            Ok(AttentionCounts {
                held_reviews: r.get(0)?,
                released_before_fraud_alert: r.get(1)?,
                at_risk: r.get(2)?,
                dead_jobs: r.get(3)?,
                events_given_up: r.get(4)?,
                missed: r.get(5)?,
            })
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::store::sql::run_sqlite;
    use crate::store::sqlite::test_connection;

    /// Each count is of its kind, and an acknowledged item is no longer
    /// counted (SQLite; the same text runs on PostgreSQL in `tests/it`).
    #[test]
    fn what_needs_a_person_is_counted_until_acknowledged() {
        let dir = tempfile::tempdir().unwrap();
        let conn = test_connection(&dir.path().join("a.db"));
        conn.execute_batch(&format!(
            "INSERT INTO orders (account, order_id, at_risk_at, updated_at)
                 VALUES ('a', '1', 5, 5), ('a', '2', 6, 6), ('a', '3', NULL, 6);
             INSERT INTO jobs (account, job_key, kind, resource_id, state, run_at,
                               created_at, updated_at)
                 VALUES ('a', 'k1', 1, '9', {dead}, 1, 1, 1), ('a', 'k2', 1, '8', {done}, 1, 1, 1);
             INSERT INTO deliveries (received_at, account, kind, topic, resource_id, query,
                                     headers, remote_addr, fingerprint, signature)
                 VALUES (1, 'a', {reconcile}, 'payment', '7', '', '{{}}', '', x'00', 0),
                        (2, 'a', {reconcile}, 'payment', '6', '', '{{}}', '', x'01', 0),
                        (3, 'a', {ipn}, 'payment', '5', '', '{{}}', '', x'02', 0);",
            dead = JobState::Dead as i16,
            done = JobState::Done as i16,
            reconcile = Kind::Reconcile as i16,
            ipn = Kind::Ipn as i16,
        ))
        .unwrap();
        let conn = Mutex::new(conn);
        let count = || run_sqlite(&conn, |c| Box::pin(counts(c))).unwrap();
        let before = count();
        assert_eq!((before.at_risk, before.dead_jobs, before.missed), (2, 1, 2));
        let missed: i64 = conn
            .lock()
            .unwrap()
            .query_row("SELECT min(id) FROM deliveries WHERE kind = 4", [], |r| {
                r.get(0)
            })
            .unwrap();
        conn.lock()
            .unwrap()
            .execute_batch(&format!(
                "INSERT INTO acknowledgements (item, actor, at)
                 VALUES ('at_risk:a:1', 'ana', 9), ('missed:{missed}', 'ana', 9)"
            ))
            .unwrap();
        let after = count();
        assert_eq!((after.at_risk, after.dead_jobs, after.missed), (1, 1, 1));
    }
}
