//! The outbox: POSTs each decided event to every destination that takes
//! it, signed the Standard Webhooks way (`sign`), until a 2xx; retries
//! with backoff (a `429`/`503`'s `Retry-After` honoured, bounded) and
//! gives up after `give_up_after_hours`. A destination is its own queue
//! (`dispatch`): a slow or failing one never delays another. The event id
//! is the `webhook-id`, the same at every destination and on every
//! attempt, so a receiver can drop repeats.

mod dispatch;
pub mod sign;

use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Destination;
use crate::store::{Store, StoreError};
use dispatch::Dispatcher;
use pointhook_common::clock::Clock;

pub use sign::{sign, signatures};

pub struct Outbox {
    store: Store,
    dispatchers: Vec<Arc<Dispatcher>>,
}

impl Outbox {
    /// One queue per destination; `None` when there is none.
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        destinations: Vec<Destination>,
    ) -> anyhow::Result<Option<Outbox>> {
        if destinations.is_empty() {
            return Ok(None);
        }
        pointhook_common::tls::install_default_provider();
        let dispatchers = destinations
            .into_iter()
            .map(|d| Dispatcher::new(store.clone(), clock.clone(), d).map(Arc::new))
            .collect::<anyhow::Result<_>>()?;
        Ok(Some(Outbox { store, dispatchers }))
    }

    /// Attempts one batch of the events due now at every destination, and
    /// records how each ended; returns how many were attempted.
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let mut n = 0;
        for d in &self.dispatchers {
            n += d.deliver_due().await?;
        }
        Ok(n)
    }

    /// The same, at the destination `name` alone.
    pub async fn deliver_due_to(&self, name: &str) -> Result<usize, StoreError> {
        match self.dispatchers.iter().find(|d| d.destination.name == name) {
            Some(d) => d.deliver_due().await,
            None => Ok(0),
        }
    }

    /// Runs every destination's queue until `shutdown`; a wake-up from the
    /// store (an event queued, a destination enabled or recovered) reaches
    /// each of them.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tasks = JoinSet::new();
        for d in &self.dispatchers {
            tasks.spawn(d.clone().run(shutdown.clone()));
        }
        let relay = async {
            loop {
                tokio::select! {
                    () = self.store.event_ready() => {
                        for d in &self.dispatchers {
                            d.ready.notify_one();
                        }
                    }
                    () = shutdown.cancelled() => return,
                }
            }
        };
        relay.await;
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = done {
                tracing::error!(error = %e, "a destination's queue failed to run");
            }
        }
        tracing::info!("outbox stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::dispatch::shares;

    #[test]
    fn the_batches_out_at_once_never_exceed_max_in_flight() {
        for max in 1..=1024 {
            let (rounds, batch) = shares(max);
            assert!(rounds * batch <= max, "{max}: {rounds} x {batch}");
            assert!(rounds >= 1 && batch >= 1);
        }
        // The default: two batches of 32, as before the setting.
        assert_eq!(shares(64), (2, 32));
        assert_eq!(shares(1), (1, 1));
    }
}
