//! Configuration: one serde struct per TOML section, loaded from a file,
//! overridden by `POINTHOOK_…` environment variables, then validated as a
//! whole before anything binds a port. `sample-config.toml` documents every
//! key; a test keeps it parsing.

mod destinations;
mod env;
pub mod redacted;
mod secret;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use url::Url;

use crate::domain::UnauthenticatedAlerts;

pub use destinations::{DEFAULT_NAME, Destination, DestinationConfig, SigningKey};
pub use secret::Secret;

/// Everything wrong with a configuration, as one line naming the key.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: key.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub api: ApiConfig,
    pub accounts: Vec<AccountConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fulfillment: Option<FulfillmentConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<DestinationConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<AdminConfig>,
    #[serde(default)]
    pub worker: WorkerConfig,
    #[serde(default)]
    pub reconcile: ReconcileConfig,
    #[serde(default)]
    pub log: LogConfig,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub path: String,
    pub max_body_bytes: usize,
    /// Requests per second per remote address (a burst of as many); 0
    /// turns the limit off. On by default, far above one merchant's real
    /// traffic (`defaults::RATE_LIMIT_PER_IP`).
    pub rate_limit_per_ip: u32,
    /// How long a client may take to send its headers, and then its body.
    pub read_timeout_secs: u64,
    pub max_connections: usize,
    /// Connections one remote address may hold open at once; 0: no cap.
    pub max_connections_per_ip: usize,
    /// How long in-flight requests may take to finish on shutdown.
    pub drain_timeout_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/notifications".into(),
            max_body_bytes: 65_536,
            rate_limit_per_ip: defaults::RATE_LIMIT_PER_IP,
            read_timeout_secs: 10,
            max_connections: 1024,
            max_connections_per_ip: 256,
            drain_timeout_secs: 10,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// A SQLite file (the embedded default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Or a PostgreSQL URL (`postgres://user:password@host/db`), for
    /// several instances on one database; or `url_file` holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_file: Option<PathBuf>,
    /// Finished deliveries, jobs and events older than this are pruned
    /// (hourly). At least 4: the platform retries for 96 hours.
    #[serde(default = "defaults::retention_days")]
    pub retention_days: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    #[serde(serialize_with = "redacted::url")]
    pub base_url: Url,
    #[serde(default = "defaults::api_timeout_secs")]
    pub timeout_secs: u64,
    #[serde(default = "defaults::api_requests_per_second")]
    pub requests_per_second: u32,
    #[serde(default = "defaults::payment_intent_path")]
    pub payment_intent_path: String,
    #[serde(default = "defaults::payment_cancel_path")]
    pub payment_cancel_path: String,
    #[serde(default = "defaults::payment_refund_path")]
    pub payment_refund_path: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccountConfig {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token_file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret_file: Option<PathBuf>,
    /// Several secrets (rotation; test and production): any one verifies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhook_secrets: Vec<Secret>,
    /// How far a signature's `ts` may be from now; 0 leaves it unchecked
    /// (the SDKs' default: retries may carry the first signature).
    #[serde(default)]
    pub signature_tolerance_secs: u64,
    /// With secrets, refuse unsigned webhook forms (default true where a
    /// secret is set); false accepts them and records them as unsigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_signature: Option<bool>,
    /// What a verified fraud alert that is not authenticated does: `hold`
    /// (block, move no money, wait for a person; the default) or `act`
    /// (block and cancel or refund: an opt-in, warned about).
    #[serde(default)]
    pub fraud_unauthenticated: UnauthenticatedAlerts,
    /// Blocks that unauthenticated fraud alerts may place per hour; past
    /// it they are held without blocking.
    #[serde(default = "defaults::fraud_blocks_per_hour")]
    pub fraud_unauthenticated_blocks_per_hour: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FulfillmentConfig {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "redacted::optional_url"
    )]
    pub url: Option<Url>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_file: Option<PathBuf>,
    #[serde(default = "defaults::fulfillment_timeout_secs")]
    pub timeout_secs: u64,
    /// After this long without a 2xx an event is given up (dead).
    #[serde(default = "defaults::fulfillment_give_up_hours")]
    pub give_up_after_hours: u64,
    /// The most POSTs this instance has out at once (each instance its own).
    #[serde(default = "defaults::fulfillment_max_in_flight")]
    pub max_in_flight: usize,
    /// As for `[[destinations]]`: `[fulfillment]` is the destination `default`.
    #[serde(default = "destinations::defaults::disable_after_hours")]
    pub disable_after_hours: u64,
    #[serde(default)]
    pub unsigned: bool,
}

