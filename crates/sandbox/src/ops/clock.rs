//! The clock testers control (`--clock manual`): reading it, and advancing
//! it through everything that falls due on the way (dispatch attempts and
//! retries, order steps, terminal steps, device e-mails), in order of due
//! time, so a test walks the 96-hour schedule in milliseconds.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::mail::EMAIL_DELAY;
use super::sandbox::Sandbox;
use crate::state::{Result, Tx, devices, dispatches, mails, orders};
use pointhook_common::clock::rfc3339;

/// The longest single advance: 30 days, well past the 96-hour schedule.
pub const MAX_ADVANCE: Duration = Duration::from_secs(30 * 24 * 3600);
/// Rounds run at one instant before the clock moves on, at most: work due
/// now can queue more work due now (a terminal's final step queues its
/// webhooks), but never without end.
const MAX_ROUNDS_PER_INSTANT: usize = 1_000;

/// Why an advance was refused.
#[derive(Debug)]
pub enum Refused {
    NotManual,
}

/// What an advance fired.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Fired {
    pub attempts: usize,
    pub order_steps: usize,
    pub terminal_steps: usize,
    pub mails: usize,
}

#[derive(Debug, Serialize)]
pub struct Advanced {
    pub now: String,
    pub manual: bool,
    /// The instants the clock stopped at to run what fell due.
    pub stops: usize,
    pub fired: Fired,
}

impl Sandbox {
    /// `GET /sandbox/clock`.
    pub fn clock_state(&self) -> serde_json::Value {
        serde_json::json!({
            "now": rfc3339(self.now()),
            "manual": self.clock.manual().is_some(),
            "time_scale": self.time_scale,
        })
    }

    /// Moves a manual clock `by` ahead, stopping at each due time on the way
    /// to run what falls due there.
    pub async fn advance(
        self: &Arc<Self>,
        by: Duration,
    ) -> anyhow::Result<Result<Advanced, Refused>> {
        let Some(clock) = self.clock.manual() else {
            return Ok(Err(Refused::NotManual));
        };
        // The dispatcher loop waits its turn: one round at a time, so a
        // mail or an attempt is never taken twice.
        let _round = self.rounds.lock().await;
        let target = self
            .now()
            .saturating_add(i64::try_from(by.as_millis()).unwrap_or(i64::MAX));
        let mut fired = Fired::default();
        let mut stops = 0;
        loop {
            self.run_instant(&mut fired).await;
            stops += 1;
            let now = self.now();
            let mail_delay = self.scaled(EMAIL_DELAY).as_millis() as i64;
            let next = self
                .db
                .call(move |tx| next_due_after(tx, now, mail_delay))
                .await?;
            let to = match next {
                Some(at) if at <= target => at,
                _ => target,
            };
            clock.advance(Duration::from_millis((to - now).max(0) as u64));
            if to == target {
                self.run_instant(&mut fired).await;
                break;
            }
        }
        Ok(Ok(Advanced {
            now: rfc3339(self.now()),
            manual: true,
            stops,
            fired,
        }))
    }

    /// Runs everything due at the clock's current instant, again while a
    /// round queues more that is due at once.
    async fn run_instant(self: &Arc<Self>, fired: &mut Fired) {
        for _ in 0..MAX_ROUNDS_PER_INSTANT {
            let mut n = 0;
            // Steps first: the webhooks they queue go in this round.
            match self.run_order_steps().await {
                Ok(k) => {
                    fired.order_steps += k;
                    n += k;
                }
                Err(e) => tracing::error!(error = %e, "cannot run the orders' steps"),
            }
            match self.run_terminals().await {
                Ok(k) => {
                    fired.terminal_steps += k;
                    n += k;
                }
                Err(e) => tracing::error!(error = %e, "emulated terminals failed"),
            }
            match self.send_due().await {
                Ok(k) => {
                    fired.attempts += k;
                    n += k;
                }
                Err(e) => tracing::error!(error = %e, "dispatcher failed"),
            }
            match self.send_due_mails().await {
                Ok(k) => {
                    fired.mails += k;
                    n += k;
                }
                Err(e) => tracing::error!(error = %e, "mailer failed"),
            }
            if n == 0 {
                return;
            }
        }
    }
}

/// The first time after `now` at which anything falls due: a dispatch
/// attempt, an order step, a terminal step or a device e-mail.
fn next_due_after(tx: &Tx<'_>, now: i64, mail_delay: i64) -> Result<Option<i64>> {
    Ok([
        dispatches::next_due_at(tx, Some(now))?,
        devices::next_step_at(tx, Some(now))?,
        orders::next_step_after(tx, now)?,
        mails::next_after(tx, now, mail_delay)?,
    ]
    .into_iter()
    .flatten()
    .min())
}
