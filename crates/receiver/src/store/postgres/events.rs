//! The outbox on PostgreSQL: a queue per destination (`outbox`, one row per
//! event and destination), leased with `FOR UPDATE SKIP LOCKED` and fenced
//! by that row's attempt count, as SQLite's. The event's own row sums its
//! queue rows up with relative changes (`unfinished`, `gave_up`), so that
//! two destinations recording at once never overwrite each other's count.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::PgStore;
use super::listen::Channel;
use super::prepared::prepared;
use super::work::lease_rows;
use crate::domain::{DestinationState, EventState};
use crate::store::StoreError;
use crate::store::model::{Attempted, BatchHealth, EventOutcome, Lease, LeasedEvent, Recorded};

const LEASE: &str = "WITH taken AS (
         UPDATE outbox SET lease_until = $2 + $3
         WHERE destination = $5 AND event_id IN (
             SELECT event_id FROM outbox
             WHERE destination = $5 AND state = $1 AND next_attempt_at <= $2
               AND (lease_until IS NULL OR lease_until < $2)
               AND NOT EXISTS (SELECT 1 FROM destinations WHERE name = $5 AND state = $6)
             ORDER BY next_attempt_at, seq LIMIT $4
             FOR UPDATE SKIP LOCKED)
         RETURNING event_id, attempts, queued_at),
     due AS (
         SELECT CASE WHEN (SELECT count(*) FROM taken) < $4 THEN
             least(
                 (SELECT min(greatest(next_attempt_at, coalesce(lease_until, 0)))
                  FROM outbox
                  WHERE destination = $5 AND state = $1
                    AND event_id NOT IN (SELECT event_id FROM taken)),
                 (SELECT $2 + $3 FROM taken LIMIT 1))
         END AS next_due)
     SELECT due.next_due, taken.event_id, e.body, e.created_at, taken.attempts, taken.queued_at
     FROM due LEFT JOIN taken ON true LEFT JOIN events e ON e.id = taken.event_id";

/// Each attempt of a batch, fenced by its row's attempts (a row paused
/// meanwhile stays paused unless delivered; a failure's time kept for a
/// recovery); the events' sums changed by what finished; the
/// destination's failing clock, and the failure's start when one gave
/// up. One statement. The
/// events' rows are locked first, in order of id (`locked`, run once
/// before `summed` touches a row): batches of several destinations name
/// the same events, and taken in any other order two of them deadlocked
/// (PostgreSQL broke the tie after its one-second `deadlock_timeout`).
const RECORD: &str = "WITH locked AS (
         SELECT id FROM events WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE),
     u AS (
         UPDATE outbox o SET
             state = CASE WHEN n.state = $8 AND o.state = $9 THEN $9 ELSE n.state END,
             attempts = o.attempts + 1,
             delivered_at = coalesce(n.delivered_at, o.delivered_at), last_error = n.error,
             next_attempt_at = coalesce(n.next, o.next_attempt_at), lease_until = NULL,
             failed_at = CASE WHEN n.error IS NULL THEN o.failed_at ELSE $14 END
         FROM unnest($1::text[], $2::int[], $3::int2[], $4::bigint[], $5::text[], $6::bigint[])
             AS n (id, attempts, state, delivered_at, error, next)
         WHERE o.event_id = n.id AND o.destination = $7 AND o.attempts = n.attempts
           AND o.state IN ($8, $9)
         RETURNING o.event_id, o.state, o.delivered_at, o.last_error, o.next_attempt_at),
     summed AS (
         UPDATE events e SET
             attempts = e.attempts + 1,
             unfinished = e.unfinished - (u.state IN ($10, $11))::int,
             gave_up = e.gave_up + (u.state = $11)::int,
             state = CASE WHEN e.unfinished - (u.state IN ($10, $11))::int > 0 THEN $8
                          WHEN e.gave_up + (u.state = $11)::int > 0 THEN $11 ELSE $10 END,
             delivered_at = CASE WHEN e.unfinished - (u.state IN ($10, $11))::int = 0
                                  AND e.gave_up + (u.state = $11)::int = 0
                                 THEN greatest(e.delivered_at, u.delivered_at) END,
             last_error = coalesce(u.last_error, e.last_error),
             next_attempt_at = greatest(e.next_attempt_at, u.next_attempt_at, u.delivered_at),
             lease_until = NULL
         FROM u WHERE e.id = u.event_id AND (SELECT count(*) FROM locked) >= 0),
     health AS (
         UPDATE destinations SET
             failing_since = CASE WHEN $12 THEN NULL ELSE coalesce(failing_since, $14) END,
             last_success_at = CASE WHEN $12 THEN $14 ELSE last_success_at END,
             outage_since = CASE WHEN EXISTS (SELECT 1 FROM u WHERE u.state = $11)
                                 THEN coalesce(outage_since, failing_since, $14)
                                 ELSE outage_since END,
             updated_at = $14
         WHERE name = $7 AND ($12 OR $13)
         RETURNING failing_since)
     SELECT ARRAY(SELECT event_id FROM u), (SELECT failing_since FROM health)";