/// The shortest admin token accepted: it guards every operator action, and
/// the listener may face a network.
pub const ADMIN_TOKEN_MIN: usize = 32;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    #[serde(default = "defaults::admin_listen")]
    pub listen: SocketAddr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// How a person's browser reaches the console (links in alerts); an
    /// `https` URL makes the session cookie `Secure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<url::Url>,
    /// A console session unused this long ends.
    #[serde(default = "defaults::session_idle_secs")]
    pub session_idle_secs: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerConfig {
    pub enabled: bool,
    pub concurrency: usize,
    pub max_attempts: u32,
    pub lease_secs: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            enabled: true,
            concurrency: 8,
            max_attempts: 12,
            lease_secs: 30,
        }
    }
}

/// The sweeper that finds what changed on the platform with no
/// notification (DESIGN section 9).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReconcileConfig {
    /// Absent: on wherever a worker runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Time between the starts of two passes.
    pub interval_secs: u64,
    /// The window each pass searches, ending now (it overlaps the last).
    pub lookback_secs: u64,
    /// How long after a change its notification may still be on its way:
    /// only then is it counted missed and its job enqueued.
    pub grace_secs: u64,
}

impl Default for ReconcileConfig {
    fn default() -> Self {
        ReconcileConfig {
            enabled: None,
            interval_secs: 300,
            lookback_secs: 3600,
            grace_secs: 600,
        }
    }
}

impl Config {
    /// Whether this process runs the sweeper.
    pub fn reconcile_enabled(&self) -> bool {
        self.reconcile.enabled.unwrap_or(self.worker.enabled)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A `tracing` filter, e.g. `info` or `pointhook=debug`; `RUST_LOG` wins.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Text,
            level: "info".into(),
        }
    }
}

mod defaults {
    use std::net::SocketAddr;

    /// What one address may send per second. A merchant's real traffic is
    /// its sales told some six times each (IPN and webhook, for the payment
    /// and for its order, and their updates): 50 sales a second, more than
    /// almost any single shop sells at its peak, is 300 notifications a
    /// second. A client above 1,000 is a flood, and a 429 never reaches
    /// the platform's real traffic (it would lose a fraud alert webhook,
    /// which is never sent again).
    pub const RATE_LIMIT_PER_IP: u32 = 1000;

    pub fn retention_days() -> u64 {
        7
    }
    pub fn api_timeout_secs() -> u64 {
        10
    }
    pub fn api_requests_per_second() -> u32 {
        20
    }
    pub fn payment_intent_path() -> String {
        "/point/integration-api/payment-intents/{id}".into()
    }
    pub fn payment_cancel_path() -> String {
        "/v1/payments/{id}".into()
    }
    pub fn payment_refund_path() -> String {
        "/v1/payments/{id}/refunds".into()
    }
    pub fn fulfillment_timeout_secs() -> u64 {
        10
    }
    pub fn fulfillment_give_up_hours() -> u64 {
        72
    }
    pub fn fulfillment_max_in_flight() -> usize {
        64
    }
    /// Ten blocks an hour: more than a shop sees of real alerts, few
    /// enough that a flood of forged ones stalls few orders.
    pub fn fraud_blocks_per_hour() -> u32 {
        10
    }
    pub fn admin_listen() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 8081))
    }
    pub fn session_idle_secs() -> u64 {
        1800
    }
}

/// An account with its secrets read in.
#[derive(Debug, Clone)]
pub struct Account {
    pub name: String,
    pub access_token: Secret,
    /// Empty: webhooks are not verified.
    pub webhook_secrets: Vec<Secret>,
    /// `None`: the signature's timestamp is not checked.
    pub signature_tolerance: Option<std::time::Duration>,
    pub require_signature: bool,
    pub fraud_unauthenticated: UnauthenticatedAlerts,
    pub fraud_blocks_per_hour: u32,
}

