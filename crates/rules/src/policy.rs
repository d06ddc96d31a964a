//! An account's policy: every per-account setting a rule reads, built once
//! when the configuration is resolved (`config::Account::policy`) and
//! handed whole to the rules. A new per-account setting is a key in
//! `config`, a field here, and the rule that reads it.

use std::collections::HashMap;

use crate::domain::UnauthenticatedAlerts;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// What a verified fraud alert that is not authenticated does
    /// (`fraud_unauthenticated`).
    pub fraud_unauthenticated: UnauthenticatedAlerts,
    /// Blocks such alerts may place per hour; past it they are held
    /// without blocking (`fraud_unauthenticated_blocks_per_hour`).
    pub fraud_blocks_per_hour: u32,
    /// The kinds of hold it turned on, with their settings (`holds`).
    pub holds: crate::holds::Settings,
}

/// What an account no configuration names is held to: nothing moves
/// money, nothing is blocked without a person.
static STRICTEST: Policy = Policy {
    fraud_unauthenticated: UnauthenticatedAlerts::Hold,
    fraud_blocks_per_hour: 0,
    holds: crate::holds::Settings::NONE,
};

impl Policy {
    /// Reviews unauthenticated alerts may open per hour: three times their
    /// blocks, so that past the blocks' brake some are still held (without
    /// blocking) before the rest are only recorded.
    pub fn fraud_reviews_per_hour(&self) -> u32 {
        self.fraud_blocks_per_hour.saturating_mul(3)
    }
}

/// Every account's policy, by the account's name.
#[derive(Debug, Clone, Default)]
pub struct Policies(HashMap<String, Policy>);

impl Policies {
    /// The account's policy; the strictest for an account not configured
    /// (its jobs cannot call the API anyway).
    pub fn of(&self, account: &str) -> &Policy {
        self.0.get(account).unwrap_or(&STRICTEST)
    }
}

impl FromIterator<(String, Policy)> for Policies {
    fn from_iter<I: IntoIterator<Item = (String, Policy)>>(iter: I) -> Policies {
        Policies(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_not_configured_is_held_to_the_strictest() {
        let acts = Policy {
            fraud_unauthenticated: UnauthenticatedAlerts::Act,
            fraud_blocks_per_hour: 10,
            holds: Default::default(),
        };
        let p: Policies = [("north".to_string(), acts.clone())].into_iter().collect();
        assert_eq!(p.of("north"), &acts);
        assert_eq!(p.of("north").fraud_reviews_per_hour(), 30);
        let other = p.of("south");
        assert_eq!(other.fraud_unauthenticated, UnauthenticatedAlerts::Hold);
        assert_eq!(other.fraud_blocks_per_hour, 0);
    }
}
