//! Destinations' state on PostgreSQL, what waits for each, and a person's
//! enable, disable and recovery: as SQLite's, with a recovery's changes to
//! the events' sums made relative (another instance may be recording).

use tokio_postgres::Row;

use super::PgStore;
use super::events::disable;
use super::listen::Channel;
use super::prepared::prepared;
use crate::domain::{DestinationState, EventState};
use crate::store::StoreError;
use crate::store::model::Recovery;
use crate::store::views::{DestinationView, RecoveryView};
use pointhook_common::clock::rfc3339;

const LIST: &str =
    "SELECT d.name, d.url, d.state, d.disabled_reason, d.disabled_at, d.failing_since,
            d.last_success_at, d.recovery_since, d.recovery_at, d.recovery_queued,
            (SELECT count(*) FROM outbox o WHERE o.destination = d.name AND o.state IN ($2, $3)),
            (SELECT count(*) FROM outbox o WHERE o.destination = d.name AND o.state = $3),
            (SELECT count(*) FROM outbox o WHERE o.destination = d.name AND o.state = $4),
            (SELECT min(created_at) FROM outbox o
             WHERE o.destination = d.name AND o.state IN ($2, $3))
     FROM destinations d WHERE d.configured AND ($1::text IS NULL OR d.name = $1)
     ORDER BY d.name";

const PROGRESS: &str = "SELECT count(*) FILTER (WHERE state = $4),
            count(*) FILTER (WHERE state IN ($5, $6)), count(*) FILTER (WHERE state = $7)
     FROM outbox WHERE destination = $1 AND created_at >= $2 AND created_at <= $3
       AND queued_at = $3";

/// Every event for the destination since `$2` that failed, was paused or
/// gave up, due again at its creation (oldest first); a revived one counts
/// as unfinished again on its event. Only while the destination is enabled.
const RECOVER: &str = "WITH d AS (
         SELECT state FROM destinations WHERE name = $1 AND configured FOR UPDATE),
     old AS (
         SELECT event_id, state FROM outbox
         WHERE destination = $1 AND created_at >= $2
           AND (state IN ($5, $6) OR (state = $4 AND attempts > 0))
           AND (SELECT state FROM d) = $7
         FOR UPDATE),
     up AS (
         UPDATE outbox o SET state = $4, next_attempt_at = o.created_at, queued_at = $3,
             lease_until = CASE WHEN old.state = $4 THEN o.lease_until END
         FROM old WHERE o.destination = $1 AND o.event_id = old.event_id),
     summed AS (
         UPDATE events e SET
             unfinished = e.unfinished + (old.state = $6)::int,
             gave_up = e.gave_up - (old.state = $6)::int,
             state = $4, delivered_at = NULL
         FROM old WHERE e.id = old.event_id),
     noted AS (
         UPDATE destinations SET recovery_since = $2, recovery_at = $3,
             recovery_queued = (SELECT count(*) FROM old), updated_at = $3
         WHERE name = $1 AND (SELECT state FROM d) = $7)
     SELECT (SELECT state FROM d), (SELECT count(*) FROM old)";

impl PgStore {
    pub async fn register_destinations(
        &self,
        configured: Vec<(String, String)>,
        now: i64,
    ) -> Result<(), StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        tx.execute("UPDATE destinations SET configured = false", &[])
            .await?;
        for (name, url) in &configured {
            tx.execute(
                "INSERT INTO destinations (name, url, configured, state, updated_at)
                 VALUES ($1, $2, true, $3, $4)
                 ON CONFLICT (name) DO UPDATE SET url = excluded.url, configured = true",
                &[name, url, &DestinationState::Enabled, &now],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn destinations(
        &self,
        name: Option<String>,
        now: i64,
    ) -> Result<Vec<DestinationView>, StoreError> {
        let c = self.client().await?;
        let rows = c
            .query(
                &prepared(&c, LIST).await?,
                &[
                    &name,
                    &EventState::Pending,
                    &EventState::Paused,
                    &EventState::Dead,
                ],
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let mut view = view(r, now)?;
            if let (Some(since), Some(at), Some(queued)) = (
                r.try_get::<_, Option<i64>>(7)?,
                r.try_get::<_, Option<i64>>(8)?,
                r.try_get::<_, Option<i64>>(9)?,
            ) {
                let p = c
                    .query_one(
                        &prepared(&c, PROGRESS).await?,
                        &[
                            &view.name,
                            &since,
                            &at,
                            &EventState::Delivered,
                            &EventState::Pending,
                            &EventState::Paused,
                            &EventState::Dead,
                        ],
                    )
                    .await?;
                view.recovery = Some(RecoveryView {
                    since: rfc3339(since),
                    asked_at: rfc3339(at),
                    queued,
                    delivered: p.try_get(0)?,
                    waiting: p.try_get(1)?,
                    gave_up: p.try_get(2)?,
                });
            }
            out.push(view);
        }
        Ok(out)
    }

    pub async fn enable_destination(&self, name: String, now: i64) -> Result<bool, StoreError> {
        let found = self
            .client()
            .await?
            .execute(
                "UPDATE destinations SET state = $2, disabled_reason = NULL, disabled_at = NULL,
                     failing_since = NULL, updated_at = $3
                 WHERE name = $1 AND configured",
                &[&name, &DestinationState::Enabled, &now],
            )
            .await?
            == 1;
        if found {
            self.wake(Channel::Events).await;
        }
        Ok(found)
    }

    pub async fn disable_destination(
        &self,
        name: String,
        reason: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        Ok(disable(&self.client().await?, &name, &reason, now).await?.0)
    }

    pub async fn recover_destination(
        &self,
        name: String,
        since: i64,
        now: i64,
    ) -> Result<Recovery, StoreError> {
        let c = self.client().await?;
        let row = c
            .query_one(
                &prepared(&c, RECOVER).await?,
                &[
                    &name,
                    &since,
                    &now,
                    &EventState::Pending,
                    &EventState::Paused,
                    &EventState::Dead,
                    &DestinationState::Enabled,
                ],
            )
            .await?;
        drop(c);
        let answer = match row.try_get::<_, Option<DestinationState>>(0)? {
            None => Recovery::NotFound,
            Some(DestinationState::Disabled) => Recovery::Disabled,
            Some(DestinationState::Enabled) => Recovery::Queued(row.try_get::<_, i64>(1)? as u64),
        };
        if matches!(answer, Recovery::Queued(n) if n > 0) {
            self.wake(Channel::Events).await;
        }
        Ok(answer)
    }
}

fn view(r: &Row, now: i64) -> Result<DestinationView, StoreError> {
    let state: DestinationState = r.try_get(2)?;
    let oldest: Option<i64> = r.try_get(13)?;
    let at = |i: usize| -> Result<Option<String>, StoreError> {
        Ok(r.try_get::<_, Option<i64>>(i)?.map(rfc3339))
    };
    Ok(DestinationView {
        name: r.try_get(0)?,
        url: r.try_get(1)?,
        state: state.as_str(),
        disabled_reason: r.try_get(3)?,
        disabled_at: at(4)?,
        failing_since: at(5)?,
        last_success_at: at(6)?,
        backlog: r.try_get(10)?,
        paused: r.try_get(11)?,
        gave_up: r.try_get(12)?,
        oldest_event: oldest.map(rfc3339),
        oldest_seconds: oldest.map_or(0, |t| (now - t).max(0) / 1000),
        recovery: None,
    })
}
