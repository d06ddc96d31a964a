//! The destinations' part of `Store`, written once for both backends:
//! each destination's state (enabled or disabled, why, since when it
//! fails, since when something waits for a recovery), what waits for
//! each, and a person's enable, disable and recovery.
//!
//! A recovery since T picks every queue row that failed, was paused or
//! gave up at T or later (`outbox.failed_at`), whenever its event was
//! decided. Its changes to the events' sums are relative, as the
//! outbox's recording is (another instance may record meanwhile on
//! PostgreSQL); the events are locked first, in order of id, as the
//! recording locks them.

use super::outbox_reads;
use super::sql::{Conn, Dialect, sql};
use super::views::{DestinationView, EventDelivery, RecoveryView};
use super::{Recovery, Store, StoreError};
use crate::domain::{DestinationState, EventState};
use pointhook_common::clock::rfc3339;

impl Store {
    /// Marks the configured destinations (name, URL as shown), creating
    /// the new ones enabled; writes nothing when the store says so already.
    pub async fn register_destinations(
        &self,
        configured: Vec<(String, String)>,
        now: i64,
    ) -> Result<(), StoreError> {
        let known = self.destinations(now).await?;
        let same = known.len() == configured.len()
            && known.iter().all(|d| {
                configured
                    .iter()
                    .any(|(name, url)| *name == d.name && Some(url) == d.url.as_ref())
            });
        if same {
            return Ok(());
        }
        self.write(move |c| {
            let configured = configured.clone();
            Box::pin(async move { register(c, &configured, now).await })
        })
        .await
    }

    /// The configured destinations, by name, with what waits for each.
    pub async fn destinations(&self, now: i64) -> Result<Vec<DestinationView>, StoreError> {
        self.read(move |c| Box::pin(async move { list(c, None, now).await }))
            .await
    }

    pub async fn destination(
        &self,
        name: &str,
        now: i64,
    ) -> Result<Option<DestinationView>, StoreError> {
        let name = name.to_string();
        let mut one = self
            .read(move |c| Box::pin(async move { list(c, Some(&name), now).await }))
            .await?;
        Ok(one.pop())
    }

    /// Enabled again: new events are sent (what was paused waits for a
    /// recovery, whose default, the failure's start, is kept). `false`: no
    /// such destination.
    pub async fn enable_destination(&self, name: &str, now: i64) -> Result<bool, StoreError> {
        let name = name.to_string();
        let found = self
            .write(move |c| {
                let name = name.clone();
                Box::pin(async move {
                    Ok(c.execute(
                        sql!(
                            "UPDATE destinations SET state = $2, disabled_reason = NULL,
                                 disabled_at = NULL, failing_since = NULL, updated_at = $3
                             WHERE name = $1 AND configured = $4"
                        ),
                        &[&name, &DestinationState::Enabled, &now, &true],
                    )
                    .await?
                        == 1)
                })
            })
            .await?;
        if found {
            self.wake_outboxes().await;
        }
        Ok(found)
    }

    /// Disabled by a person, for `reason`: its events wait as paused.
    /// `false`: no such destination.
    pub async fn disable_destination(
        &self,
        name: &str,
        reason: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let (name, reason) = (name.to_string(), reason.to_string());
        self.write(move |c| {
            let (name, reason) = (name.clone(), reason.clone());
            Box::pin(async move { disable(c, &name, &reason, now).await })
        })
        .await
    }

    /// Sends again every event for `name` that failed, was paused or gave
    /// up since `since` (unix ms; `None`: since the failure's start),
    /// whenever it was decided, oldest first.
    pub async fn recover_destination(
        &self,
        name: &str,
        since: Option<i64>,
        now: i64,
    ) -> Result<Recovery, StoreError> {
        let name = name.to_string();
        let answer = self
            .write(move |c| {
                let name = name.clone();
                Box::pin(async move { recover(c, &name, since, now).await })
            })
            .await?;
        if matches!(answer, Recovery::Queued(n) if n > 0) {
            self.wake_outboxes().await;
        }
        Ok(answer)
    }

    /// Each destination an event goes to, with its own attempts and state.
    pub async fn event_deliveries(&self, id: String) -> Result<Vec<EventDelivery>, StoreError> {
        self.read(move |c| Box::pin(async move { outbox_reads::event_deliveries(c, &id).await }))
            .await
    }
}

