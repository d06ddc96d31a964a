//! The outbox: a queue per destination (`outbox`, one row per event and
//! destination), leased for an attempt and fenced by that row's attempt
//! count, so that an outcome is recorded once however many senders there
//! are. The event's own row sums its queue rows up (`summarize`).

use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use crate::domain::{DestinationState, EventState};
use crate::store::StoreError;
use crate::store::model::{Attempted, BatchHealth, EventOutcome, Lease, LeasedEvent, Recorded};

impl SqliteStore {
    pub async fn lease_events(
        &self,
        destination: String,
        now: i64,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Lease<LeasedEvent>, StoreError> {
        self.write(move |c| {
            let taken = lease(c, &destination, now, lease_ms, limit)?;
            let next_due = if taken.len() < limit {
                next_due(c, &destination)?
            } else {
                None
            };
            Ok(Lease { taken, next_due })
        })
        .await
    }

    pub async fn record_event_outcomes(
        &self,
        destination: String,
        outcomes: Vec<EventOutcome>,
        health: BatchHealth,
    ) -> Result<Recorded, StoreError> {
        self.write(move |c| record(c, &destination, &outcomes, &health))
            .await
    }

    pub async fn redeliver_event(
        &self,
        id: String,
        destinations: Vec<String>,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |c| redeliver(c, &id, &destinations, now))
            .await
    }
}

/// Queues a new event for each of `destinations`: pending, or paused
/// where the destination is disabled.
pub(super) fn queue(
    conn: &Connection,
    event_id: &str,
    destinations: &[String],
    now: i64,
) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO outbox (event_id, destination, state, next_attempt_at, created_at, queued_at)
         VALUES (?1, ?2, CASE WHEN EXISTS (SELECT 1 FROM destinations
                                            WHERE name = ?2 AND state = ?5)
                              THEN ?4 ELSE ?3 END, ?6, ?6, ?6)",
    )?;
    for d in destinations {
        insert.execute(params![
            event_id,
            d,
            EventState::Pending,
            EventState::Paused,
            DestinationState::Disabled,
            now
        ])?;
    }
    Ok(())
}

