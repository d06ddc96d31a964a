//! Destinations' state (enabled or disabled, why, since when it fails),
//! what waits for each, and a person's enable, disable and recovery.

use rusqlite::{Connection, params};

use super::SqliteStore;
use super::events::{disable, summarize};
use crate::domain::{DestinationState, EventState};
use crate::store::StoreError;
use crate::store::model::Recovery;
use crate::store::views::{DestinationView, RecoveryView};
use pointhook_common::clock::rfc3339;

impl SqliteStore {
    pub async fn register_destinations(
        &self,
        configured: Vec<(String, String)>,
        now: i64,
    ) -> Result<(), StoreError> {
        self.write(move |c| register(c, &configured, now)).await
    }

    pub async fn destinations(
        &self,
        name: Option<String>,
        now: i64,
    ) -> Result<Vec<DestinationView>, StoreError> {
        self.read(move |c| list(c, name.as_deref(), now)).await
    }

    pub async fn enable_destination(&self, name: String, now: i64) -> Result<bool, StoreError> {
        self.write(move |c| enable(c, &name, now)).await
    }

    pub async fn disable_destination(
        &self,
        name: String,
        reason: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| {
            let known = exists(c, &name)?;
            if known {
                disable(c, &name, &reason, now)?;
            }
            Ok(known)
        })
        .await
    }

    pub async fn recover_destination(
        &self,
        name: String,
        since: i64,
        now: i64,
    ) -> Result<Recovery, StoreError> {
        self.write(move |c| recover(c, &name, since, now)).await
    }
}

/// Marks the configured destinations (their URLs as shown), creating the
/// new ones enabled; those no longer configured keep their rows.
fn register(conn: &Connection, configured: &[(String, String)], now: i64) -> rusqlite::Result<()> {
    conn.execute("UPDATE destinations SET configured = 0", [])?;
    let mut upsert = conn.prepare_cached(
        "INSERT INTO destinations (name, url, configured, state, updated_at)
         VALUES (?1, ?2, 1, ?3, ?4)
         ON CONFLICT (name) DO UPDATE SET url = excluded.url, configured = 1",
    )?;
    for (name, url) in configured {
        upsert.execute(params![name, url, DestinationState::Enabled, now])?;
    }
    Ok(())
}

fn exists(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM destinations WHERE name = ?1 AND configured = 1)",
        [name],
        |r| r.get(0),
    )
}

/// A recovery as recorded: since, asked at, events queued.
type Asked = (i64, i64, i64);