impl Config {
    /// Reads, overrides from the environment and validates `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new("--config", format!("cannot read {}: {e}", path.display()))
        })?;
        Self::from_toml(&text, std::env::vars())
    }

    /// Parses TOML text with the given `POINTHOOK_…` overrides applied.
    pub fn from_toml(
        text: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::new("config", syntax_error(text, &e)))?;
        env::apply_overrides(&mut table, vars)?;
        let config: Config =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let key = e.path().to_string();
                let message = one_line(&e.inner().to_string());
                ConfigError::new(if key == "." { "config".into() } else { key }, message)
            })?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.server;
        if !s.path.starts_with('/') {
            return Err(ConfigError::new("server.path", "must start with '/'"));
        }
        if s.max_body_bytes == 0 {
            return Err(ConfigError::new(
                "server.max_body_bytes",
                "must be at least 1",
            ));
        }
        if s.read_timeout_secs == 0 {
            return Err(ConfigError::new(
                "server.read_timeout_secs",
                "must be at least 1",
            ));
        }
        if s.max_connections == 0 {
            return Err(ConfigError::new(
                "server.max_connections",
                "must be at least 1",
            ));
        }
        self.location()?;
        if self.storage.retention_days < 4 {
            return Err(ConfigError::new(
                "storage.retention_days",
                "must be at least 4 (the platform retries for 96 hours)",
            ));
        }
        if !matches!(self.api.base_url.scheme(), "http" | "https") {
            return Err(ConfigError::new(
                "api.base_url",
                "must be an http or https URL",
            ));
        }
        if self.api.requests_per_second == 0 {
            return Err(ConfigError::new(
                "api.requests_per_second",
                "must be at least 1",
            ));
        }
        for (key, path) in [
            ("api.payment_intent_path", &self.api.payment_intent_path),
            ("api.payment_cancel_path", &self.api.payment_cancel_path),
            ("api.payment_refund_path", &self.api.payment_refund_path),
        ] {
            if !path.starts_with('/') || !path.split('/').any(|s| s == "{id}") {
                return Err(ConfigError::new(
                    key,
                    "must start with '/' and have {id} as one whole segment",
                ));
            }
        }
        if self.accounts.is_empty() {
            return Err(ConfigError::new(
                "accounts",
                "at least one [[accounts]] entry is required",
            ));
        }
        for (i, a) in self.accounts.iter().enumerate() {
            if a.name.is_empty() {
                return Err(ConfigError::new(
                    format!("accounts[{i}].name"),
                    "must not be empty",
                ));
            }
            if self.accounts[..i].iter().any(|b| b.name == a.name) {
                return Err(ConfigError::new(
                    format!("accounts[{i}].name"),
                    format!("account {:?} is defined twice", a.name),
                ));
            }
        }
        if self.worker.concurrency == 0 {
            return Err(ConfigError::new("worker.concurrency", "must be at least 1"));
        }
        if self
            .fulfillment
            .as_ref()
            .is_some_and(|f| f.max_in_flight == 0)
        {
            return Err(ConfigError::new(
                "fulfillment.max_in_flight",
                "must be at least 1",
            ));
        }
        if self.worker.max_attempts == 0 {
            return Err(ConfigError::new(
                "worker.max_attempts",
                "must be at least 1",
            ));
        }
        if self.worker.lease_secs < 2 {
            return Err(ConfigError::new("worker.lease_secs", "must be at least 2"));
        }
        if let Some(admin) = &self.admin
            && admin.token.is_none()
            && admin.token_file.is_none()
        {
            return Err(ConfigError::new(
                "admin.token",
                "required when [admin] is present",
            ));
        }
        self.check_bounds()?;
        let r = &self.reconcile;
        if r.interval_secs == 0 {
            return Err(ConfigError::new(
                "reconcile.interval_secs",
                "must be at least 1",
            ));
        }
        // A change must stay in the window until its grace has passed and
        // one more pass has run, or it is never looked at again.
        if r.lookback_secs <= r.grace_secs + r.interval_secs {
            return Err(ConfigError::new(
                "reconcile.lookback_secs",
                format!(
                    "must be more than grace_secs + interval_secs ({})",
                    r.grace_secs + r.interval_secs
                ),
            ));
        }
        // The filter parser panics on some non-ASCII input (a space before
        // a multi-byte character); no directive needs anything but ASCII.
        if !self.log.level.is_ascii() {
            return Err(ConfigError::new(
                "log.level",
                "only ASCII (e.g. \"info,pointhook=debug\")",
            ));
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return Err(ConfigError::new("log.level", one_line(&e.to_string())));
        }
        // Secrets must be readable now, not at the first request.
        self.resolve_accounts()?;
        if let Some(token) = self.admin_token()?
            && token.expose().chars().count() < ADMIN_TOKEN_MIN
        {
            return Err(ConfigError::new(
                "admin.token",
                format!(
                    "must be at least {ADMIN_TOKEN_MIN} characters (e.g. `openssl rand -hex 32`)"
                ),
            ));
        }
        self.destinations()?;
        Ok(())
    }

    /// Upper bounds on durations and sizes: far above any sane value, low
    /// enough that no arithmetic on them (milliseconds in an i64) overflows.
    fn check_bounds(&self) -> Result<(), ConfigError> {
        const HOUR: u64 = 3600;
        let mut bounded: Vec<(String, u64, u64)> = vec![
            (
                "server.read_timeout_secs".into(),
                self.server.read_timeout_secs,
                HOUR,
            ),
            (
                "server.drain_timeout_secs".into(),
                self.server.drain_timeout_secs,
                HOUR,
            ),
            (
                "server.max_body_bytes".into(),
                self.server.max_body_bytes as u64,
                1 << 30,
            ),
            (
                "storage.retention_days".into(),
                self.storage.retention_days,
                36_500,
            ),
            ("api.timeout_secs".into(), self.api.timeout_secs, HOUR),
            (
                "worker.lease_secs".into(),
                self.worker.lease_secs,
                24 * HOUR,
            ),
            (
                "worker.concurrency".into(),
                self.worker.concurrency as u64,
                4096,
            ),
            (
                "reconcile.interval_secs".into(),
                self.reconcile.interval_secs,
                24 * HOUR,
            ),
            (
                "reconcile.lookback_secs".into(),
                self.reconcile.lookback_secs,
                31 * 24 * HOUR,
            ),
            (
                "reconcile.grace_secs".into(),
                self.reconcile.grace_secs,
                24 * HOUR,
            ),
        ];
        if let Some(f) = &self.fulfillment {
            bounded.push(("fulfillment.timeout_secs".into(), f.timeout_secs, HOUR));
            bounded.push((
                "fulfillment.give_up_after_hours".into(),
                f.give_up_after_hours,
                24 * 3650,
            ));
            bounded.push((
                "fulfillment.max_in_flight".into(),
                f.max_in_flight as u64,
                1024,
            ));
        }
        for (i, a) in self.accounts.iter().enumerate() {
            bounded.push((
                format!("accounts[{i}].signature_tolerance_secs"),
                a.signature_tolerance_secs,
                365 * 24 * HOUR,
            ));
        }
        match bounded.into_iter().find(|(_, value, max)| value > max) {
            Some((key, _, max)) => Err(ConfigError::new(key, format!("must be at most {max}"))),
            None => Ok(()),
        }
    }

    /// The accounts with their tokens and secrets read from files where given.
    pub fn resolve_accounts(&self) -> Result<Vec<Account>, ConfigError> {
        self.accounts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let key = |k: &str| format!("accounts[{i}].{k}");
                let access_token = pick_secret(
                    &key("access_token"),
                    a.access_token.as_ref(),
                    a.access_token_file.as_deref(),
                )?
                .ok_or_else(|| {
                    ConfigError::new(key("access_token"), "required (or access_token_file)")
                })?;
                let mut webhook_secrets: Vec<Secret> = pick_secret(
                    &key("webhook_secret"),
                    a.webhook_secret.as_ref(),
                    a.webhook_secret_file.as_deref(),
                )?
                .into_iter()
                .collect();
                for (j, s) in a.webhook_secrets.iter().enumerate() {
                    if s.is_empty() {
                        return Err(ConfigError::new(
                            key(&format!("webhook_secrets[{j}]")),
                            "must not be empty",
                        ));
                    }
                    webhook_secrets.push(s.clone());
                }
                let require_signature = a.require_signature.unwrap_or(!webhook_secrets.is_empty());
                if require_signature && webhook_secrets.is_empty() {
                    return Err(ConfigError::new(
                        key("require_signature"),
                        "true needs webhook_secret or webhook_secrets",
                    ));
                }
                Ok(Account {
                    name: a.name.clone(),
                    access_token,
                    signature_tolerance: (a.signature_tolerance_secs > 0)
                        .then(|| std::time::Duration::from_secs(a.signature_tolerance_secs)),
                    require_signature,
                    fraud_unauthenticated: a.fraud_unauthenticated,
                    fraud_blocks_per_hour: a.fraud_unauthenticated_blocks_per_hour,
                    webhook_secrets,
                })
            })
            .collect()
    }

    /// Where the data lives: `[storage] path` (SQLite), or `url` /
    /// `url_file` (PostgreSQL); exactly one of them.
    pub fn location(&self) -> Result<crate::store::Location, ConfigError> {
        use crate::store::Location;
        let s = &self.storage;
        let url = pick_secret("storage.url", s.url.as_ref(), s.url_file.as_deref())?;
        match (&s.path, url) {
            (Some(_), Some(_)) => Err(ConfigError::new(
                "storage",
                "set either path (SQLite) or url (PostgreSQL), not both",
            )),
            (None, None) => Err(ConfigError::new(
                "storage.path",
                "required: a SQLite file (or storage.url for PostgreSQL)",
            )),
            (Some(path), None) if path.as_os_str().is_empty() => {
                Err(ConfigError::new("storage.path", "must not be empty"))
            }
            (Some(path), None) => Ok(Location::Sqlite(path.clone())),
            (None, Some(url)) => {
                let text = url.expose();
                match Url::parse(text) {
                    Ok(u) if matches!(u.scheme(), "postgres" | "postgresql") => {
                        Ok(Location::Postgres(text.to_string()))
                    }
                    _ => Err(ConfigError::new(
                        "storage.url",
                        "must be a postgres:// (or postgresql://) URL",
                    )),
                }
            }
        }
    }

    pub fn admin_token(&self) -> Result<Option<Secret>, ConfigError> {
        match &self.admin {
            None => Ok(None),
            Some(a) => pick_secret("admin.token", a.token.as_ref(), a.token_file.as_deref()),
        }
    }

    /// What is allowed but most likely a mistake in production: a test
    /// access token, or credentials and events sent in plain http to
    /// another host.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Ok(accounts) = self.resolve_accounts() {
            for a in accounts
                .iter()
                .filter(|a| a.access_token.expose().starts_with("TEST-"))
            {
                out.push(format!(
                    "account {:?} uses a TEST- access token: its payments are not real money",
                    a.name
                ));
            }
        }
        for a in self
            .accounts
            .iter()
            .filter(|a| a.fraud_unauthenticated == UnauthenticatedAlerts::Act)
        {
            out.push(format!(
                "account {:?} has fraud_unauthenticated = \"act\": a fraud alert nobody authenticated cancels or refunds a payment without a person",
                a.name
            ));
        }
        if plain_http(&self.api.base_url) {
            out.push(format!(
                "api.base_url {} is plain http to another host: access tokens travel unencrypted",
                redacted::text(&self.api.base_url)
            ));
        }
        out.extend(self.destination_warnings());
        out
    }

    /// The configuration as TOML with every secret masked.
    pub fn to_masked_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot print: {e}\n"))
    }
}

