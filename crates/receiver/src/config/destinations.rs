//! `[[destinations]]`: the merchant's systems that are
//! told events, each with its URL, its Standard Webhooks secrets, the event
//! types and accounts it takes, and its own queue's settings. `[fulfillment]`
//! is the short form of one destination named `default`.
//!
//! Secrets are Standard Webhooks secrets: `whsec_` and the base64 of 24 to
//! 64 bytes. The official libraries read the part after the prefix with
//! their own base64 decoders, which differ at the edges (Python's skips
//! characters outside the alphabet and tolerates missing padding; npm's
//! `@stablelib/base64` tolerates missing padding; the Rust crate's decoder
//! is strict), so only strict, padded, canonical base64 is taken: the one
//! form every library decodes to the same key.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

pub use super::signing_key::SigningKey;
use super::{Config, ConfigError, Secret, redacted};
use crate::domain::EventType;
use crate::domain::verdict::{EventPolicy, Route};

/// The name `[fulfillment]` goes by as a destination.
pub const DEFAULT_NAME: &str = "default";

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationConfig {
    /// Letters, digits, `-`, `_` and `.`: it names the destination in
    /// URLs, metrics and the CLI.
    pub name: String,
    #[serde(serialize_with = "redacted::url")]
    pub url: Url,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_file: Option<PathBuf>,
    /// Several secrets (rotation): every event is signed with each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<Secret>,
    /// Glob patterns of event types (`order.*`); absent: every type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<String>>,
    /// Absent: every account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounts: Option<Vec<String>>,
    /// Failing every attempt this long disables the destination.
    #[serde(default = "defaults::disable_after_hours")]
    pub disable_after_hours: u64,
    /// Allowed to have no secret: events go unsigned (warned about).
    #[serde(default)]
    pub unsigned: bool,
    #[serde(default = "defaults::timeout_secs")]
    pub timeout_secs: u64,
    /// After this long without a 2xx an event is given up for this
    /// destination.
    #[serde(default = "defaults::give_up_after_hours")]
    pub give_up_after_hours: u64,
    /// The most POSTs this instance has out at once to this destination.
    #[serde(default = "defaults::max_in_flight")]
    pub max_in_flight: usize,
}

pub(super) mod defaults {
    pub fn disable_after_hours() -> u64 {
        120
    }
    pub fn timeout_secs() -> u64 {
        10
    }
    pub fn give_up_after_hours() -> u64 {
        72
    }
    pub fn max_in_flight() -> usize {
        64
    }
}

/// A destination with its secrets read and its patterns resolved.
#[derive(Debug, Clone)]
pub struct Destination {
    pub name: String,
    pub url: Url,
    /// Empty only when `unsigned = true`.
    pub keys: Vec<SigningKey>,
    pub types: Vec<EventType>,
    pub accounts: Option<Vec<String>>,
    pub disable_after: Duration,
    pub timeout: Duration,
    pub give_up_after: Duration,
    pub max_in_flight: usize,
}

impl Destination {
    /// The URL as shown to a person: no credentials, no query.
    pub fn masked_url(&self) -> String {
        redacted::text(&self.url)
    }
}

/// A destination as read from either form, before its secrets are read.
struct Form<'a> {
    /// Where its keys are, for errors: `destinations[2]` or `fulfillment`.
    key: String,
    name: &'a str,
    url: &'a Url,
    secret: Option<&'a Secret>,
    secret_file: Option<&'a std::path::Path>,
    secrets: &'a [Secret],
    types: Option<&'a [String]>,
    accounts: Option<&'a [String]>,
    unsigned: bool,
    disable_after_hours: u64,
    timeout_secs: u64,
    give_up_after_hours: u64,
    max_in_flight: usize,
}

impl Config {
    /// Every destination: `[fulfillment]` (when it has a URL) as `default`,
    /// then `[[destinations]]` in order; secrets read and checked.
    pub fn destinations(&self) -> Result<Vec<Destination>, ConfigError> {
        self.forms()
            .iter()
            .zip(self.routed()?)
            .map(|(form, mut d)| {
                d.keys = self.keys(form)?;
                Ok(d)
            })
            .collect()
    }

    /// Every destination as written, no secret file read.
    pub(super) fn check_destinations(&self) -> Result<(), ConfigError> {
        self.routed().map(|_| ())
    }