/// Marks the configured destinations (their URLs as shown), creating the
/// new ones enabled; those no longer configured keep their rows.
async fn register(
    c: &Conn<'_>,
    configured: &[(String, String)],
    now: i64,
) -> Result<(), StoreError> {
    c.execute(sql!("UPDATE destinations SET configured = $1"), &[&false])
        .await?;
    for (name, url) in configured {
        c.execute(
            sql!(
                "INSERT INTO destinations (name, url, configured, state, updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (name) DO UPDATE SET url = excluded.url, configured = excluded.configured"
            ),
            &[name, url, &true, &DestinationState::Enabled, &now],
        )
        .await?;
    }
    Ok(())
}

/// The configured destinations (or the one named), by name.
async fn list(
    c: &Conn<'_>,
    name: Option<&str>,
    now: i64,
) -> Result<Vec<DestinationView>, StoreError> {
    type Asked = (Option<i64>, Option<i64>, Option<i64>);
    let rows: Vec<(DestinationView, Asked)> = c
        .query(
            sql!(
                "SELECT d.name, d.url, d.state, d.disabled_reason, d.disabled_at, d.failing_since,
                        d.last_success_at, d.recovery_since, d.recovery_at, d.recovery_queued,
                        (SELECT count(*) FROM outbox o
                         WHERE o.destination = d.name AND o.state IN ($2, $3)),
                        (SELECT count(*) FROM outbox o
                         WHERE o.destination = d.name AND o.state = $3),
                        (SELECT count(*) FROM outbox o
                         WHERE o.destination = d.name AND o.state = $4),
                        (SELECT min(created_at) FROM outbox o
                         WHERE o.destination = d.name AND o.state IN ($2, $3)),
                        d.outage_since
                 FROM destinations d
                 WHERE d.configured = $5 AND (CAST($1 AS TEXT) IS NULL OR d.name = $1)
                 ORDER BY d.name"
            ),
            &[
                &name,
                &EventState::Pending,
                &EventState::Paused,
                &EventState::Dead,
                &true,
            ],
            |r| {
                let state: DestinationState = r.get(2)?;
                let at = |i| -> Result<Option<String>, StoreError> {
                    Ok(r.get::<Option<i64>>(i)?.map(rfc3339))
                };
                let oldest: Option<i64> = r.get(13)?;
                let (disabled_at, failing_since, outage_since) = (at(4)?, at(5)?, at(14)?);
                Ok((
                    DestinationView {
                        name: r.get(0)?,
                        url: r.get(1)?,
                        state: state.as_str(),
                        disabled_reason: r.get(3)?,
                        recover_since: outage_since
                            .clone()
                            .or_else(|| failing_since.clone())
                            .or_else(|| disabled_at.clone()),
                        disabled_at,
                        failing_since,
                        outage_since,
                        last_success_at: at(6)?,
                        backlog: r.get(10)?,
                        paused: r.get(11)?,
                        gave_up: r.get(12)?,
                        oldest_event: oldest.map(rfc3339),
                        oldest_seconds: oldest.map_or(0, |t| (now - t).max(0) / 1000),
                        recovery: None,
                    },
                    (r.get(7)?, r.get(8)?, r.get(9)?),
                ))
            },
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for (mut view, asked) in rows {
        if let (Some(since), Some(at), Some(queued)) = asked {
            view.recovery = Some(progress(c, &view.name, since, at, queued).await?);
        }
        out.push(view);
    }
    Ok(out)
}

/// How far the last recovery got: the rows it queued again (their clock
/// started at `at`) and where each is now.
async fn progress(
    c: &Conn<'_>,
    name: &str,
    since: i64,
    at: i64,
    queued: i64,
) -> Result<RecoveryView, StoreError> {
    let (delivered, waiting, gave_up) = c
        .query_one(
            sql!(
                "SELECT count(*) FILTER (WHERE state = $3),
                        count(*) FILTER (WHERE state IN ($4, $5)),
                        count(*) FILTER (WHERE state = $6)
                 FROM outbox WHERE destination = $1 AND queued_at = $2"
            ),
            &[
                &name,
                &at,
                &EventState::Delivered,
                &EventState::Pending,
                &EventState::Paused,
                &EventState::Dead,
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .await?;
    Ok(RecoveryView {
        since: rfc3339(since),
        asked_at: rfc3339(at),
        queued,
        delivered,
        waiting,
        gave_up,
    })
}

/// Disables `name` (if enabled) and pauses its pending events: each
/// paused now, the failure's start kept for the recovery. `false`: no
/// such destination.
async fn disable(c: &Conn<'_>, name: &str, reason: &str, now: i64) -> Result<bool, StoreError> {
    let known: bool = c
        .query_one(
            sql!("SELECT EXISTS (SELECT 1 FROM destinations WHERE name = $1 AND configured = $2)"),
            &[&name, &true],
            |r| r.get(0),
        )
        .await?;
    if !known {
        return Ok(false);
    }
    c.execute(
        sql!(
            "UPDATE destinations SET state = $2, disabled_reason = $3, disabled_at = $4,
                 outage_since = coalesce(outage_since, failing_since, $4), updated_at = $4
             WHERE name = $1 AND state = $5"
        ),
        &[
            &name,
            &DestinationState::Disabled,
            &reason,
            &now,
            &DestinationState::Enabled,
        ],
    )
    .await?;
    c.execute(
        sql!(
            "UPDATE outbox SET state = $2, lease_until = NULL, failed_at = $4
             WHERE destination = $1 AND state = $3"
        ),
        &[&name, &EventState::Paused, &EventState::Pending, &now],
    )
    .await?;
    Ok(true)
}

/// The queue rows a recovery of `$1` since `$5` picks: paused, given up,
/// or failed and waiting to be tried again, at `$5` or later.
const PICKED: &str = "destination = $1
    AND (state IN ($2, $3) OR (state = $4 AND attempts > 0))
    AND coalesce(failed_at, created_at) >= $5";

async fn recover(
    c: &Conn<'_>,
    name: &str,
    since: Option<i64>,
    now: i64,
) -> Result<Recovery, StoreError> {
    let lock = c.dialect().pick("", " FOR UPDATE");
    /// Its state, and when its failure began, it began failing, it was
    /// disabled.
    type Known = (DestinationState, Option<i64>, Option<i64>, Option<i64>);
    let found: Option<Known> = c
        .query_opt(
            &format!(
                "SELECT state, outage_since, failing_since, disabled_at FROM destinations
                 WHERE name = $1 AND configured = $2{lock}"
            ),
            &[&name, &true],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .await?;
    let since = match found {
        None => return Ok(Recovery::NotFound),
        Some((DestinationState::Disabled, ..)) => return Ok(Recovery::Disabled),
        // Nothing known of a failure: whatever waits, however old.
        Some((DestinationState::Enabled, outage, failing, disabled)) => {
            since.or(outage).or(failing).or(disabled).unwrap_or(0)
        }
    };
    let (paused, dead, pending) = (EventState::Paused, EventState::Dead, EventState::Pending);
    let picked: [&dyn super::sql::Param; 5] = [&name, &paused, &dead, &pending, &since];
    if c.dialect() == Dialect::Postgres {
        c.query(
            &format!(
                "SELECT id FROM events WHERE id IN (SELECT event_id FROM outbox WHERE {PICKED})
                 ORDER BY id FOR UPDATE"
            ),
            &picked,
            |_| Ok(()),
        )
        .await?;
    }
    // A row that gave up counts as unfinished again on its event.
    c.execute(
        &format!(
            "UPDATE events SET unfinished = unfinished + 1, gave_up = gave_up - 1
             WHERE id IN (SELECT event_id FROM outbox WHERE {PICKED} AND state = $3)"
        ),
        &picked,
    )
    .await?;
    c.execute(
        &format!(
            "UPDATE events SET state = $4, delivered_at = NULL
             WHERE id IN (SELECT event_id FROM outbox WHERE {PICKED})"
        ),
        &picked,
    )
    .await?;
    // Due at once, oldest first (each is due at its creation), its give-up
    // clock started over; one out for an attempt keeps its lease.
    let queued = c
        .execute(
            &format!(
                "UPDATE outbox SET state = $4, next_attempt_at = created_at, queued_at = $6,
                     failed_at = NULL, lease_until = CASE WHEN state = $4 THEN lease_until END
                 WHERE {PICKED}"
            ),
            &[&name, &paused, &dead, &pending, &since, &now],
        )
        .await?;
    c.execute(
        sql!(
            "UPDATE destinations SET recovery_since = $2, recovery_at = $3, recovery_queued = $4,
                 outage_since = NULL, updated_at = $3
             WHERE name = $1"
        ),
        &[&name, &since, &now, &(queued as i64)],
    )
    .await?;
    Ok(Recovery::Queued(queued))
}
