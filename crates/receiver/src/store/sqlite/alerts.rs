//! The alerter's tables and reads on SQLite: incidents, the counts of
//! what needs a person, each account's last notification, and how long
//! the writer's commits have failed.

use rusqlite::{Connection, params};

use super::{SqliteStore, Writes};
use crate::domain::attention::{AlertKind, Incident};
use crate::domain::{EventState, JobState, Kind, Review};
use crate::store::StoreError;
use crate::store::alert_views::{AttentionCounts, IncidentRound};

fn record(c: &Connection, round: &IncidentRound) -> rusqlite::Result<()> {
    let mut open = c.prepare_cached(
        "INSERT INTO incidents (kind, item, text, path, opened_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (kind, item) WHERE resolved_at IS NULL DO NOTHING",
    )?;
    for i in &round.opened {
        open.execute(params![i.kind, i.key, i.text, i.path, i.opened_at])?;
    }
    let mut told = c.prepare_cached(
        "UPDATE incidents SET notified_at = ?3
         WHERE kind = ?1 AND item = ?2 AND resolved_at IS NULL AND notified_at IS NULL",
    )?;
    for (kind, key) in &round.notified {
        told.execute(params![kind, key, round.now])?;
    }
    let mut resolve = c.prepare_cached(
        "UPDATE incidents SET resolved_at = ?3
         WHERE kind = ?1 AND item = ?2 AND resolved_at IS NULL",
    )?;
    for (kind, key) in &round.resolved {
        resolve.execute(params![kind, key, round.now])?;
    }
    c.prepare_cached("DELETE FROM incidents WHERE resolved_at < ?1")?
        .execute([round.forget_before])?;
    Ok(())
}

fn open_incidents(c: &Connection) -> rusqlite::Result<Vec<Incident>> {
    c.prepare_cached(
        "SELECT kind, item, text, path, opened_at, notified_at FROM incidents
         INDEXED BY incidents_open WHERE resolved_at IS NULL ORDER BY opened_at, id",
    )?
    .query_map([], |r| {
        Ok(Incident {
            kind: r.get(0)?,
            key: r.get(1)?,
            text: r.get(2)?,
            path: r.get(3)?,
            opened_at: r.get(4)?,
            notified_at: r.get(5)?,
        })
    })?
    .collect()
}

fn last_sent(c: &Connection) -> rusqlite::Result<Vec<(AlertKind, i64)>> {
    c.prepare_cached(
        "SELECT kind, max(notified_at) FROM incidents
         WHERE notified_at IS NOT NULL GROUP BY kind",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

fn counts(c: &Connection) -> rusqlite::Result<AttentionCounts> {
    let one = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> rusqlite::Result<i64> {
        c.prepare_cached(sql)?.query_row(p, |r| r.get(0))
    };
    Ok(AttentionCounts {
        held_reviews: one(
            "SELECT count(*) FROM fraud_reviews WHERE state = ?1",
            &[&Review::Held],
        )?,
        released_before_fraud_alert: one(
            "SELECT count(*) FROM decisions d INDEXED BY decisions_after_release
             WHERE d.event_type = 'order.fraud_after_release' AND NOT EXISTS (
                 SELECT 1 FROM acknowledgements a WHERE a.item = 'after_release:' || d.id)",
            &[],
        )?,
        at_risk: one(
            "SELECT count(*) FROM orders o INDEXED BY orders_at_risk
             WHERE o.at_risk_at IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM acknowledgements a
                 WHERE a.item = 'at_risk:' || o.account || ':' || o.order_id)",
            &[],
        )?,
        dead_jobs: one(
            "SELECT count(*) FROM jobs WHERE state = ?1",
            &[&JobState::Dead],
        )?,
        events_given_up: one(
            "SELECT count(*) FROM events WHERE state = ?1",
            &[&EventState::Dead],
        )?,
        // The kind as a literal: with a parameter SQLite cannot use the
        // partial index.
        missed: one(
            &format!(
                "SELECT count(*) FROM deliveries INDEXED BY deliveries_missed
                 WHERE kind = {} AND NOT EXISTS (
                     SELECT 1 FROM acknowledgements a WHERE a.item = 'missed:' || deliveries.id)",
                Kind::Reconcile as i16
            ),
            &[],
        )?,
    })
}

fn last_heard(c: &Connection, after: i64) -> rusqlite::Result<Vec<(String, i64)>> {
    c.prepare_cached(
        "SELECT account, max(received_at) FROM deliveries INDEXED BY deliveries_received_at
         WHERE received_at > ?1 AND kind <> ?2 GROUP BY account",
    )?
    .query_map(params![after, Kind::Reconcile], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?
    .collect()
}

impl SqliteStore {
    pub async fn open_incidents(&self) -> Result<Vec<Incident>, StoreError> {
        self.read(open_incidents).await
    }

    pub async fn last_alerts_sent(&self) -> Result<Vec<(AlertKind, i64)>, StoreError> {
        self.read(last_sent).await
    }

    pub async fn record_incidents(&self, round: IncidentRound) -> Result<(), StoreError> {
        self.write(move |c| record(c, &round)).await
    }

    pub async fn attention_counts(&self) -> Result<AttentionCounts, StoreError> {
        self.read(counts).await
    }

    pub async fn last_heard(&self, after: i64) -> Result<Vec<(String, i64)>, StoreError> {
        self.read(move |c| last_heard(c, after)).await
    }

    pub fn commits_failing_for(&self) -> Option<std::time::Duration> {
        match &self.writes {
            Writes::Thread(w) => w.health().failing_for(),
            Writes::Direct(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(c: &Connection, sql: &str) -> String {
        c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
            .join("; ")
    }

    #[test]
    fn what_needs_a_person_is_counted() {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::migrations::migrate(&mut c).unwrap();
        assert_eq!(counts(&c).unwrap(), AttentionCounts::default());
    }

    /// The reads of every round touch what they count, not the tables.
    #[test]
    fn each_round_reads_by_an_index() {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::migrations::migrate(&mut c).unwrap();
        let heard = plan(
            &c,
            "SELECT account, max(received_at) FROM deliveries INDEXED BY deliveries_received_at
             WHERE received_at > 5 AND kind <> 4 GROUP BY account",
        );
        assert!(
            heard.contains("deliveries_received_at (received_at>?)"),
            "{heard}"
        );
        let open = plan(
            &c,
            "SELECT kind FROM incidents INDEXED BY incidents_open WHERE resolved_at IS NULL",
        );
        assert!(open.contains("incidents_open"), "{open}");
    }
}
