//! What the operator console writes on SQLite: operators, sessions, the
//! audit, acknowledgements and the charts' samples; and `SqliteStore`'s
//! methods for the console, reads in `console_reads.rs`.

use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use super::console_lists::{self as lists, AUDIT_COLUMNS, audit_row};
use super::console_reads as reads;
use crate::domain::{Action, AuditOutcome};
use crate::store::StoreError;
use crate::store::console_views::*;
use crate::store::views::{ReviewView, clamp};
use pointhook_common::clock::rfc3339;

pub(super) fn add_operator(
    c: &Connection,
    name: &str,
    hash: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    Ok(c.execute(
        "INSERT INTO operators (name, password_hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?3) ON CONFLICT (name) DO NOTHING",
        params![name, hash, now],
    )? == 1)
}

/// A new password: every session of the operator ends.
pub(super) fn reset_operator(
    c: &Connection,
    name: &str,
    hash: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    let n = c.execute(
        "UPDATE operators SET password_hash = ?2, updated_at = ?3 WHERE name = ?1",
        params![name, hash, now],
    )?;
    c.execute("DELETE FROM sessions WHERE operator = ?1", [name])?;
    Ok(n == 1)
}

pub(super) fn remove_operator(c: &Connection, name: &str) -> rusqlite::Result<bool> {
    let n = c.execute("DELETE FROM operators WHERE name = ?1", [name])?;
    c.execute("DELETE FROM sessions WHERE operator = ?1", [name])?;
    Ok(n == 1)
}

pub(super) fn operators(c: &Connection) -> rusqlite::Result<Vec<OperatorView>> {
    c.prepare(
        "SELECT name, created_at, updated_at,
                (SELECT count(*) FROM sessions s WHERE s.operator = o.name)
         FROM operators o ORDER BY name",
    )?
    .query_map([], |r| {
        Ok(OperatorView {
            name: r.get(0)?,
            created_at: rfc3339(r.get(1)?),
            updated_at: rfc3339(r.get(2)?),
            sessions: r.get(3)?,
        })
    })?
    .collect()
}

pub(super) fn password_hash(c: &Connection, name: &str) -> rusqlite::Result<Option<String>> {
    c.query_row(
        "SELECT password_hash FROM operators WHERE name = ?1",
        [name],
        |r| r.get(0),
    )
    .optional()
}

/// A session of an operator who still exists.
pub(super) fn session(c: &Connection, token_hash: &[u8]) -> rusqlite::Result<Option<Session>> {
    c.prepare_cached(
        "SELECT s.operator, s.csrf, s.seen_at FROM sessions s
         JOIN operators o ON o.name = s.operator WHERE s.token_hash = ?1",
    )?
    .query_row([token_hash], |r| {
        Ok(Session {
            operator: r.get(0)?,
            csrf: r.get(1)?,
            seen_at: r.get(2)?,
        })
    })
    .optional()
}

pub(super) fn record_audit(c: &Connection, a: &NewAudit) -> rusqlite::Result<i64> {
    c.prepare_cached(
        "INSERT INTO audit (at, actor, via, action, item, account, order_id, detail, outcome)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        a.at,
        a.actor,
        a.via,
        a.action,
        a.item,
        a.account,
        a.order_id,
        a.detail,
        AuditOutcome::Started
    ])?;
    Ok(c.last_insert_rowid())
}

pub(super) fn audit(c: &Connection, f: &AuditFilter) -> rusqlite::Result<Vec<AuditView>> {
    c.prepare_cached(&format!(
        "SELECT {AUDIT_COLUMNS} FROM audit
         WHERE (?1 IS NULL OR item = ?1) AND (?2 IS NULL OR actor = ?2) AND (?3 IS NULL OR id < ?3)
           AND (?5 IS NULL OR action <> ?5)
         ORDER BY id DESC LIMIT ?4"
    ))?
    .query_map(
        params![
            f.item,
            f.actor,
            f.before,
            clamp(f.limit),
            f.without_alerts.then_some(Action::Alert as i16)
        ],
        audit_row,
    )?
    .collect()
}

