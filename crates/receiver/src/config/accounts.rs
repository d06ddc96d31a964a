//! `[[accounts]]` checked as written (names, a token or its file, what
//! signatures need) and resolved into `Account`s, their tokens and secrets
//! read: only what calls the platform or verifies its signatures reads them.

use super::{AccountConfig, Config, ConfigError, Secret};
use crate::rules::Policy;

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
    /// What the rules read of this account, built here once.
    pub policy: Policy,
}

impl Config {
    /// Every account as written, no file read: names unique and not
    /// empty, a token or its file, secrets where signatures are required.
    pub(super) fn check_accounts(&self) -> Result<(), ConfigError> {
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
            check_account(i, a)?;
        }
        Ok(())
    }

    /// The accounts with their tokens and secrets read from files where
    /// given (each file read once).
    pub fn resolve_accounts(&self) -> Result<Vec<Account>, ConfigError> {
        self.accounts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                check_account(i, a)?;
                let key = |k: &str| format!("accounts[{i}].{k}");
                let access_token = self
                    .files
                    .pick(
                        &key("access_token"),
                        a.access_token.as_ref(),
                        a.access_token_file.as_deref(),
                    )?
                    .ok_or_else(|| {
                        ConfigError::new(key("access_token"), "required (or access_token_file)")
                    })?;
                let mut webhook_secrets: Vec<Secret> = self
                    .files
                    .pick(
                        &key("webhook_secret"),
                        a.webhook_secret.as_ref(),
                        a.webhook_secret_file.as_deref(),
                    )?
                    .into_iter()
                    .collect();
                webhook_secrets.extend(a.webhook_secrets.iter().cloned());
                Ok(Account {
                    name: a.name.clone(),
                    access_token,
                    signature_tolerance: (a.signature_tolerance_secs > 0)
                        .then(|| std::time::Duration::from_secs(a.signature_tolerance_secs)),
                    require_signature: require_signature(a),
                    policy: policy(a, hold_settings(i, a)?),
                    webhook_secrets,
                })
            })
            .collect()
    }
}

/// The account's policy, from its keys: the one place a per-account
/// setting goes from the configuration to the rules.
fn policy(a: &AccountConfig, holds: crate::rules::holds::Settings) -> Policy {
    Policy {
        fraud_unauthenticated: a.fraud_unauthenticated,
        fraud_blocks_per_hour: a.fraud_unauthenticated_blocks_per_hour,
        holds,
    }
}

/// Whether any webhook secret is configured, inline or as a file.
fn has_secrets(a: &AccountConfig) -> bool {
    a.webhook_secret.is_some() || a.webhook_secret_file.is_some() || !a.webhook_secrets.is_empty()
}

/// Unsigned webhook forms are refused by default wherever a secret is set.
fn require_signature(a: &AccountConfig) -> bool {
    a.require_signature.unwrap_or(has_secrets(a))
}

/// The account's keys that are no field of its own: the settings of the
/// kinds of hold it turns on, each a string the kind accepts.
fn hold_settings(
    i: usize,
    a: &AccountConfig,
) -> Result<crate::rules::holds::Settings, ConfigError> {
    let key = |k: &str| format!("accounts[{i}].{k}");
    let mut raw = Vec::new();
    for (k, v) in &a.holds {
        match v.as_str() {
            Some(text) => raw.push((k.as_str(), text)),
            None if crate::rules::holds::kind(k).is_none() => {
                return Err(ConfigError::new(key(k), "unknown key"));
            }
            None => return Err(ConfigError::new(key(k), "must be a string")),
        }
    }
    crate::rules::holds::Settings::parse(raw).map_err(|(k, why)| ConfigError::new(key(&k), why))
}

fn check_account(i: usize, a: &AccountConfig) -> Result<(), ConfigError> {
    hold_settings(i, a)?;
    let key = |k: &str| format!("accounts[{i}].{k}");
    for (k, value, file) in [
        (
            "access_token",
            a.access_token.as_ref(),
            a.access_token_file.is_some(),
        ),
        (
            "webhook_secret",
            a.webhook_secret.as_ref(),
            a.webhook_secret_file.is_some(),
        ),
    ] {
        match (value, file) {
            (Some(_), true) => {
                return Err(ConfigError::new(
                    key(k),
                    format!("set either {} or {}_file, not both", key(k), key(k)),
                ));
            }
            (Some(v), false) if v.is_empty() => {
                return Err(ConfigError::new(key(k), "must not be empty"));
            }
            _ => {}
        }
    }
    if a.access_token.is_none() && a.access_token_file.is_none() {
        return Err(ConfigError::new(
            key("access_token"),
            "required (or access_token_file)",
        ));
    }
    if let Some(j) = a.webhook_secrets.iter().position(Secret::is_empty) {
        return Err(ConfigError::new(
            key(&format!("webhook_secrets[{j}]")),
            "must not be empty",
        ));
    }
    if require_signature(a) && !has_secrets(a) {
        return Err(ConfigError::new(
            key("require_signature"),
            "true needs webhook_secret or webhook_secrets",
        ));
    }
    Ok(())
}
