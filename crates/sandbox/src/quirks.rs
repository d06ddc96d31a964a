//! The platform's quirks as settings: each off by default, set for every
//! account or for one (`POST /sandbox/quirks`, `--quirk NAME[=VALUE]`),
//! and what is in force for an account. What each does to a notification
//! is `ops::quirk_effects`; the settings live in the state (`state::quirks`),
//! cleared at each start: they are about one run.

use serde::{Deserialize, Serialize};

/// How long an out-of-order notification is held (sandbox time, not
/// scaled: a sandbox choice, not a platform timing).
pub const HOLD_MS: i64 = 1_000;
/// Eventual consistency longer than this is refused (one hour).
pub const MAX_EVENTUAL_MS: u64 = 3_600_000;

/// Quirk settings as given: `None` leaves a field to the global setting
/// (for an account) or off (globally).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuirkSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eventual_consistency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twins: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsigned: Option<bool>,
}

impl QuirkSet {
    /// `self` with the fields `patch` sets replaced.
    pub fn patched(self, patch: QuirkSet) -> QuirkSet {
        QuirkSet {
            eventual_consistency_ms: patch
                .eventual_consistency_ms
                .or(self.eventual_consistency_ms),
            twins: patch.twins.or(self.twins),
            out_of_order: patch.out_of_order.or(self.out_of_order),
            duplicates: patch.duplicates.or(self.duplicates),
            unsigned: patch.unsigned.or(self.unsigned),
        }
    }

    /// Sets one quirk from `--quirk NAME[=VALUE]`.
    pub fn parse_flag(self, flag: &str) -> Result<QuirkSet, String> {
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (flag.trim(), None),
        };
        let name = name.replace('-', "_");
        let boolean = |v: Option<&str>| match v {
            None | Some("true" | "on" | "1") => Ok(true),
            Some("false" | "off" | "0") => Ok(false),
            Some(other) => Err(format!("--quirk {name}={other}: expected true or false")),
        };
        let mut patch = QuirkSet::default();
        match name.as_str() {
            "eventual_consistency_ms" | "eventual_consistency" => {
                let ms = value
                    .and_then(|v| v.parse::<u64>().ok())
                    .filter(|ms| *ms <= MAX_EVENTUAL_MS)
                    .ok_or_else(|| {
                        format!(
                            "--quirk {name}=MS: expected milliseconds, at most {MAX_EVENTUAL_MS}"
                        )
                    })?;
                patch.eventual_consistency_ms = Some(ms);
            }
            "twins" => patch.twins = Some(boolean(value)?),
            "out_of_order" => patch.out_of_order = Some(boolean(value)?),
            "duplicates" => patch.duplicates = Some(boolean(value)?),
            "unsigned" => patch.unsigned = Some(boolean(value)?),
            other => {
                return Err(format!(
                    "unknown quirk {other:?} (known: eventual_consistency_ms=MS, twins, out_of_order, duplicates, unsigned)"
                ));
            }
        }
        Ok(self.patched(patch))
    }

    /// Checks what the control API was given.
    pub fn check(&self) -> Result<(), String> {
        match self.eventual_consistency_ms {
            Some(ms) if ms > MAX_EVENTUAL_MS => Err(format!(
                "eventual_consistency_ms must be at most {MAX_EVENTUAL_MS} (an hour)"
            )),
            _ => Ok(()),
        }
    }
}

/// The quirks in force for one account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Quirks {
    pub eventual_consistency_ms: u64,
    pub twins: bool,
    pub out_of_order: bool,
    pub duplicates: bool,
    pub unsigned: bool,
}

impl Quirks {
    /// What holds for an account: its own settings over the global ones.
    pub fn from_sets(global: QuirkSet, account: QuirkSet) -> Quirks {
        let s = global.patched(account);
        Quirks {
            eventual_consistency_ms: s.eventual_consistency_ms.unwrap_or(0),
            twins: s.twins.unwrap_or(false),
            out_of_order: s.out_of_order.unwrap_or(false),
            duplicates: s.duplicates.unwrap_or(false),
            unsigned: s.unsigned.unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_set_quirks_and_name_what_is_wrong() {
        let q = QuirkSet::default()
            .parse_flag("twins")
            .and_then(|q| q.parse_flag("eventual-consistency-ms=1500"))
            .and_then(|q| q.parse_flag("duplicates=false"))
            .unwrap();
        let q = Quirks::from_sets(q, QuirkSet::default());
        assert!(q.twins && !q.duplicates && !q.unsigned);
        assert_eq!(q.eventual_consistency_ms, 1500);
        for bad in [
            "bogus",
            "twins=maybe",
            "eventual_consistency_ms",
            "eventual_consistency_ms=-3",
            "eventual_consistency_ms=99999999999",
        ] {
            assert!(QuirkSet::default().parse_flag(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_account_setting_wins_over_the_global_one() {
        let global = QuirkSet {
            twins: Some(true),
            unsigned: Some(true),
            ..QuirkSet::default()
        };
        let own = QuirkSet {
            twins: Some(false),
            ..QuirkSet::default()
        };
        let q = Quirks::from_sets(global, own);
        assert!(!q.twins && q.unsigned);
    }
}