/// One of `value` or `file` (read, trimmed); a relative `file` is looked up
/// in `$CREDENTIALS_DIRECTORY`, where systemd's `LoadCredential=` puts it.
fn pick_secret(
    key: &str,
    value: Option<&Secret>,
    file: Option<&Path>,
) -> Result<Option<Secret>, ConfigError> {
    match (value, file) {
        (Some(_), Some(_)) => Err(ConfigError::new(
            key,
            format!("set either {key} or {key}_file, not both"),
        )),
        (Some(v), None) if v.is_empty() => Err(ConfigError::new(key, "must not be empty")),
        (Some(v), None) => Ok(Some(v.clone())),
        (None, Some(path)) => {
            let full = match std::env::var_os("CREDENTIALS_DIRECTORY") {
                Some(dir) if path.is_relative() => Path::new(&dir).join(path),
                _ => path.to_path_buf(),
            };
            let text = std::fs::read_to_string(&full).map_err(|e| {
                ConfigError::new(
                    format!("{key}_file"),
                    format!("cannot read {}: {e}", full.display()),
                )
            })?;
            let text = text.trim();
            if text.is_empty() {
                return Err(ConfigError::new(
                    format!("{key}_file"),
                    format!("{} is empty", full.display()),
                ));
            }
            Ok(Some(Secret::new(text)))
        }
        (None, None) => Ok(None),
    }
}

/// Plain http to a host other than this one.
fn plain_http(url: &Url) -> bool {
    url.scheme() == "http"
        && !matches!(url.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
        && !matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
        && url.host_str() != Some("localhost")
}

/// Where the TOML is broken, by line and column only: the parser's own
/// message quotes the line, and that line may hold a token.
fn syntax_error(text: &str, e: &toml::de::Error) -> String {
    let Some(at) = e.span().map(|s| s.start.min(text.len())) else {
        return "not valid TOML (the text is not shown: it may hold a secret)".into();
    };
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(
        "not valid TOML at line {line}, column {column} (the line is not shown: it may hold a secret)"
    )
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
