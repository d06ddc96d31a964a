//! pointhook receives a payment platform's notifications (IPN and webhooks),
//! stores each durably before answering 200, and turns them into decisions
//! for the merchant's own system.
//!
//! Code map (see ARCHITECTURE.md for the flow and the invariants):
//! - [`cli`]: the command line; `main.rs` only calls it.
//! - [`config`]: the TOML configuration, environment overrides, validation.
//! - [`http`]: the notification listener: classify, verify, persist, ack.
//! - [`store`]: the only module with SQL: migrations, the group-commit
//!   writer, deliveries and jobs.
//! - [`domain`]: typed ids and the stored state enums.
//! - [`clock`]: the source of "now" that tests can fix.
//!
//! [`App`] wires them: the caller owns the listener and the shutdown token.

pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod http;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use clock::{Clock, SystemClock};
use config::Config;
use http::ingest::{Accounts, Ingest};
use store::Store;

/// What tests (and embedders) may swap out.
pub struct Options {
    pub clock: Arc<dyn Clock>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clock: Arc::new(SystemClock),
        }
    }
}

/// A ready-to-run pointhook: storage open, listener bound.
pub struct App {
    config: Config,
    listener: TcpListener,
    store: Store,
    options: Options,
}

impl App {
    /// Opens storage for `config` and takes `listener` for notifications.
    pub async fn new(
        config: Config,
        listener: TcpListener,
        options: Options,
    ) -> anyhow::Result<App> {
        let path = config.storage.path.clone();
        let store = tokio::task::spawn_blocking(move || Store::open(&path))
            .await
            .context("storage open task failed")?
            .with_context(|| format!("cannot open storage {}", config.storage.path.display()))?;
        Ok(App {
            config,
            listener,
            store,
            options,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Serves until `shutdown` is cancelled, drains, then closes storage.
    pub async fn run(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let App {
            config,
            listener,
            store,
            options,
        } = self;
        let accounts = config.resolve_accounts()?;
        let s = &config.server;
        let settings = http::ServerSettings {
            path: s.path.clone(),
            read_timeout: Duration::from_secs(s.read_timeout_secs),
            max_connections: s.max_connections,
            drain_timeout: Duration::from_secs(s.drain_timeout_secs),
            rate_limit_per_ip: s.rate_limit_per_ip,
        };
        let ingest = Ingest {
            store: store.clone(),
            accounts: Accounts::new(accounts),
            max_body_bytes: s.max_body_bytes,
            read_timeout: Duration::from_secs(s.read_timeout_secs),
            signature_tolerance: http::verify::DEFAULT_TOLERANCE,
            clock: options.clock,
        };
        tracing::info!(
            listen = %listener.local_addr().context("listener has no address")?,
            path = %s.path,
            worker = config.worker.enabled,
            "pointhook serving"
        );
        http::serve(listener, settings, ingest, shutdown).await;
        store.close().await;
        tracing::info!("pointhook stopped");
        Ok(())
    }
}
