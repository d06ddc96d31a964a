//! Checking a configuration as a whole before anything binds a port:
//! values in range, keys that go together, the store's location; and,
//! for what serves or calls the platform, every secret file read.

use url::Url;

use super::{ADMIN_TOKEN_MIN, Config, ConfigError, Secret, one_line};

impl Config {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
        self.check_accounts()?;
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
        if let Some(a) = &self.admin
            && let Some(token) = &a.token
        {
            check_admin_token(token)?;
        }
        self.check_destinations()?;
        self.check_alerts()?;
        Ok(())
    }

    /// Reads every secret file now and checks what they hold: what serves
    /// must fail at start-up, not at the first request. Each file is read
    /// once; later uses get what was read.
    pub fn check_secrets(&self) -> Result<(), ConfigError> {
        self.resolve_accounts()?;
        self.admin_token()?;
        self.destinations()?;
        self.alerting()?;
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

    /// Where the data lives: `[storage] path` (SQLite), or `url` /
    /// `url_file` (PostgreSQL); exactly one of them.
    pub fn location(&self) -> Result<crate::store::Location, ConfigError> {
        use crate::store::Location;
        let s = &self.storage;
        let url = self
            .files
            .pick("storage.url", s.url.as_ref(), s.url_file.as_deref())?;
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

    /// The admin listener's token, read from its file where given.
    pub fn admin_token(&self) -> Result<Option<Secret>, ConfigError> {
        let Some(a) = &self.admin else {
            return Ok(None);
        };
        let token = self
            .files
            .pick("admin.token", a.token.as_ref(), a.token_file.as_deref())?;
        if let Some(token) = &token {
            check_admin_token(token)?;
        }
        Ok(token)
    }
}

fn check_admin_token(token: &Secret) -> Result<(), ConfigError> {
    if token.expose().chars().count() < ADMIN_TOKEN_MIN {
        return Err(ConfigError::new(
            "admin.token",
            format!("must be at least {ADMIN_TOKEN_MIN} characters (e.g. `openssl rand -hex 32`)"),
        ));
    }
    Ok(())
}