/// The configured destinations (or the one named), by name.
fn list(conn: &Connection, name: Option<&str>, now: i64) -> rusqlite::Result<Vec<DestinationView>> {
    let rows: Vec<(DestinationView, Option<Asked>)> = conn
        .prepare_cached(
            "SELECT d.name, d.url, d.state, d.disabled_reason, d.disabled_at, d.failing_since,
                    d.last_success_at, d.recovery_since, d.recovery_at, d.recovery_queued,
                    (SELECT count(*) FROM outbox o
                     WHERE o.destination = d.name AND o.state IN (?2, ?3)),
                    (SELECT count(*) FROM outbox o WHERE o.destination = d.name AND o.state = ?3),
                    (SELECT count(*) FROM outbox o WHERE o.destination = d.name AND o.state = ?4),
                    (SELECT min(created_at) FROM outbox o
                     WHERE o.destination = d.name AND o.state IN (?2, ?3))
             FROM destinations d WHERE d.configured = 1 AND (?1 IS NULL OR d.name = ?1)
             ORDER BY d.name",
        )?
        .query_map(
            params![
                name,
                EventState::Pending,
                EventState::Paused,
                EventState::Dead
            ],
            |r| {
                let state: DestinationState = r.get(2)?;
                let oldest: Option<i64> = r.get(13)?;
                let recovery = match (r.get(7)?, r.get(8)?, r.get(9)?) {
                    (Some(since), Some(at), Some(queued)) => Some((since, at, queued)),
                    _ => None,
                };
                Ok((
                    DestinationView {
                        name: r.get(0)?,
                        url: r.get(1)?,
                        state: state.as_str(),
                        disabled_reason: r.get(3)?,
                        disabled_at: r.get::<_, Option<i64>>(4)?.map(rfc3339),
                        failing_since: r.get::<_, Option<i64>>(5)?.map(rfc3339),
                        last_success_at: r.get::<_, Option<i64>>(6)?.map(rfc3339),
                        backlog: r.get(10)?,
                        paused: r.get(11)?,
                        gave_up: r.get(12)?,
                        oldest_event: oldest.map(rfc3339),
                        oldest_seconds: oldest.map_or(0, |t| (now - t).max(0) / 1000),
                        recovery: None,
                    },
                    recovery,
                ))
            },
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::with_capacity(rows.len());
    for (mut view, recovery) in rows {
        if let Some((since, at, queued)) = recovery {
            view.recovery = Some(progress(conn, &view.name, since, at, queued)?);
        }
        out.push(view);
    }
    Ok(out)
}

/// How far the last recovery got: the rows it queued again (their clock
/// started at `at`) and where each is now.
fn progress(
    conn: &Connection,
    name: &str,
    since: i64,
    at: i64,
    queued: i64,
) -> rusqlite::Result<RecoveryView> {
    let (delivered, waiting, gave_up) = conn
        .prepare_cached(
            "SELECT count(*) FILTER (WHERE state = ?4), count(*) FILTER (WHERE state IN (?5, ?6)),
                    count(*) FILTER (WHERE state = ?7)
             FROM outbox WHERE destination = ?1 AND created_at >= ?2 AND created_at <= ?3
               AND queued_at = ?3",
        )?
        .query_row(
            params![
                name,
                since,
                at,
                EventState::Delivered,
                EventState::Pending,
                EventState::Paused,
                EventState::Dead
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
    Ok(RecoveryView {
        since: rfc3339(since),
        asked_at: rfc3339(at),
        queued,
        delivered,
        waiting,
        gave_up,
    })
}

/// Enabled again: new events are sent; what was paused waits for a
/// recovery. `false`: no such destination.
fn enable(conn: &Connection, name: &str, now: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "UPDATE destinations SET state = ?2, disabled_reason = NULL, disabled_at = NULL,
             failing_since = NULL, updated_at = ?3
         WHERE name = ?1 AND configured = 1",
        params![name, DestinationState::Enabled, now],
    )? == 1)
}

/// Sends again every event for `name` decided since `since` that failed,
/// was paused or gave up: due at once, oldest first (each is due at its
/// creation), its give-up clock started over.
fn recover(conn: &Connection, name: &str, since: i64, now: i64) -> rusqlite::Result<Recovery> {
    let state: Option<DestinationState> = conn
        .query_row(
            "SELECT state FROM destinations WHERE name = ?1 AND configured = 1",
            [name],
            |r| r.get(0),
        )
        .ok();
    match state {
        None => return Ok(Recovery::NotFound),
        Some(DestinationState::Disabled) => return Ok(Recovery::Disabled),
        Some(DestinationState::Enabled) => {}
    }
    let ids: Vec<String> = conn
        .prepare_cached(
            "UPDATE outbox SET state = ?4, next_attempt_at = created_at, queued_at = ?3,
                 lease_until = CASE WHEN state = ?4 THEN lease_until END
             WHERE destination = ?1 AND created_at >= ?2
               AND (state IN (?5, ?6) OR (state = ?4 AND attempts > 0))
             RETURNING event_id",
        )?
        .query_map(
            params![
                name,
                since,
                now,
                EventState::Pending,
                EventState::Paused,
                EventState::Dead
            ],
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<_>>()?;
    for id in &ids {
        summarize(conn, id)?;
    }
    conn.execute(
        "UPDATE destinations SET recovery_since = ?2, recovery_at = ?3, recovery_queued = ?4,
             updated_at = ?3
         WHERE name = ?1",
        params![name, since, now, ids.len() as i64],
    )?;
    Ok(Recovery::Queued(ids.len() as u64))
}