/// Takes up to `limit` of `destination`'s due events for `lease_ms`:
/// pending, due, and not leased (or the lease ran out); none while the
/// destination is disabled.
fn lease(
    conn: &Connection,
    destination: &str,
    now: i64,
    lease_ms: i64,
    limit: usize,
) -> rusqlite::Result<Vec<LeasedEvent>> {
    let taken: Vec<(String, u32, i64)> = conn
        .prepare_cached(
            "UPDATE outbox SET lease_until = ?3 + ?4
             WHERE destination = ?1 AND event_id IN (
                 SELECT event_id FROM outbox
                 WHERE destination = ?1 AND state = ?2 AND next_attempt_at <= ?3
                   AND (lease_until IS NULL OR lease_until < ?3)
                   AND NOT EXISTS (SELECT 1 FROM destinations WHERE name = ?1 AND state = ?6)
                 ORDER BY next_attempt_at, rowid LIMIT ?5)
             RETURNING event_id, attempts, queued_at",
        )?
        .query_map(
            params![
                destination,
                EventState::Pending,
                now,
                lease_ms,
                limit as i64,
                DestinationState::Disabled
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut body = conn.prepare_cached("SELECT body, created_at FROM events WHERE id = ?1")?;
    let mut leased = Vec::with_capacity(taken.len());
    for (id, attempts, queued_at) in taken {
        let (text, created_at) = body.query_row([&id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        leased.push(LeasedEvent {
            id,
            body: text,
            created_at,
            attempts,
            queued_at,
        });
    }
    Ok(leased)
}

/// When `destination`'s next pending event falls due: its next attempt or
/// the end of its lease, whichever is later.
fn next_due(conn: &Connection, destination: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT min(max(next_attempt_at, coalesce(lease_until, 0))) FROM outbox
         WHERE destination = ?1 AND state = ?2",
    )?
    .query_row(params![destination, EventState::Pending], |r| r.get(0))
}

/// Records each attempt of one batch (per outcome, whether its fence still
/// held), then what the batch says of the destination's health.
fn record(
    conn: &Connection,
    destination: &str,
    outcomes: &[EventOutcome],
    health: &BatchHealth,
) -> rusqlite::Result<Recorded> {
    // A row paused while its attempt was out stays paused unless it was
    // delivered. A failure (or giving up) is when a recovery picks it by.
    let mut update = conn.prepare_cached(
        "UPDATE outbox SET
             state = CASE WHEN ?3 = ?8 AND state = ?9 THEN ?9 ELSE ?3 END,
             attempts = attempts + 1, last_error = ?4,
             delivered_at = coalesce(?5, delivered_at),
             next_attempt_at = coalesce(?6, next_attempt_at), lease_until = NULL,
             failed_at = CASE WHEN ?4 IS NULL THEN failed_at ELSE ?10 END
         WHERE event_id = ?1 AND destination = ?7 AND attempts = ?2 AND state IN (?8, ?9)",
    )?;
    let mut held = Vec::with_capacity(outcomes.len());
    let mut delivered = false;
    let mut failed = false;
    let mut gave_up = false;
    for o in outcomes {
        let (state, error, at, next) = match &o.attempted {
            Attempted::Delivered { at } => {
                delivered = true;
                (EventState::Delivered, None, Some(*at), None)
            }
            Attempted::Failed { error, next } => {
                failed = true;
                let state = match next {
                    Some(_) => EventState::Pending,
                    None => EventState::Dead,
                };
                gave_up |= state == EventState::Dead;
                (state, Some(error.as_str()), None, *next)
            }
        };
        let n = update.execute(params![
            o.event.id,
            o.event.attempts,
            state,
            error,
            at,
            next,
            destination,
            EventState::Pending,
            EventState::Paused,
            health.now
        ])?;
        if n == 1 {
            summarize(conn, &o.event.id)?;
        }
        held.push(n == 1);
    }
    if gave_up {
        // What gave up waits for a recovery from the failure's start.
        conn.prepare_cached(
            "UPDATE destinations SET outage_since = coalesce(outage_since, failing_since, ?2)
             WHERE name = ?1",
        )?
        .execute(params![destination, health.now])?;
    }
    let disabled = record_health(conn, destination, delivered, failed, health)?;
    Ok(Recorded { held, disabled })
}

/// A success clears the failing clock; a failure starts it. A `410`, or
/// failing since the cutoff, disables the destination and pauses what
/// waits for it; returns whether this did.
fn record_health(
    conn: &Connection,
    destination: &str,
    delivered: bool,
    failed: bool,
    health: &BatchHealth,
) -> rusqlite::Result<bool> {
    if delivered {
        conn.prepare_cached(
            "UPDATE destinations SET failing_since = NULL, last_success_at = ?2, updated_at = ?2
             WHERE name = ?1",
        )?
        .execute(params![destination, health.now])?;
    } else if failed {
        conn.prepare_cached(
            "UPDATE destinations SET failing_since = coalesce(failing_since, ?2), updated_at = ?2
             WHERE name = ?1",
        )?
        .execute(params![destination, health.now])?;
    }
    let reason = match &health.gone {
        Some(gone) => Some(gone.as_str()),
        None if failed && !delivered => {
            let since: Option<i64> = conn
                .prepare_cached("SELECT failing_since FROM destinations WHERE name = ?1")?
                .query_row([destination], |r| r.get(0))
                .optional()?
                .flatten();
            since
                .is_some_and(|t| t <= health.failing_cutoff)
                .then_some(health.failing_reason.as_str())
        }
        None => None,
    };
    match reason {
        Some(reason) => disable(conn, destination, reason, health.now),
        None => Ok(false),
    }
}

/// Disables `destination` (if enabled) and pauses its pending events
/// (each paused now; the failure's start kept for the recovery); returns
/// whether it was enabled.
fn disable(conn: &Connection, destination: &str, reason: &str, now: i64) -> rusqlite::Result<bool> {
    let changed = conn.execute(
        "UPDATE destinations SET state = ?2, disabled_reason = ?3, disabled_at = ?4,
             outage_since = coalesce(outage_since, failing_since, ?4), updated_at = ?4
         WHERE name = ?1 AND state = ?5",
        params![
            destination,
            DestinationState::Disabled,
            reason,
            now,
            DestinationState::Enabled
        ],
    )? == 1;
    conn.execute(
        "UPDATE outbox SET state = ?2, lease_until = NULL, failed_at = ?4
         WHERE destination = ?1 AND state = ?3",
        params![destination, EventState::Paused, EventState::Pending, now],
    )?;
    Ok(changed)
}

/// Sums an event's queue rows up on its own row: pending while any waits
/// (pending or paused), else dead if one gave it up, else delivered.
fn summarize(conn: &Connection, event_id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE events SET
             unfinished = s.unfinished, gave_up = s.gave_up, attempts = s.attempts,
             state = CASE WHEN s.unfinished > 0 THEN ?2 WHEN s.gave_up > 0 THEN ?3 ELSE ?4 END,
             delivered_at = CASE WHEN s.unfinished = 0 AND s.gave_up = 0 THEN s.delivered_at END,
             last_error = coalesce(s.last_error, events.last_error),
             next_attempt_at = max(events.next_attempt_at, s.next_attempt_at),
             lease_until = NULL
         FROM (SELECT count(*) FILTER (WHERE state IN (?2, ?5)) AS unfinished,
                      count(*) FILTER (WHERE state = ?3) AS gave_up,
                      sum(attempts) AS attempts, max(delivered_at) AS delivered_at,
                      max(max(next_attempt_at), coalesce(max(delivered_at), 0)) AS next_attempt_at,
                      (SELECT last_error FROM outbox WHERE event_id = ?1 AND last_error IS NOT NULL
                       ORDER BY next_attempt_at DESC LIMIT 1) AS last_error
               FROM outbox WHERE event_id = ?1) AS s
         WHERE events.id = ?1",
    )?
    .execute(params![
        event_id,
        EventState::Pending,
        EventState::Dead,
        EventState::Delivered,
        EventState::Paused
    ])?;
    Ok(())
}

/// Sends an event again, same id, to each of `destinations` (queued anew
/// where it was not): due now, its give-up clock started over; paused
/// where the destination is disabled. `false`: no such event.
fn redeliver(
    conn: &Connection,
    id: &str,
    destinations: &[String],
    now: i64,
) -> rusqlite::Result<bool> {
    let exists: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM events WHERE id = ?1)",
        [id],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(false);
    }
    let created_at: i64 =
        conn.query_row("SELECT created_at FROM events WHERE id = ?1", [id], |r| {
            r.get(0)
        })?;
    let mut again = conn.prepare_cached(
        "INSERT INTO outbox (event_id, destination, state, next_attempt_at, created_at, queued_at)
         VALUES (?1, ?2, ?3, ?5, ?6, ?5)
         ON CONFLICT (event_id, destination) DO UPDATE SET
             state = CASE WHEN outbox.state = ?4 THEN ?4 ELSE ?3 END,
             next_attempt_at = ?5, queued_at = ?5, delivered_at = NULL, lease_until = NULL,
             failed_at = NULL",
    )?;
    for d in destinations {
        again.execute(params![
            id,
            d,
            EventState::Pending,
            EventState::Paused,
            now,
            created_at
        ])?;
    }
    // A destination disabled now keeps its events paused.
    conn.execute(
        "UPDATE outbox SET state = ?2 WHERE event_id = ?1 AND state = ?3 AND destination IN (
             SELECT name FROM destinations WHERE state = ?4)",
        params![
            id,
            EventState::Paused,
            EventState::Pending,
            DestinationState::Disabled
        ],
    )?;
    summarize(conn, id)?;
    Ok(true)
}
