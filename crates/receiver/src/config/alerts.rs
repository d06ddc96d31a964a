//! Telling a person: `[[alerts]]` channels (`kind =
//! "email"` with `to`, through `[smtp]`; `kind = "webhook"` with `url`),
//! `[smtp]`, the thresholds of `[alert_rules]`, and each account's
//! `expect_notifications_within_secs`; checked as written with the key
//! named (`check_alerts`, no file read), and resolved (the SMTP password
//! and a webhook's `url_file` read once) into `Alerting`, which `alerts`
//! builds its channels from.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use super::{Config, ConfigError, Secret};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    Email,
    Webhook,
}

/// One `[[alerts]]` entry.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlertConfig {
    pub kind: ChannelKind,
    /// E-mail: the recipients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    /// Webhook: where the JSON is POSTed. A chat tool's incoming-webhook
    /// URL is its only credential, so it is never printed (`url_file`
    /// keeps it out of the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_file: Option<PathBuf>,
}

/// `[smtp]`: the server e-mail alerts go through.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: String,
    #[serde(default = "defaults::smtp_port")]
    pub port: u16,
    /// Upgrade with STARTTLS and refuse a server that cannot (a loopback
    /// relay may be plain: `false`).
    #[serde(default = "defaults::starttls")]
    pub starttls: bool,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
}

/// `[alert_rules]`: when a person is told (the table in docs/operations.md).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertRulesConfig {
    /// Dead jobs after the first of a burst are told in one message per
    /// this many seconds.
    pub digest_secs: u64,
    /// Every attempt to a destination failed this long.
    pub destination_failing_secs: u64,
    /// A destination's oldest event waited this long.
    pub events_waiting_secs: u64,
    /// A commit failed and none succeeded for this long.
    pub storage_not_ready_secs: u64,
    /// How often what needs a person is read.
    pub check_interval_secs: u64,
    /// How long one message may take on one channel.
    pub send_timeout_secs: u64,
}

impl Default for AlertRulesConfig {
    fn default() -> Self {
        AlertRulesConfig {
            digest_secs: 60,
            destination_failing_secs: 600,
            events_waiting_secs: 900,
            storage_not_ready_secs: 60,
            check_interval_secs: 30,
            send_timeout_secs: 10,
        }
    }
}

mod defaults {
    pub fn smtp_port() -> u16 {
        25
    }
    pub fn starttls() -> bool {
        true
    }
}

/// How to reach the SMTP server, credentials read.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    pub host: String,
    pub port: u16,
    pub from: String,
    /// Both, or neither: the password read once from its file.
    pub credentials: Option<(String, Secret)>,
    /// Upgrade with STARTTLS, and refuse a server that cannot.
    pub starttls: bool,
}

/// A channel, resolved.
#[derive(Debug, Clone)]
pub enum ChannelSpec {
    Email { smtp: SmtpSettings, to: Vec<String> },
    Webhook { url: Url },
}

/// Everything the alerter needs, resolved and checked.
#[derive(Debug, Clone)]
pub struct Alerting {
    pub channels: Vec<ChannelSpec>,
    /// The console as a person's browser reaches it (`admin.public_url`).
    pub public_url: String,
    pub rules: AlertRulesConfig,
    /// Accounts that expect to hear from the platform, and within how long.
    pub expect: Vec<(String, Duration)>,
}

impl AlertRulesConfig {
    pub fn check_interval(&self) -> Duration {
        Duration::from_secs(self.check_interval_secs)
    }

    pub fn send_timeout(&self) -> Duration {
        Duration::from_secs(self.send_timeout_secs)
    }
}

const HOUR: u64 = 3600;

impl Config {
    /// Everything of alerting as written, no file read.
    pub(super) fn check_alerts(&self) -> Result<(), ConfigError> {
        self.check_alert_rules()?;
        self.check_smtp()?;
        if !self.alerts.is_empty() {
            self.public_url()?;
        }
        for (i, a) in self.alerts.iter().enumerate() {
            self.check_channel(i, a)?;
        }
        Ok(())
    }

