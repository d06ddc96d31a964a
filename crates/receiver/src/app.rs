//! `App`: a ready-to-run pointhook, wired from a configuration: storage
//! open, listeners bound, and on `run` the listener, worker, outbox,
//! sweeper, alerter, sampler and retention tasks until shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::api::ApiClient;
use crate::config::Config;
use crate::http::ingest::{Accounts, Ingest};
use crate::outbox::Outbox;
use crate::store::Store;
use crate::worker::{Worker, WorkerSettings};
use crate::{alerts, http, metrics, reconcile, rules, samples, store, systemd};
use pointhook_common::clock::{Clock, SystemClock};

/// What tests (and embedders) may swap out.
pub struct Options {
    pub clock: Arc<dyn Clock>,
    /// The admin API's listener; `None` binds `[admin] listen` (when the
    /// section is present).
    pub admin_listener: Option<TcpListener>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clock: Arc::new(SystemClock),
            admin_listener: None,
        }
    }
}

/// A ready-to-run pointhook: storage open, listener bound.
pub struct App {
    config: Config,
    listener: TcpListener,
    admin_listener: Option<TcpListener>,
    store: Store,
    options: Options,
    worker: Arc<Worker>,
    outbox: Option<Arc<Outbox>>,
    metrics: Arc<metrics::Metrics>,
    api: Arc<ApiClient>,
    sweep: reconcile::SharedStatus,
    alerter: Option<Arc<alerts::alerter::Alerter>>,
}

impl App {
    /// Opens storage for `config` and takes `listener` for notifications.
    pub async fn new(
        config: Config,
        listener: TcpListener,
        mut options: Options,
    ) -> anyhow::Result<App> {
        let admin_listener = match (&config.admin, options.admin_listener.take()) {
            (None, _) => None,
            (Some(_), Some(l)) => Some(l),
            (Some(a), None) => Some(
                TcpListener::bind(a.listen)
                    .await
                    .with_context(|| format!("cannot listen on {} (admin.listen)", a.listen))?,
            ),
        };
        let destinations = config.destinations()?;
        let store = Store::open(
            &config.location()?,
            rules::decision_rules(config.event_policy()),
        )
        .await
        .context("cannot open storage")?;
        store
            .register_destinations(
                destinations
                    .iter()
                    .map(|d| (d.name.clone(), d.masked_url()))
                    .collect(),
                store::unix_ms(options.clock.now()),
            )
            .await
            .context("cannot record the destinations")?;
        let accounts = config.resolve_accounts()?;
        let metrics = Arc::new(metrics::Metrics::new());
        let api = Arc::new(
            ApiClient::new(&config.api, &accounts, metrics.clone())
                .context("cannot build the API client")?
                .with_clock(options.clock.clone()),
        );
        let worker = Arc::new(Worker::new(
            store.clone(),
            api.clone(),
            options.clock.clone(),
            WorkerSettings {
                concurrency: config.worker.concurrency,
                max_attempts: config.worker.max_attempts,
                lease: Duration::from_secs(config.worker.lease_secs),
                drain: Duration::from_secs(config.server.drain_timeout_secs),
                policies: accounts
                    .iter()
                    .map(|a| (a.name.clone(), a.policy.clone()))
                    .collect(),
                metrics: metrics.clone(),
            },
        ));
        let outbox = Outbox::new(store.clone(), options.clock.clone(), destinations)
            .context("cannot build the destinations' clients")?
            .map(Arc::new);
        let alerter = match config.alerting()? {
            Some(a) => {
                let channels = a
                    .channels
                    .iter()
                    .map(alerts::Channel::build)
                    .collect::<Result<Vec<_>, String>>()
                    .map_err(|e| anyhow::anyhow!("cannot set up [[alerts]]: {e}"))?;
                Some(Arc::new(alerts::alerter::Alerter::new(
                    store.clone(),
                    options.clock.clone(),
                    metrics.clone(),
                    alerts::alerter::AlerterSettings::from_config(&a),
                    channels,
                )))
            }
            None => None,
        };
        Ok(App {
            config,
            listener,
            admin_listener,
            store,
            options,
            worker,
            outbox,
            metrics,
            api,
            sweep: reconcile::SharedStatus::default(),
            alerter,
        })
    }

    /// The alerter (with `[[alerts]]`), to drive a round at once.
    pub fn alerter(&self) -> Option<Arc<alerts::alerter::Alerter>> {
        self.alerter.clone()
    }

    /// The worker, to drive one job at a time (`Worker::run_one`) when the
    /// loop is off (`[worker] enabled = false`).
    pub fn worker(&self) -> Arc<Worker> {
        self.worker.clone()
    }

