//! The sandbox: a local emulator of the notification service (DESIGN
//! section 7). It serves the platform's resources API, a control API under
//! `/sandbox/…` to create and change resources, and dispatches IPNs and
//! webhooks on the platform's retry schedule, scaled by `time_scale`.
//!
//! Its own crate: it shares only `pointhook-common` with the receiver, and
//! the receiver never depends on it.
//!
//! - `routes`: the two route tables behind one handler; `db`: state in
//!   SQLite; `resources`: the platform API's route table (one function per
//!   route, the work mostly in a module of its own: `payments` updates,
//!   `refunds`, `merchant_orders`, `devices`, `terminals`, `search`,
//!   `orders`); `control`: the control API's table; `shapes`: notification bodies as the
//!   platform sends them; `dispatch`: the queue, the schedule and the
//!   attempts; `terminals`: emulated Point terminals moving intents;
//!   `quirks`: the platform's misbehaviours, on demand; `clock`: the clock
//!   testers advance.
//!
//! Time comes from the clock it is given, so tests can run the whole
//! 96-hour schedule on a virtual clock (`run_due`, `run_terminals` after
//! advancing it, or `advance`, which runs whatever falls due on the way).

mod accounts;
mod changes;
pub mod clock;
mod control;
pub mod db;
mod devices;
pub mod dispatch;
pub mod faults;
mod intents;
pub mod mail;
mod merchant_orders;
mod orders;
mod payments;
pub mod quirks;
mod refunds;
mod resources;
mod routes;
mod search;
pub mod shapes;
mod sql_enum;
pub mod terminals;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use db::Db;
use pointhook_common::clock::Clock;
use pointhook_common::serve::Limits;

/// Every event group an account can select.
pub const EVENT_GROUPS: &[&str] = &[
    "payment",
    "merchant_orders",
    "chargebacks",
    "point_integration_ipn",
    "delivery_cancellation",
];

/// One account of the emulated platform.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountSpec {
    pub name: String,
    pub token: String,
    /// The account's IPN URL, as set in the dashboard.
    #[serde(default)]
    pub notification_url: Option<String>,
    /// Where payment-intent webhooks go; setting it activates Point
    /// Integrations events.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// Sign webhooks (`x-signature`) with this secret.
    #[serde(default)]
    pub webhook_secret: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    /// Event groups sent to `notification_url`; all when absent.
    #[serde(default)]
    pub groups: Option<Vec<String>>,
    #[serde(default)]
    pub devices: Vec<String>,
}

/// `pointhook sandbox --config FILE`: the same settings as the flags, and
/// several accounts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFile {
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    #[serde(default)]
    pub time_scale: Option<f64>,
    #[serde(default)]
    pub state: Option<PathBuf>,
    #[serde(default)]
    pub accounts: Vec<AccountSpec>,
}

#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// 1.0 is real time; 0.01 makes 15 minutes 9 seconds (windows too).
    pub time_scale: f64,
    /// `None`: in memory.
    pub state: Option<PathBuf>,
    pub accounts: Vec<AccountSpec>,
    /// Run the dispatcher loop (off: tests call `run_due`).
    pub dispatch_loop: bool,
    /// How device e-mails leave.
    pub mail: mail::MailSettings,
    /// Send retries with the first attempt's signature instead of signing
    /// each anew (to test a receiver's timestamp tolerance).
    pub resend_first_signature: bool,
}

pub struct Sandbox {
    db: Db,
    clock: Arc<dyn Clock>,
    time_scale: f64,
    /// `http://host:port` the sandbox is reached at (resource URLs in IPNs).
    base_url: String,
    http: reqwest::Client,
    wake: Notify,
    dispatch_loop: bool,
    mail: mail::MailSettings,
    faults: faults::Faults,
    resend_first_signature: bool,
    /// Held by a round of the dispatcher loop and by a clock advance, so
    /// the two never take the same work.
    rounds: tokio::sync::Mutex<()>,
}

