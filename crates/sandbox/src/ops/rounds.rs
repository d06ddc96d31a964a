//! The sandbox's background round, on its clock: order steps first (the
//! webhooks they queue go in the same round), then the dispatch attempts
//! due, device e-mails and the emulated terminals; and the loop that runs
//! a round whenever something falls due or is queued.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::sandbox::Sandbox;

/// The longest the loop sleeps with nothing due.
const IDLE_MAX: Duration = Duration::from_secs(1);

impl Sandbox {
    /// Runs the order steps due, then sends every attempt due now and
    /// waits for their outcomes; returns how many attempts were sent.
    pub async fn run_due(self: &Arc<Self>) -> anyhow::Result<usize> {
        if let Err(e) = self.run_order_steps().await {
            tracing::error!(error = %e, "cannot run the orders' steps");
        }
        self.send_due().await
    }

    pub(crate) async fn dispatch_forever(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            {
                let _round = self.rounds.lock().await;
                if let Err(e) = self.run_due().await {
                    tracing::error!(error = %e, "dispatcher failed");
                }
                if let Err(e) = self.send_due_mails().await {
                    tracing::error!(error = %e, "mailer failed");
                }
                if let Err(e) = self.run_terminals().await {
                    tracing::error!(error = %e, "emulated terminals failed");
                }
            }
            let next_dispatch = self.next_dispatch().await.ok().flatten();
            let next_step = self.next_terminal_step().await.ok().flatten();
            let next = next_dispatch.into_iter().chain(next_step).min();
            // Sandbox time to real time: the clock moves at real speed.
            let wait =
                next.map_or(IDLE_MAX, |at| {
                    Duration::from_millis(
                        (at - self.now()).clamp(0, IDLE_MAX.as_millis() as i64) as u64
                    )
                });
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => return,
            }
        }
    }
}
