//! `[[destinations]]` (DESIGN section 5): the merchant's systems that are
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

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use url::Url;

use super::{Config, ConfigError, Secret, redacted};
use crate::domain::EventType;
use crate::domain::verdict::{EventPolicy, Route};

/// The name `[fulfillment]` goes by as a destination.
pub const DEFAULT_NAME: &str = "default";

/// The prefix of a Standard Webhooks secret.
const PREFIX: &str = "whsec_";
/// What the Standard Webhooks specification asks of a key.
const MIN_KEY: usize = 24;
const MAX_KEY: usize = 64;
/// The size of the keys `pointhook secret generate` makes.
const NEW_KEY: usize = 32;

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

/// The HMAC key of a Standard Webhooks secret: the decoded bytes, never
/// printed.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(***)")
    }
}

impl SigningKey {
    /// Reads `whsec_` + base64 of 24 to 64 bytes; anything else is refused
    /// with what is wrong.
    pub fn parse(secret: &str) -> Result<SigningKey, String> {
        let Some(b64) = secret.strip_prefix(PREFIX) else {
            return Err(format!(
                "must be a Standard Webhooks secret ({PREFIX} and base64; `pointhook secret generate` makes one)"
            ));
        };
        let key = BASE64
            .decode(b64)
            .map_err(|_| format!("must be {PREFIX} and standard base64 with its padding"))?;
        if !(MIN_KEY..=MAX_KEY).contains(&key.len()) {
            return Err(format!(
                "the key is {} bytes; a Standard Webhooks key is {MIN_KEY} to {MAX_KEY}",
                key.len()
            ));
        }
        Ok(SigningKey(key))
    }

    /// A new secret, as text: `whsec_` and the base64 of 32 random bytes.
    pub fn generate() -> String {
        let key: [u8; NEW_KEY] = rand::random();
        format!("{PREFIX}{}", BASE64.encode(key))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
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
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_whsec_and_canonical_base64_of_24_to_64_bytes() {
        let b64 = |n: usize| BASE64.encode(vec![7u8; n]);
        assert!(SigningKey::parse(&format!("whsec_{}", b64(24))).is_ok());
        assert!(SigningKey::parse(&format!("whsec_{}", b64(64))).is_ok());
        for bad in [
            format!("whsec_{}", b64(23)),
            format!("whsec_{}", b64(65)),
            // The issue's example: 5 bytes.
            "whsec_aGVsbG8=".to_string(),
            // Raw bytes, no prefix: the libraries would base64-decode it.
            "your_secret_key_here_0123456789abcdef".to_string(),
            b64(32),
            // Unpadded, with a space, URL-safe, non-canonical last bits.
            format!("whsec_{}", b64(25).trim_end_matches('=')),
            format!("whsec_ {}", b64(24)),
            format!("whsec_{}", b64(24).replace('H', "-")),
            format!("whsec_{}", b64(25).replacen("w==", "x==", 1)),
        ] {
            assert!(SigningKey::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_generated_secret_is_one_the_official_crate_reads() {
        let secret = SigningKey::generate();
        let key = SigningKey::parse(&secret).unwrap();
        assert_eq!(key.bytes().len(), NEW_KEY);
        assert!(standardwebhooks::Webhook::new(&secret).is_ok());
        assert_ne!(secret, SigningKey::generate());
    }

    #[test]
    fn type_patterns_are_globs_over_the_types_told() {
        let types = resolve_types(&["order.*".into(), "payment.refunded".into()]).unwrap();
        assert!(types.contains(&EventType::OrderReleased));
        assert!(types.contains(&EventType::OrderAtRisk));
        assert!(types.contains(&EventType::PaymentRefunded));
        assert!(!types.contains(&EventType::PaymentUpdated));
        let every = resolve_types(&["*".into()]).unwrap();
        assert!(
            !every.contains(&EventType::FraudAlertRejected),
            "never told"
        );
        assert!(resolve_types(&["order.relased".into()]).is_err());
        assert!(resolve_types(&["fraud_alert.rejected".into()]).is_err());
        assert!(resolve_types(&["[".into()]).is_err());
        assert!(resolve_types(&[]).is_err());
    }

    const BASE: &str = r#"
[storage]
path = "x.db"
[api]
base_url = "http://127.0.0.1:1"
[[accounts]]
name = "default"
access_token = "tok"
[[accounts]]
name = "north"
access_token = "tok2"
"#;
    const KEY: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn parse(extra: &str) -> Result<Config, ConfigError> {
        Config::from_toml(&format!("{BASE}{extra}"), Vec::<(String, String)>::new())
    }

    #[test]
    fn destinations_take_their_types_and_accounts() {
        let c = parse(&format!(
            "[[destinations]]\nname = \"erp\"\nurl = \"https://erp.example/h\"\nsecrets = [\"{KEY}\", \"{}\"]\n\
             types = [\"order.*\", \"payment.refunded\"]\naccounts = [\"north\"]\n\
             [[destinations]]\nname = \"shop\"\nurl = \"https://shop.example/h\"\nsecret = \"{KEY}\"\n",
            SigningKey::generate()
        ))
        .unwrap();
        let d = c.destinations().unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].keys.len(), 2);
        assert_eq!(d[0].accounts.as_deref(), Some(&["north".to_string()][..]));
        assert!(d[0].types.contains(&EventType::OrderReleased));
        assert!(!d[0].types.contains(&EventType::PaymentUpdated));
        assert_eq!(d[0].disable_after, Duration::from_secs(120 * 3600));
        assert_eq!(d[1].accounts, None);
        let policy = c.event_policy();
        assert_eq!(policy.routes.len(), 2);
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }

    #[test]
    fn the_short_form_is_the_destination_default() {
        let c = parse(&format!(
            "[fulfillment]\nurl = \"http://127.0.0.1:9/events\"\nsecret = \"{KEY}\"\ntimeout_secs = 3\n"
        ))
        .unwrap();
        let d = c.destinations().unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].name, DEFAULT_NAME);
        assert_eq!(d[0].timeout, Duration::from_secs(3));
        assert_eq!(d[0].keys, [SigningKey::parse(KEY).unwrap()]);
        let told = EventType::all().filter(|t| crate::rules::kernel::told(*t));
        assert_eq!(d[0].types, told.collect::<Vec<_>>());
        // Without a URL: no destination, every event only stored.
        let c = parse("[fulfillment]\ntimeout_secs = 3\n").unwrap();
        assert!(c.destinations().unwrap().is_empty());
        assert!(!c.event_policy().delivers());
    }

