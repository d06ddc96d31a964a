//! Configuration: one serde struct per TOML section, loaded from a file,
//! overridden by `POINTHOOK_…` environment variables, then validated as a
//! whole (`validate.rs`) before anything binds a port. Relative paths are
//! relative to the file, and secret files are read once, when first
//! needed (`paths.rs`). `sample-config.toml` documents every key; a test
//! keeps it parsing.

mod accounts;
pub mod alerts;
mod defaults;
mod destinations;
mod env;
mod paths;
pub mod redacted;
mod secret;
mod signing_key;
mod validate;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use url::Url;

use crate::domain::UnauthenticatedAlerts;
use paths::Files;

pub use accounts::Account;
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<alerts::AlertConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp: Option<alerts::SmtpConfig>,
    #[serde(default)]
    pub alert_rules: alerts::AlertRulesConfig,
    /// Where relative paths start, and the secret files read so far.
    #[serde(skip)]
    files: Files,
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

/// An account. Its keys are checked by hand (`check_account`), not by
/// `deny_unknown_fields`: the keys not named here are the settings of the
/// kinds of hold (`rules::holds`), and any other is refused by name.
#[derive(Debug, Clone, Deserialize, Serialize)]
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
    /// Heard nothing from the platform this long: a person is told (0: off).
    #[serde(default)]
    pub expect_notifications_within_secs: u64,
    /// Each kind of hold the account turns on (`review_above = "500.00"`).
    #[serde(flatten)]
    pub holds: std::collections::BTreeMap<String, toml::Value>,
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
/// notification.
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

impl Config {
    /// Reads `path`, applies the `POINTHOOK_…` environment overrides and
    /// checks everything but the secret files, which are read when first
    /// needed (`check_secrets` reads them all now). Relative paths in the
    /// file are relative to its directory.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new("--config", format!("cannot read {}: {e}", path.display()))
        })?;
        Self::parse(&text, std::env::vars(), Files::beside(path))
    }

    /// Parses TOML text with the given `POINTHOOK_…` overrides applied, and
    /// checks it whole, secret files included (relative to the current
    /// directory).
    pub fn from_toml(
        text: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let config = Self::parse(text, vars, Files::default())?;
        config.check_secrets()?;
        Ok(config)
    }

    fn parse(
        text: &str,
        vars: impl IntoIterator<Item = (String, String)>,
        files: Files,
    ) -> Result<Config, ConfigError> {
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::new("config", syntax_error(text, &e)))?;
        env::apply_overrides(&mut table, vars)?;
        let mut config: Config = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| {
                let key = e.path().to_string();
                let message = one_line(&e.inner().to_string());
                ConfigError::new(if key == "." { "config".into() } else { key }, message)
            })?;
        // Shown by `check-config` as it is used.
        if let Some(path) = &config.storage.path
            && !path.as_os_str().is_empty()
        {
            config.storage.path = Some(files.resolve(path));
        }
        config.files = files;
        config.validate()?;
        Ok(config)
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
        out.extend(self.alert_warnings());
        out
    }

    /// The configuration as TOML with every secret masked.
    pub fn to_masked_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot print: {e}\n"))
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
