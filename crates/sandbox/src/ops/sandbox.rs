//! The sandbox every operation acts on: its state, its clock, how fast its
//! time runs, where it is reached, and the faults and quirks testers set.
//! Made once (`Sandbox::new`); served by `routes`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::faults::Faults;
use crate::model::AccountRow;
use crate::quirks::QuirkSet;
use crate::settings::{EVENT_GROUPS, FIRST_DEVICE, MailSettings, Reach, SandboxSettings};
use crate::state::{Db, accounts, devices, quirks};
use pointhook_common::clock::Clock;

pub struct Sandbox {
    pub(crate) db: Db,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) time_scale: f64,
    /// `http://host:port` the sandbox is reached at (resource URLs in IPNs).
    pub(crate) base_url: String,
    pub(crate) http: reqwest::Client,
    pub(crate) wake: Notify,
    pub(crate) dispatch_loop: bool,
    pub(crate) mail: MailSettings,
    pub(crate) faults: Faults,
    pub(crate) resend_first_signature: bool,
    pub(crate) reach: Reach,
    /// Held by a round of the dispatcher loop and by a clock advance, so
    /// the two never take the same work.
    pub(crate) rounds: tokio::sync::Mutex<()>,
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
        for a in &settings.accounts {
            for url in [&a.notification_url, &a.webhook_url].into_iter().flatten() {
                let parsed = url::Url::parse(url).map_err(|e| {
                    anyhow::anyhow!("account {:?}: {url:?} is not a URL: {e}", a.name)
                })?;
                anyhow::ensure!(
                    settings.reach.may_notify(&parsed),
                    "account {:?}: {url} is not a loopback address; the sandbox notifies loopback only unless it is public (--public)",
                    a.name
                );
            }
        }
        let db = Db::open(settings.state.as_deref())?;
        let specs = settings.accounts.clone();
        db.call(move |tx| {
            // Quirks are about this run: the flags set them anew.
            quirks::clear(tx)?;
            for a in &specs {
                let all: Vec<String> = EVENT_GROUPS.iter().map(|g| g.to_string()).collect();
                let groups = serde_json::to_string(a.groups.as_ref().unwrap_or(&all))
                    .unwrap_or_else(|_| "[]".into());
                accounts::upsert(
                    tx,
                    &accounts::NewAccount {
                        name: &a.name,
                        token: &a.token,
                        notification_url: a.notification_url.as_deref(),
                        webhook_url: a.webhook_url.as_deref(),
                        webhook_secret: a.webhook_secret.as_deref(),
                        email: a.email.as_deref(),
                        groups: &groups,
                    },
                )?;
                devices::add(tx, &a.name, FIRST_DEVICE)?;
                for d in &a.devices {
                    devices::add(tx, &a.name, d)?;
                }
            }
            Ok::<_, crate::state::StateError>(())
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
            faults: Faults::default(),
            resend_first_signature: settings.resend_first_signature,
            reach: settings.reach,
            rounds: tokio::sync::Mutex::new(()),
        }))
    }

    /// The sandbox's time, unix ms.
    pub fn now(&self) -> i64 {
        pointhook_common::clock::unix_ms(self.clock.now())
    }

    /// Fault injection and the log of calls to the resources API.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Adds `patch` to the quirks of `account` (of every account: `None`).
    pub async fn set_quirks(&self, account: Option<String>, patch: QuirkSet) -> anyhow::Result<()> {
        Ok(self
            .db
            .call(move |tx| super::quirk_effects::set(tx, account.as_deref(), patch))
            .await?)
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
        Ok(self
            .db
            .call_blocking(|tx| crate::state::resources::put(tx, kind, id, account, body, None))?)
    }

    /// Sandbox time scaled to the real duration it takes.
    pub fn scaled(&self, d: Duration) -> Duration {
        d.mul_f64(self.time_scale)
    }

    /// Whether the sandbox may send notifications to `url` (a URL it
    /// cannot read is not one).
    pub(crate) fn may_notify(&self, url: &str) -> bool {
        url::Url::parse(url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && self.reach.may_notify(&u))
    }

    /// Whether requests may name `host` (their `Host`): any when public,
    /// else a loopback address, `localhost`, or the name the sandbox was
    /// given for itself.
    pub(crate) fn may_be_called(&self, host: &str) -> bool {
        if self.reach == Reach::Public {
            return true;
        }
        let ours = url::Url::parse(&self.base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string));
        let allowed = pointhook_common::host::AllowedHosts::loopback(None);
        let allowed = match ours {
            Some(h) => allowed.also(&h),
            None => allowed,
        };
        allowed.allows(host.as_bytes())
    }

    /// Wakes the dispatcher: something was queued.
    pub(crate) fn queued(&self) {
        self.wake.notify_one();
    }

    /// The account of a Bearer token.
    pub(crate) async fn account_of_token(
        &self,
        token: String,
    ) -> anyhow::Result<Option<AccountRow>> {
        Ok(self
            .db
            .call(move |tx| accounts::by_token(tx, &token))
            .await?)
    }
}

/// A made-up access token.
pub fn random_token() -> String {
    super::shapes::random_hex(16)
}
