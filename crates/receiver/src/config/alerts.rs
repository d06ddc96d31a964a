//! Telling a person (DESIGN section 11): `[[alerts]]` channels (`kind =
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

/// `[alert_rules]`: when a person is told (DESIGN section 11's table).
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
mod tests {
    use crate::config::Config;

    const BASE: &str = "[storage]\npath = \"x.db\"\n[api]\nbase_url = \"http://127.0.0.1:9\"\n\
                        [[accounts]]\nname = \"default\"\naccess_token = \"t\"\n";
    const ADMIN: &str = "[admin]\ntoken = \"0123456789abcdef0123456789abcdef\"\n\
                         public_url = \"https://ph.example:8081\"\n";

    fn load(extra: &str) -> Result<Config, String> {
        Config::from_toml(&format!("{extra}\n{BASE}"), Vec::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn channels_resolve_with_the_console_link() {
        let c = load(&format!(
            "{ADMIN}[[alerts]]\nkind = \"email\"\nto = [\"ops@shop.example\"]\n\
             [[alerts]]\nkind = \"webhook\"\nurl = \"https://chat.example/hook/T0/B0/secret\"\n\
             [smtp]\nhost = \"127.0.0.1\"\nstarttls = false\nfrom = \"ph@shop.example\"\n\
             [alert_rules]\ndestination_failing_secs = 2\n"
        ))
        .unwrap();
        let a = c.alerting().unwrap().unwrap();
        assert_eq!(a.channels.len(), 2);
        assert_eq!(a.public_url, "https://ph.example:8081/");
        assert_eq!(a.rules.destination_failing_secs, 2);
        assert_eq!(a.rules.digest_secs, 60, "defaults fill the rest");
        assert!(
            !c.to_masked_toml().contains("secret"),
            "a webhook URL is its credential: never printed"
        );
        assert!(load("").unwrap().alerting().unwrap().is_none());
    }

    #[test]
    fn the_environment_overrides_alert_sections() {
        let c = Config::from_toml(
            BASE,
            [
                ("POINTHOOK_ALERT_RULES_DIGEST_SECS", "5"),
                ("POINTHOOK_SMTP_HOST", "mail.example"),
                ("POINTHOOK_SMTP_FROM", "ph@shop.example"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap();
        assert_eq!(c.alert_rules.digest_secs, 5);
        let smtp = c.smtp_settings().unwrap().unwrap();
        assert_eq!(
            (smtp.host.as_str(), smtp.port, smtp.starttls),
            ("mail.example", 25, true)
        );
    }

    #[test]
    fn bad_alert_settings_name_their_key() {
        let cases = [
            (
                "[[alerts]]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\n",
                "admin.public_url: required",
            ),
            (
                "[[alerts]]\nkind = \"email\"\nto = [\"ops@x.example\"]\n",
                "smtp: required by alerts[0]",
            ),
            ("[[alerts]]\nkind = \"email\"\n", "alerts[0].to: required"),
            (
                "[[alerts]]\nkind = \"email\"\nto = [\"not an address\"]\n",
                "alerts[0].to[0]: not an e-mail address",
            ),
            (
                "[[alerts]]\nkind = \"webhook\"\n",
                "alerts[0].url: required",
            ),
            (
                "[[alerts]]\nkind = \"webhook\"\nurl = \"ftp://x.example/\"\n",
                "alerts[0].url: must be an http or https URL",
            ),
            ("[[alerts]]\nkind = \"pager\"\n", "alerts[0].kind"),
            (
                "[[alerts]]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\n[smtp]\nhost = \"h\"\nfrom = \"nobody\"\n",
                "smtp.from: not an e-mail address",
            ),
            (
                "[[alerts]]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\n[smtp]\nhost = \"h\"\nfrom = \"a@b.example\"\nusername = \"u\"\n",
                "smtp.password_file: required with smtp.username",
            ),
            (
                "[alert_rules]\ncheck_interval_secs = 0\n",
                "alert_rules.check_interval_secs: must be 1 to 3600",
            ),
            (
                "[alert_rules]\nsend_timeout_secs = 9999\n",
                "alert_rules.send_timeout_secs",
            ),
            ("[alert_rules]\nsoon = 1\n", "alert_rules"),
        ];
        for (extra, expected) in cases {
            let toml = if extra.starts_with("[[alerts]]") && !expected.starts_with("admin") {
                format!("{ADMIN}{extra}")
            } else {
                extra.to_string()
            };
            let err = load(&toml).unwrap_err();
            assert!(err.contains(expected), "{extra:?}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
        let silent = BASE.replace(
            "access_token = \"t\"\n",
            "access_token = \"t\"\nexpect_notifications_within_secs = 5\n",
        );
        let err = Config::from_toml(&silent, Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("accounts[0].expect_notifications_within_secs: must be 0 (off) or 60"),
            "{err}"
        );
    }
}