    fn forms(&self) -> Vec<Form<'_>> {
        let mut forms = Vec::new();
        if let Some(f) = &self.fulfillment
            && let Some(url) = &f.url
        {
            forms.push(Form {
                key: "fulfillment".into(),
                name: DEFAULT_NAME,
                url,
                secret: f.secret.as_ref(),
                secret_file: f.secret_file.as_deref(),
                secrets: &[],
                types: None,
                accounts: None,
                unsigned: f.unsigned,
                disable_after_hours: f.disable_after_hours,
                timeout_secs: f.timeout_secs,
                give_up_after_hours: f.give_up_after_hours,
                max_in_flight: f.max_in_flight,
            });
        }
        for (i, d) in self.destinations.iter().enumerate() {
            forms.push(Form {
                key: format!("destinations[{i}]"),
                name: &d.name,
                url: &d.url,
                secret: d.secret.as_ref(),
                secret_file: d.secret_file.as_deref(),
                secrets: &d.secrets,
                types: d.types.as_deref(),
                accounts: d.accounts.as_deref(),
                unsigned: d.unsigned,
                disable_after_hours: d.disable_after_hours,
                timeout_secs: d.timeout_secs,
                give_up_after_hours: d.give_up_after_hours,
                max_in_flight: d.max_in_flight,
            });
        }
        forms
    }

    /// Each destination checked and routed, with no keys yet (the
    /// operator's commands route events without reading secret files).
    fn routed(&self) -> Result<Vec<Destination>, ConfigError> {
        let mut out: Vec<Destination> = Vec::new();
        for form in self.forms() {
            let d = self.resolve(&form)?;
            if out.iter().any(|o| o.name == d.name) {
                let why = match d.name.as_str() {
                    DEFAULT_NAME => "is [fulfillment]'s name: choose another".to_string(),
                    name => format!("destination {name:?} is defined twice"),
                };
                return Err(ConfigError::new(format!("{}.name", form.key), why));
            }
            out.push(d);
        }
        Ok(out)
    }

    /// A destination's signing keys, its secret file read.
    fn keys(&self, f: &Form<'_>) -> Result<Vec<SigningKey>, ConfigError> {
        let key = |k: &str| format!("{}.{k}", f.key);
        let mut keys = Vec::new();
        if let Some(s) = self.files.pick(&key("secret"), f.secret, f.secret_file)? {
            keys.push(
                SigningKey::parse(s.expose()).map_err(|e| ConfigError::new(key("secret"), e))?,
            );
        }
        for (j, s) in f.secrets.iter().enumerate() {
            let at = key(&format!("secrets[{j}]"));
            keys.push(SigningKey::parse(s.expose()).map_err(|e| ConfigError::new(at, e))?);
        }
        Ok(keys)
    }

    fn resolve(&self, f: &Form<'_>) -> Result<Destination, ConfigError> {
        let key = |k: &str| format!("{}.{k}", f.key);
        if f.name.is_empty()
            || f.name.len() > 64
            || !f
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(ConfigError::new(
                key("name"),
                "1 to 64 letters, digits, '-', '_' or '.'",
            ));
        }
        if !matches!(f.url.scheme(), "http" | "https") {
            return Err(ConfigError::new(key("url"), "must be an http or https URL"));
        }
        if f.secret.is_some() && f.secret_file.is_some() {
            return Err(ConfigError::new(
                key("secret"),
                format!(
                    "set either {} or {}_file, not both",
                    key("secret"),
                    key("secret")
                ),
            ));
        }
        // Inline secrets are checked here; a file's when it is read.
        for (j, s) in f.secret.into_iter().chain(f.secrets).enumerate() {
            let at = match f.secret {
                Some(_) if j == 0 => key("secret"),
                Some(_) => key(&format!("secrets[{}]", j - 1)),
                None => key(&format!("secrets[{j}]")),
            };
            if s.is_empty() {
                return Err(ConfigError::new(at, "must not be empty"));
            }
            SigningKey::parse(s.expose()).map_err(|e| ConfigError::new(at, e))?;
        }
        let signed = f.secret.is_some() || f.secret_file.is_some() || !f.secrets.is_empty();
        match (!signed, f.unsigned) {
            (true, false) => {
                return Err(ConfigError::new(
                    key("secret"),
                    "required: a whsec_ secret (`pointhook secret generate` makes one), or unsigned = true",
                ));
            }
            (false, true) => {
                return Err(ConfigError::new(
                    key("unsigned"),
                    "true with a secret: events are signed; remove one",
                ));
            }
            _ => {}
        }
        let types = match f.types {
            None => EventType::all()
                .filter(|t| crate::rules::kernel::told(*t))
                .collect(),
            Some(patterns) => {
                resolve_types(patterns).map_err(|e| ConfigError::new(key("types"), e))?
            }
        };
        let accounts = match f.accounts {
            None => None,
            Some([]) => {
                return Err(ConfigError::new(
                    key("accounts"),
                    "must name at least one account (leave it out for every account)",
                ));
            }
            Some(names) => {
                if let Some(unknown) = names
                    .iter()
                    .find(|n| !self.accounts.iter().any(|a| &&a.name == n))
                {
                    return Err(ConfigError::new(
                        key("accounts"),
                        format!("{unknown:?} is not an [[accounts]] name"),
                    ));
                }
                Some(names.to_vec())
            }
        };
        const HOUR: u64 = 3600;
        for (k, value, min, max) in [
            ("disable_after_hours", f.disable_after_hours, 1, 24 * 3650),
            ("timeout_secs", f.timeout_secs, 1, HOUR),
            ("give_up_after_hours", f.give_up_after_hours, 1, 24 * 3650),
            ("max_in_flight", f.max_in_flight as u64, 1, 1024),
        ] {
            if !(min..=max).contains(&value) {
                return Err(ConfigError::new(key(k), format!("must be {min} to {max}")));
            }
        }
        Ok(Destination {
            name: f.name.to_string(),
            url: f.url.clone(),
            keys: Vec::new(),
            types,
            accounts,
            disable_after: Duration::from_secs(f.disable_after_hours * HOUR),
            timeout: Duration::from_secs(f.timeout_secs),
            give_up_after: Duration::from_secs(f.give_up_after_hours * HOUR),
            max_in_flight: f.max_in_flight,
        })
    }

    /// Where decided events go: the routing table of every destination
    /// (empty: every event is only stored). Call on a validated
    /// configuration.
    pub fn event_policy(&self) -> EventPolicy {
        EventPolicy::new(
            self.routed()
                .unwrap_or_default()
                .into_iter()
                .map(|d| Route {
                    destination: d.name,
                    types: d.types,
                    accounts: d.accounts,
                })
                .collect(),
        )
    }

    /// Destinations that send unsigned events, or in plain http to
    /// another host.
    pub(super) fn destination_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Ok(destinations) = self.destinations() else {
            return out;
        };
        for d in destinations {
            if d.keys.is_empty() {
                out.push(format!(
                    "destination {:?} has unsigned = true: its receiver cannot tell pointhook's events from anyone's",
                    d.name
                ));
            }
            if super::plain_http(&d.url) {
                let key = if d.name == DEFAULT_NAME && self.fulfillment.is_some() {
                    "fulfillment.url".to_string()
                } else {
                    format!("destination {:?}", d.name)
                };
                out.push(format!(
                    "{key} {} is plain http to another host: events travel unencrypted",
                    redacted::text(&d.url)
                ));
            }
        }
        out
    }
}

/// The event types (told to a merchant) that `patterns` match; a pattern
/// that is not a glob or matches none of them is refused, named.
fn resolve_types(patterns: &[String]) -> Result<Vec<EventType>, String> {
    if patterns.is_empty() {
        return Err("must name at least one type (leave it out for every type)".into());
    }
    let told: Vec<EventType> = EventType::all()
        .filter(|t| crate::rules::kernel::told(*t))
        .collect();
    let mut types = Vec::new();
    for p in patterns {
        let glob =
            glob::Pattern::new(p).map_err(|e| format!("{p:?} is not a glob pattern: {e}"))?;
        let matched: Vec<EventType> = told
            .iter()
            .copied()
            .filter(|t| glob.matches(t.as_str()))
            .collect();
        if matched.is_empty() {
            return Err(format!(
                "{p:?} matches no event type (docs/events/ lists them)"
            ));
        }
        types.extend(matched);
    }
    types.sort_by_key(|t| *t as usize);
    types.dedup();
    Ok(types)
}

#[cfg(test)]
#[path = "destinations_tests.rs"]
mod tests;