/// Disables a destination that is enabled and pauses what waits for it;
/// says whether it is known and whether this disabled it.
const DISABLE: &str = "WITH d AS (
         UPDATE destinations SET state = $2, disabled_reason = $3, disabled_at = $4,
             outage_since = coalesce(outage_since, failing_since, $4), updated_at = $4
         WHERE name = $1 AND state = $5
         RETURNING name),
     p AS (
         UPDATE outbox SET state = $6, lease_until = NULL, failed_at = $4
         WHERE destination = $1 AND state = $7)
     SELECT EXISTS (SELECT 1 FROM destinations WHERE name = $1 AND configured),
            EXISTS (SELECT 1 FROM d)";

/// Sends an event again to each destination named (queued anew where it
/// was not), with the event's sums changed by what was finished before.
const REDELIVER: &str = "WITH ev AS (SELECT id, created_at FROM events WHERE id = $1),
     old AS (
         SELECT destination, state FROM outbox
         WHERE event_id = $1 AND destination = ANY($2::text[]) FOR UPDATE),
     again AS (
         SELECT d.name, old.state AS was,
                CASE WHEN old.state = $5 OR EXISTS (
                         SELECT 1 FROM destinations x WHERE x.name = d.name AND x.state = $8)
                     THEN $5 ELSE $4 END AS state
         FROM unnest($2::text[]) AS d (name) LEFT JOIN old ON old.destination = d.name),
     up AS (
         INSERT INTO outbox (event_id, destination, state, next_attempt_at, created_at, queued_at)
         SELECT ev.id, again.name, again.state, $3, ev.created_at, $3 FROM ev, again
         ON CONFLICT (event_id, destination) DO UPDATE SET
             state = excluded.state, next_attempt_at = excluded.next_attempt_at,
             queued_at = excluded.queued_at, delivered_at = NULL, lease_until = NULL,
             failed_at = NULL),
     added AS (
         SELECT count(*) FILTER (WHERE was IS NULL OR was IN ($6, $7)) AS unfinished,
                count(*) FILTER (WHERE was = $7) AS revived
         FROM again),
     summed AS (
         UPDATE events e SET
             unfinished = e.unfinished + a.unfinished,
             gave_up = e.gave_up - a.revived,
             state = CASE WHEN e.unfinished + a.unfinished > 0 THEN $4 ELSE e.state END,
             delivered_at = CASE WHEN a.unfinished > 0 THEN NULL ELSE e.delivered_at END
         FROM added a WHERE e.id = $1)
     SELECT EXISTS (SELECT 1 FROM ev)";

