//! Which destinations an event goes to: every one
//! whose types and accounts take it, from the routing table fixed when the
//! store opens. The kernel asks this for each event it queues.

use crate::domain::EventType;
use crate::domain::verdict::EventPolicy;

/// The destinations that take an event of `event` for `account`, in the
/// order they are configured.
pub fn destinations(policy: &EventPolicy, account: &str, event: EventType) -> Vec<String> {
    policy
        .routes
        .iter()
        .filter(|r| r.types.contains(&event))
        .filter(|r| {
            r.accounts
                .as_ref()
                .is_none_or(|a| a.iter().any(|name| name == account))
        })
        .map(|r| r.destination.clone())
        .collect()
}