    fn public_url(&self) -> Result<String, ConfigError> {
        self.admin
            .as_ref()
            .and_then(|a| a.public_url.as_ref())
            .map(|u| u.to_string())
            .ok_or_else(|| {
                ConfigError::new(
                    "admin.public_url",
                    "required with [[alerts]]: every message links into the console",
                )
            })
    }

    /// `[[alerts]]` resolved, its files read: `None` when no channel is
    /// configured.
    pub fn alerting(&self) -> Result<Option<Alerting>, ConfigError> {
        self.check_alerts()?;
        if self.alerts.is_empty() {
            return Ok(None);
        }
        let public_url = self.public_url()?;
        let channels = self
            .alerts
            .iter()
            .enumerate()
            .map(|(i, a)| self.channel(i, a))
            .collect::<Result<Vec<_>, _>>()?;
        let expect = self
            .accounts
            .iter()
            .filter(|a| a.expect_notifications_within_secs > 0)
            .map(|a| {
                (
                    a.name.clone(),
                    Duration::from_secs(a.expect_notifications_within_secs),
                )
            })
            .collect();
        Ok(Some(Alerting {
            channels,
            public_url,
            rules: self.alert_rules.clone(),
            expect,
        }))
    }

    /// A channel as written: the keys of its kind, addresses that parse,
    /// `[smtp]` for e-mail, an inline URL that is http or https.
    fn check_channel(&self, i: usize, a: &AlertConfig) -> Result<(), ConfigError> {
        let key = |k: &str| format!("alerts[{i}].{k}");
        match a.kind {
            ChannelKind::Email => {
                if a.url.is_some() || a.url_file.is_some() {
                    return Err(ConfigError::new(
                        key("url"),
                        "only for kind = \"webhook\" (an e-mail alert has to)",
                    ));
                }
                if a.to.is_empty() {
                    return Err(ConfigError::new(
                        key("to"),
                        "required for kind = \"email\": at least one address",
                    ));
                }
                for (j, to) in a.to.iter().enumerate() {
                    mailbox(&key(&format!("to[{j}]")), to)?;
                }
                if self.smtp.is_none() {
                    return Err(ConfigError::new(
                        "smtp",
                        format!("required by alerts[{i}] (kind = \"email\"): host and from"),
                    ));
                }
            }
            ChannelKind::Webhook => {
                if !a.to.is_empty() {
                    return Err(ConfigError::new(
                        key("to"),
                        "only for kind = \"email\" (a webhook alert has url)",
                    ));
                }
                match (&a.url, &a.url_file) {
                    (None, None) => {
                        return Err(ConfigError::new(
                            key("url"),
                            "required for kind = \"webhook\" (or url_file)",
                        ));
                    }
                    (Some(url), None) => {
                        webhook_url(&key("url"), url)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn channel(&self, i: usize, a: &AlertConfig) -> Result<ChannelSpec, ConfigError> {
        let key = |k: &str| format!("alerts[{i}].{k}");
        match a.kind {
            ChannelKind::Email => {
                let smtp = self.smtp_settings()?.ok_or_else(|| {
                    ConfigError::new(
                        "smtp",
                        format!("required by alerts[{i}] (kind = \"email\"): host and from"),
                    )
                })?;
                Ok(ChannelSpec::Email {
                    smtp,
                    to: a.to.clone(),
                })
            }
            ChannelKind::Webhook => {
                let text = self
                    .files
                    .pick(&key("url"), a.url.as_ref(), a.url_file.as_deref())?
                    .ok_or_else(|| {
                        ConfigError::new(key("url"), "required for kind = \"webhook\"")
                    })?;
                Ok(ChannelSpec::Webhook {
                    url: webhook_url(&key("url"), &text)?,
                })
            }
        }
    }

    /// `[smtp]` as written, no file read.
    fn check_smtp(&self) -> Result<(), ConfigError> {
        let Some(s) = &self.smtp else {
            return Ok(());
        };
        if s.host.trim().is_empty() {
            return Err(ConfigError::new("smtp.host", "must not be empty"));
        }
        if s.port == 0 {
            return Err(ConfigError::new("smtp.port", "must be 1 to 65535"));
        }
        mailbox("smtp.from", &s.from)?;
        match (&s.username, &s.password_file) {
            (Some(user), Some(_)) if user.is_empty() => {
                Err(ConfigError::new("smtp.username", "must not be empty"))
            }
            (Some(_), None) => Err(ConfigError::new(
                "smtp.password_file",
                "required with smtp.username",
            )),
            (None, Some(_)) => Err(ConfigError::new(
                "smtp.username",
                "required with smtp.password_file",
            )),
            _ => Ok(()),
        }
    }

    /// `[smtp]` checked, its password read; `None` without the section.
    pub fn smtp_settings(&self) -> Result<Option<SmtpSettings>, ConfigError> {
        self.check_smtp()?;
        let Some(s) = &self.smtp else {
            return Ok(None);
        };
        let password = self
            .files
            .pick("smtp.password", None, s.password_file.as_deref())?;
        let credentials = s.username.clone().zip(password);
        Ok(Some(SmtpSettings {
            host: s.host.clone(),
            port: s.port,
            from: s.from.clone(),
            credentials,
            starttls: s.starttls,
        }))
    }

    fn check_alert_rules(&self) -> Result<(), ConfigError> {
        let r = &self.alert_rules;
        let bounded = [
            ("digest_secs", r.digest_secs, 0, 24 * HOUR),
            (
                "destination_failing_secs",
                r.destination_failing_secs,
                1,
                30 * 24 * HOUR,
            ),
            (
                "events_waiting_secs",
                r.events_waiting_secs,
                1,
                30 * 24 * HOUR,
            ),
            (
                "storage_not_ready_secs",
                r.storage_not_ready_secs,
                1,
                24 * HOUR,
            ),
            ("check_interval_secs", r.check_interval_secs, 1, HOUR),
            ("send_timeout_secs", r.send_timeout_secs, 1, 300),
        ];
        for (key, value, min, max) in bounded {
            if value < min || value > max {
                return Err(ConfigError::new(
                    format!("alert_rules.{key}"),
                    format!("must be {min} to {max}"),
                ));
            }
        }
        for (i, a) in self.accounts.iter().enumerate() {
            let v = a.expect_notifications_within_secs;
            if v != 0 && !(60..=30 * 24 * HOUR).contains(&v) {
                return Err(ConfigError::new(
                    format!("accounts[{i}].expect_notifications_within_secs"),
                    format!("must be 0 (off) or 60 to {}", 30 * 24 * HOUR),
                ));
            }
        }
        Ok(())
    }

    /// What is allowed but likely a mistake: credentials or alerts in plain
    /// text to another host.
    pub(super) fn alert_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(s) = &self.smtp
            && !s.starttls
            && !loopback(&s.host)
        {
            out.push(format!(
                "smtp.starttls = false to {}: alerts (and the SMTP password) travel unencrypted",
                pointhook_common::text::printable(&s.host)
            ));
        }
        out
    }
}

/// A webhook's URL: http or https.
fn webhook_url(key: &str, text: &Secret) -> Result<Url, ConfigError> {
    match Url::parse(text.expose()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(url),
        _ => Err(ConfigError::new(key, "must be an http or https URL")),
    }
}

fn loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An address as a mail header takes it (`ops@shop.example` or `Ops
/// <ops@shop.example>`).
fn mailbox(key: &str, text: &str) -> Result<(), ConfigError> {
    text.parse::<lettre::message::Mailbox>()
        .map(|_| ())
        .map_err(|e| ConfigError::new(key, format!("not an e-mail address ({e})")))
}

#[cfg(test)]
#[path = "alerts_tests.rs"]
mod tests;