impl PgStore {
    pub async fn lease_events(
        &self,
        destination: String,
        now: i64,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Lease<LeasedEvent>, StoreError> {
        let c = self.client().await?;
        let rows = c
            .query(
                &prepared(&c, LEASE).await?,
                &[
                    &EventState::Pending,
                    &now,
                    &lease_ms,
                    &(limit as i64),
                    &destination,
                    &DestinationState::Disabled,
                ],
            )
            .await?;
        lease_rows(&rows, leased_event)
    }

    /// Records a batch's attempts and the destination's health; a `410`,
    /// or failing since the cutoff, then disables it (rare: a statement of
    /// its own).
    pub async fn record_event_outcomes(
        &self,
        destination: String,
        outcomes: Vec<EventOutcome>,
        health: BatchHealth,
    ) -> Result<Recorded, StoreError> {
        let c = self.client().await?;
        let n = outcomes.len();
        let (mut ids, mut attempts, mut states) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let (mut delivered_at, mut errors, mut next) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for o in &outcomes {
            ids.push(o.event.id.as_str());
            attempts.push(o.event.attempts as i32);
            let (state, at, error, again) = match &o.attempted {
                Attempted::Delivered { at } => (EventState::Delivered, Some(*at), None, None),
                Attempted::Failed { error, next } => (
                    if next.is_some() {
                        EventState::Pending
                    } else {
                        EventState::Dead
                    },
                    None,
                    Some(error.as_str()),
                    *next,
                ),
            };
            states.push(state);
            delivered_at.push(at);
            errors.push(error);
            next.push(again);
        }
        let delivered = delivered_at.iter().any(Option::is_some);
        let failed = errors.iter().any(Option::is_some);
        let row = c
            .query_one(
                &prepared(&c, RECORD).await?,
                &[
                    &ids,
                    &attempts,
                    &states,
                    &delivered_at,
                    &errors,
                    &next,
                    &destination,
                    &EventState::Pending,
                    &EventState::Paused,
                    &EventState::Delivered,
                    &EventState::Dead,
                    &delivered,
                    &failed,
                    &health.now,
                ],
            )
            .await?;
        let recorded: Vec<String> = row.try_get(0)?;
        let failing_since: Option<i64> = row.try_get(1)?;
        let held = ids
            .iter()
            .map(|id| recorded.iter().any(|r| r == id))
            .collect();
        let reason = match &health.gone {
            Some(gone) => Some(gone.as_str()),
            None if failed && !delivered => failing_since
                .is_some_and(|t| t <= health.failing_cutoff)
                .then_some(health.failing_reason.as_str()),
            None => None,
        };
        let disabled = match reason {
            Some(reason) => disable(&c, &destination, reason, health.now).await?.1,
            None => false,
        };
        Ok(Recorded { held, disabled })
    }

    pub async fn redeliver_event(
        &self,
        id: String,
        destinations: Vec<String>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let c = self.client().await?;
        let found: bool = c
            .query_one(
                &prepared(&c, REDELIVER).await?,
                &[
                    &id,
                    &destinations,
                    &now,
                    &EventState::Pending,
                    &EventState::Paused,
                    &EventState::Delivered,
                    &EventState::Dead,
                    &DestinationState::Disabled,
                ],
            )
            .await?
            .try_get(0)?;
        Ok(found)
    }

    /// Tells the other instances' outboxes that events may be due (a
    /// person's enable, recovery or "deliver again").
    pub async fn wake_events(&self) {
        self.wake(Channel::Events).await;
    }
}

/// A taken event, from its lease row (after the next due time).
fn leased_event(r: &Row) -> Result<Option<LeasedEvent>, StoreError> {
    let Some(id) = r.try_get(1)? else {
        return Ok(None);
    };
    Ok(Some(LeasedEvent {
        id,
        body: r.try_get(2)?,
        created_at: r.try_get(3)?,
        attempts: r.try_get::<_, i32>(4)? as u32,
        queued_at: r.try_get(5)?,
    }))
}

/// Disables `destination` if enabled and pauses its pending events:
/// (known, disabled by this call).
async fn disable(
    c: &impl GenericClient,
    destination: &str,
    reason: &str,
    now: i64,
) -> Result<(bool, bool), StoreError> {
    let row = c
        .query_one(
            &prepared(c, DISABLE).await?,
            &[
                &destination,
                &DestinationState::Disabled,
                &reason,
                &now,
                &DestinationState::Enabled,
                &EventState::Paused,
                &EventState::Pending,
            ],
        )
        .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}