    #[test]
    fn a_bad_destination_stops_start_up_naming_the_key() {
        let with = |body: &str| {
            parse(&format!(
                "[[destinations]]\nname = \"erp\"\nurl = \"https://erp.example/h\"\n{body}"
            ))
            .map(|_| ())
            .unwrap_err()
            .key
        };
        for (body, key) in [
            ("secret = \"whsec_aGVsbG8=\"\n", "destinations[0].secret"),
            (
                "secret = \"raw-bytes-secret-0123456789abcdef\"\n",
                "destinations[0].secret",
            ),
            (
                &format!("secrets = [\"{KEY}\", \"whsec_x\"]\n"),
                "destinations[0].secrets[1]",
            ),
            ("", "destinations[0].secret"),
            (
                &format!("secret = \"{KEY}\"\nunsigned = true\n"),
                "destinations[0].unsigned",
            ),
            (
                &format!("secret = \"{KEY}\"\ntypes = [\"order.relased\"]\n"),
                "destinations[0].types",
            ),
            (
                &format!("secret = \"{KEY}\"\naccounts = [\"south\"]\n"),
                "destinations[0].accounts",
            ),
            (
                &format!("secret = \"{KEY}\"\ndisable_after_hours = 0\n"),
                "destinations[0].disable_after_hours",
            ),
        ] {
            assert_eq!(with(body), key, "{body}");
        }
        let twice = format!(
            "[fulfillment]\nurl = \"http://127.0.0.1:9/e\"\nsecret = \"{KEY}\"\n\
             [[destinations]]\nname = \"default\"\nurl = \"https://erp.example/h\"\nsecret = \"{KEY}\"\n"
        );
        assert_eq!(parse(&twice).unwrap_err().key, "destinations[0].name");
        let bad_name = format!(
            "[[destinations]]\nname = \"e r/p\"\nurl = \"https://erp.example/h\"\nsecret = \"{KEY}\"\n"
        );
        assert_eq!(parse(&bad_name).unwrap_err().key, "destinations[0].name");
    }

    #[test]
    fn an_unsigned_destination_is_allowed_only_when_asked_and_warned_of() {
        let c = parse(
            "[[destinations]]\nname = \"lab\"\nurl = \"https://lab.example/h\"\nunsigned = true\n",
        )
        .unwrap();
        assert!(c.destinations().unwrap()[0].keys.is_empty());
        let warnings = c.warnings();
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("\"lab\"") && w.contains("unsigned")),
            "{warnings:?}"
        );
    }
}
