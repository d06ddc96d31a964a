//! pointhook's domain types and business rules, as pure functions over
//! them: a crate of their own whose dependencies hold no runtime, database
//! or HTTP crate, so the compiler keeps every rule free of I/O. The
//! receiver re-exports the two halves as `pointhook::domain` and
//! `pointhook::rules`, and its tests read fixtures through the platform's
//! wire format (`crates/receiver/src/tests/`).
//!
//! [`domain`]: typed ids, stored states, decisions and guards, the
//! platform's resources as the rules read them.
//!
//! The rules take no clock and no wire format either, so every row of
//! every table is a unit test. Each rule also says which decisions it leads to
//! (event, key, guards, marks) and why, in words a person reads; the worker
//! only fetches and performs the steps it is given, the store only records
//! what the kernel answers.
//!
//! - [`kernel`]: what recording one decision means (guards, finality, the
//!   event's id, envelope and state); both stores call it.
//! - [`routing`]: which destinations an event goes to.
//! - [`release`]: merchant orders (paid net of refunds, shipments).
//! - [`payment`]: `payment.updated`, and a merchant order that is behind.
//! - [`intent`]: payment intents, and whether a payment is the intent's.
//! - [`chargeback`]: chargebacks and orders at risk.
//! - [`platform_order`]: orders of the Orders API (`ORD…`).
//! - [`fraud`]: the fraud alert's saga, as a typed plan of steps.
//! - [`holds`]: decisions that wait for a person, every kind of hold.
//! - [`wait`]: how long a job asks the API again before deciding.
//! - [`policy`]: an account's settings, built once and read by the rules.
//! - [`alerts`]: what needs a person, and when they are told.

pub mod domain;

pub mod alerts;
pub mod chargeback;
pub mod fraud;
pub mod holds;
pub mod intent;
pub mod kernel;
pub mod payment;
pub mod platform_order;
pub mod policy;
pub mod release;
pub mod routing;
pub mod wait;

pub use intent::{IntentDecision, IntentOutcome};
pub use policy::{Policies, Policy};
pub use release::{Release, ReleaseDecision};

use crate::domain::verdict::{DecisionRules, EventPolicy};

/// The rules a store decides with.
pub fn decision_rules(events: EventPolicy) -> DecisionRules {
    DecisionRules {
        decide: kernel::decide,
        dismissal: fraud::dismissed,
        holds: holds::decided,
        route: routing::destinations,
        events,
    }
}