    pub fn outbox(&self) -> Option<Arc<Outbox>> {
        self.outbox.clone()
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Serves until `shutdown` is cancelled, drains, then closes storage.
    pub async fn run(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let App {
            config,
            listener,
            admin_listener,
            store,
            options,
            worker,
            outbox,
            metrics,
            api,
            sweep,
            alerter,
        } = self;
        let accounts = config.resolve_accounts()?;
        let s = &config.server;
        let settings = http::ServerSettings {
            path: s.path.clone(),
            read_timeout: Duration::from_secs(s.read_timeout_secs),
            max_connections: s.max_connections,
            max_connections_per_ip: s.max_connections_per_ip,
            drain_timeout: Duration::from_secs(s.drain_timeout_secs),
            rate_limit_per_ip: s.rate_limit_per_ip,
        };
        let admin = match (admin_listener, config.admin_token()?) {
            (Some(l), Some(token)) => {
                let admin_config = config.admin.as_ref();
                let bound = l.local_addr().context("admin listener has no address")?;
                let handler = Arc::new(http::admin::AdminHandler {
                    hosts: http::admin::AdminHandler::hosts(
                        bound,
                        admin_config.and_then(|a| a.public_url.as_ref()),
                    ),
                    read_timeout: Duration::from_secs(s.read_timeout_secs),
                    max_body_bytes: s.max_body_bytes,
                    router: http::admin::router(http::admin::AdminState {
                        store: store.clone(),
                        token,
                        clock: options.clock.clone(),
                        metrics: metrics.clone(),
                        default_account: Accounts::new(accounts.clone()).default_name(),
                        accounts: accounts.iter().map(|a| a.name.clone()).collect(),
                        sweep: config.reconcile_enabled().then(|| sweep.clone()),
                        session_idle: Duration::from_secs(
                            config.admin.as_ref().map_or(1800, |a| a.session_idle_secs),
                        ),
                        secure_cookies: config
                            .admin
                            .as_ref()
                            .and_then(|a| a.public_url.as_ref())
                            .is_some_and(|u| u.scheme() == "https"),
                    }),
                });
                tracing::info!(listen = %l.local_addr().context("admin listener has no address")?, "admin API serving");
                let limits = settings.limits();
                let shutdown = shutdown.clone();
                Some(tokio::spawn(async move {
                    pointhook_common::serve::serve_with(l, &limits, handler, shutdown).await;
                }))
            }
            _ => None,
        };
        let ingest = Ingest {
            store: store.clone(),
            accounts: Accounts::new(accounts),
            max_body_bytes: s.max_body_bytes,
            read_timeout: Duration::from_secs(s.read_timeout_secs),
            clock: options.clock.clone(),
            metrics: metrics.clone(),
        };
        tracing::info!(
            listen = %listener.local_addr().context("listener has no address")?,
            path = %s.path,
            worker = config.worker.enabled,
            "pointhook serving"
        );
        let worker = config
            .worker
            .enabled
            .then(|| tokio::spawn(worker.run(shutdown.clone())));
        // The ingest role (`[worker] enabled = false`) dispatches nothing.
        let outbox = outbox
            .filter(|_| config.worker.enabled)
            .map(|o| tokio::spawn(o.run(shutdown.clone())));
        let sweeper = config.reconcile_enabled().then(|| {
            let r = &config.reconcile;
            let sweeper = reconcile::Sweeper {
                store: store.clone(),
                api,
                metrics: metrics.clone(),
                settings: reconcile::SweeperSettings {
                    accounts: config.accounts.iter().map(|a| a.name.clone()).collect(),
                    interval: Duration::from_secs(r.interval_secs),
                    lookback: Duration::from_secs(r.lookback_secs),
                    grace: Duration::from_secs(r.grace_secs),
                },
                status: sweep,
                clock: options.clock.clone(),
            };
            tokio::spawn(sweeper.run(shutdown.clone()))
        });
        let alerter = alerter.map(|a| tokio::spawn(a.run(shutdown.clone())));
        let sampler = tokio::spawn(
            samples::Sampler {
                store: store.clone(),
                metrics: metrics.clone(),
                clock: options.clock.clone(),
                instance: samples::Sampler::instance_name(),
            }
            .run(shutdown.clone()),
        );
        let watchdog = tokio::spawn(systemd::watchdog(store.clone(), shutdown.clone()));
        let retention = tokio::spawn(retention(
            store.clone(),
            options.clock.clone(),
            Duration::from_secs(config.storage.retention_days * 86_400),
            shutdown.clone(),
        ));
        systemd::ready();
        let stopping = shutdown.clone();
        tokio::spawn(async move {
            stopping.cancelled().await;
            systemd::stopping();
        });
        http::serve(listener, settings, ingest, shutdown).await;
        let _ = watchdog.await;
        let _ = retention.await;
        let _ = sampler.await;
        for task in [worker, outbox, sweeper, alerter, admin]
            .into_iter()
            .flatten()
        {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "a background task failed");
            }
        }
        store.close().await;
        tracing::info!("pointhook stopped");
        Ok(())
    }
}

/// Prunes what finished longer than `keep` ago, at start and then hourly.
async fn retention(
    store: Store,
    clock: Arc<dyn Clock>,
    keep: Duration,
    shutdown: CancellationToken,
) {
    let mut every = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = shutdown.cancelled() => return,
        }
        let cutoff = store::unix_ms(clock.now()) - keep.as_millis() as i64;
        match store.prune(cutoff).await {
            Ok(p) if p.total() > 0 => tracing::info!(
                deliveries = p.deliveries,
                jobs = p.jobs,
                events = p.events,
                fetches = p.fetches,
                "pruned what finished before the retention period"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "pruning failed; will try again in an hour"),
        }
    }
}