impl SqliteStore {
    pub async fn add_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| add_operator(c, &name, &hash, now))
            .await
    }

    pub async fn reset_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| reset_operator(c, &name, &hash, now))
            .await
    }

    pub async fn remove_operator(&self, name: String) -> Result<bool, StoreError> {
        self.write(move |c| remove_operator(c, &name)).await
    }

    pub async fn operators(&self) -> Result<Vec<OperatorView>, StoreError> {
        self.read(operators).await
    }

    pub async fn password_hash(&self, name: String) -> Result<Option<String>, StoreError> {
        self.read(move |c| password_hash(c, &name)).await
    }

    pub async fn open_session(
        &self,
        token_hash: Vec<u8>,
        operator: String,
        csrf: String,
        now: i64,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO sessions (token_hash, operator, csrf, created_at, seen_at)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
                params![token_hash, operator, csrf, now],
            )
            .map(|_| ())
        })
        .await
    }

    pub async fn session(&self, token_hash: Vec<u8>) -> Result<Option<Session>, StoreError> {
        self.read(move |c| session(c, &token_hash)).await
    }

    pub async fn touch_session(&self, token_hash: Vec<u8>, now: i64) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "UPDATE sessions SET seen_at = ?2 WHERE token_hash = ?1",
                params![token_hash, now],
            )
            .map(|_| ())
        })
        .await
    }

    pub async fn close_session(&self, token_hash: Vec<u8>) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute("DELETE FROM sessions WHERE token_hash = ?1", [&token_hash])
                .map(|_| ())
        })
        .await
    }

    pub async fn close_idle_sessions(&self, seen_before: i64) -> Result<usize, StoreError> {
        self.write(move |c| c.execute("DELETE FROM sessions WHERE seen_at < ?1", [seen_before]))
            .await
    }

    pub async fn begin_audit(&self, entry: NewAudit) -> Result<i64, StoreError> {
        self.write(move |c| record_audit(c, &entry)).await
    }

    pub async fn end_audit(
        &self,
        id: i64,
        outcome: AuditOutcome,
        result: String,
        now: i64,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "UPDATE audit SET outcome = ?2, result = ?3, ended_at = ?4 WHERE id = ?1",
                params![id, outcome, result, now],
            )
            .map(|_| ())
        })
        .await
    }

    pub async fn audit(&self, filter: AuditFilter) -> Result<Vec<AuditView>, StoreError> {
        self.read(move |c| audit(c, &filter)).await
    }

    pub async fn acknowledge(
        &self,
        item: String,
        actor: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| {
            Ok(c.execute(
                "INSERT INTO acknowledgements (item, actor, at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (item) DO NOTHING",
                params![item, actor, now],
            )? == 1)
        })
        .await
    }

    pub async fn record_samples(&self, samples: Vec<Sample>) -> Result<(), StoreError> {
        self.write(move |c| {
            let mut stmt = c.prepare_cached(
                "INSERT INTO samples (minute, instance, series, value) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (minute, instance, series) DO UPDATE SET value = excluded.value",
            )?;
            for s in &samples {
                stmt.execute(params![s.minute, s.instance, s.series, s.value])?;
            }
            Ok(())
        })
        .await
    }

    pub async fn prune_samples(&self, before: i64) -> Result<usize, StoreError> {
        self.write(move |c| c.execute("DELETE FROM samples WHERE minute < ?1", [before]))
            .await
    }

    pub async fn samples(&self, since: i64) -> Result<Vec<Sample>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(
                "SELECT minute, instance, series, value FROM samples WHERE minute >= ?1
                 ORDER BY minute",
            )?
            .query_map([since], |r| {
                Ok(Sample {
                    minute: r.get(0)?,
                    instance: r.get(1)?,
                    series: r.get(2)?,
                    value: r.get(3)?,
                })
            })?
            .collect()
        })
        .await
    }

    pub async fn decisions_after(&self, id: i64) -> Result<(i64, i64), StoreError> {
        self.read(move |c| {
            c.query_row(
                "SELECT count(*), coalesce(max(id), ?1) FROM decisions WHERE id > ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
        .await
    }

    pub async fn missed_per_day(&self, since: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        self.read(move |c| lists::missed_per_day(c, since)).await
    }

    pub async fn retry_jobs(&self, ids: Vec<i64>, now: i64) -> Result<Vec<i64>, StoreError> {
        self.write(move |c| {
            let mut retried = Vec::new();
            for id in &ids {
                if super::admin::retry_job(c, *id, now)? {
                    retried.push(*id);
                }
            }
            Ok(retried)
        })
        .await
    }

    pub async fn inbox(&self, limit: i64) -> Result<Inbox, StoreError> {
        self.read(move |c| reads::inbox(c, limit)).await
    }

    pub async fn review(&self, id: i64) -> Result<Option<ReviewDetail>, StoreError> {
        self.read(move |c| reads::review(c, id)).await
    }

    pub async fn review_of(&self, id: i64) -> Result<Option<ReviewView>, StoreError> {
        self.read(move |c| reads::review_view(c, id)).await
    }

    pub async fn timeline(
        &self,
        account: String,
        kind: &'static str,
        id: String,
    ) -> Result<Option<Timeline>, StoreError> {
        self.read(move |c| super::console_timeline::timeline(c, &account, kind, &id))
            .await
    }

    pub async fn search(
        &self,
        accounts: Vec<String>,
        text: String,
    ) -> Result<Vec<Found>, StoreError> {
        self.read(move |c| reads::search(c, &accounts, &text)).await
    }

    pub async fn order_list(
        &self,
        list: OrderList,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Page<OrderRow>, StoreError> {
        self.read(move |c| lists::order_list(c, list, cursor.as_deref(), limit))
            .await
    }

    pub async fn job_page(
        &self,
        filter: JobFilter,
    ) -> Result<Page<crate::store::JobSummary>, StoreError> {
        self.read(move |c| lists::job_page(c, &filter)).await
    }

    pub async fn event_page(
        &self,
        filter: EventFilter,
    ) -> Result<Page<crate::store::EventSummary>, StoreError> {
        self.read(move |c| lists::event_page(c, &filter)).await
    }

    pub async fn delivery_page(
        &self,
        filter: crate::store::DeliveryFilter,
    ) -> Result<Page<crate::store::DeliverySummary>, StoreError> {
        self.read(move |c| lists::delivery_page(c, &filter)).await
    }

    pub async fn job_deaths(&self, job: i64) -> Result<Vec<DeathView>, StoreError> {
        self.read(move |c| lists::job_deaths(c, job)).await
    }

    pub async fn event_attempts(&self, event: String) -> Result<Vec<AttemptView>, StoreError> {
        self.read(move |c| lists::event_attempts(c, &event)).await
    }

    pub async fn is_acknowledged(&self, item: String) -> Result<bool, StoreError> {
        self.read(move |c| {
            c.query_row(
                "SELECT EXISTS (SELECT 1 FROM acknowledgements WHERE item = ?1)",
                [item],
                |r| r.get(0),
            )
        })
        .await
    }
}