impl Sandbox {
    pub async fn new(
        settings: SandboxSettings,
        clock: Arc<dyn Clock>,
        base_url: String,
    ) -> anyhow::Result<Arc<Sandbox>> {
        anyhow::ensure!(
            settings.time_scale > 0.0 && settings.time_scale.is_finite(),
            "time scale must be a positive number"
        );
        for a in &settings.accounts {
            if let Some(groups) = &a.groups
                && let Some(bad) = groups.iter().find(|g| !EVENT_GROUPS.contains(&g.as_str()))
            {
                anyhow::bail!(
                    "account {:?}: unknown event group {bad:?} (known: {})",
                    a.name,
                    EVENT_GROUPS.join(", ")
                );
            }
        }
        let db = Db::open(settings.state.as_deref())?;
        let accounts = settings.accounts.clone();
        db.call(move |conn| {
            let tx = conn.transaction()?;
            // Quirks are about this run: the flags set them anew.
            quirks::clear(&tx)?;
            for a in &accounts {
                let groups = serde_json::to_string(a.groups.as_deref().unwrap_or(
                    &EVENT_GROUPS.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
                ))
                .unwrap_or_else(|_| "[]".into());
                tx.execute(
                    "INSERT INTO accounts (name, token, notification_url, webhook_url, webhook_secret, email, groups)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (name) DO UPDATE SET token = excluded.token,
                         notification_url = excluded.notification_url, webhook_url = excluded.webhook_url,
                         webhook_secret = excluded.webhook_secret, email = excluded.email, groups = excluded.groups",
                    rusqlite::params![a.name, a.token, a.notification_url, a.webhook_url, a.webhook_secret, a.email, groups],
                )?;
                for d in &a.devices {
                    accounts::add_device(&tx, &a.name, d)?;
                }
            }
            tx.commit()
        })
        .await?;
        pointhook_common::tls::install_default_provider();
        Ok(Arc::new(Sandbox {
            db,
            clock,
            time_scale: settings.time_scale,
            base_url,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            wake: Notify::new(),
            dispatch_loop: settings.dispatch_loop,
            mail: settings.mail,
            faults: faults::Faults::default(),
            resend_first_signature: settings.resend_first_signature,
            rounds: tokio::sync::Mutex::new(()),
        }))
    }

    pub fn now(&self) -> i64 {
        pointhook_common::clock::unix_ms(self.clock.now())
    }

    /// Fault injection and the log of calls to the resources API.
    pub fn faults(&self) -> &faults::Faults {
        &self.faults
    }

    /// Adds `patch` to the quirks of `account` (of every account: `None`).
    pub async fn set_quirks(
        &self,
        account: Option<String>,
        patch: quirks::QuirkSet,
    ) -> anyhow::Result<()> {
        self.db
            .call(move |c| quirks::set(c, account.as_deref(), patch))
            .await
    }

    /// Sets a resource exactly as the API will serve it, for tests that
    /// need shapes the control API does not make. It blocks the calling
    /// thread for one small write.
    pub fn set_resource(
        &self,
        account: &str,
        kind: &str,
        id: &str,
        body: &serde_json::Value,
    ) -> anyhow::Result<()> {
        self.db
            .call_blocking(|c| db::put_resource(c, kind, id, account, body, None))
    }

    /// Sandbox time scaled to the real duration it takes.
    pub fn scaled(&self, d: Duration) -> Duration {
        d.mul_f64(self.time_scale)
    }

    /// Serves `listener` and runs the dispatcher until `shutdown`.
    pub async fn serve(self: Arc<Self>, listener: TcpListener, shutdown: CancellationToken) {
        let dispatcher = self
            .dispatch_loop
            .then(|| tokio::spawn(self.clone().dispatch_forever(shutdown.clone())));
        let limits = Limits {
            read_timeout: Duration::from_secs(10),
            max_connections: 256,
            max_connections_per_ip: 0,
            drain_timeout: Duration::from_secs(5),
        };
        pointhook_common::serve::serve_with(
            listener,
            &limits,
            Arc::new(routes::Routes::new(self)),
            shutdown,
        )
        .await;
        if let Some(d) = dispatcher {
            let _ = d.await;
        }
    }
}

/// A made-up access token.
pub fn random_token() -> String {
    shapes::random_hex(16)
}
