//! The business rules, as pure functions over typed data (DESIGN section
//! 4): no I/O, no clock, so every row of every table is a unit test. Each
//! rule also says which decisions it leads to (event, key, guards, marks);
//! the worker only fetches and hands over, the store only records.
//!
//! - [`release`]: merchant orders (paid net of refunds, shipments).
//! - [`payment`]: `payment.updated`, and waiting for a merchant order that
//!   is behind.
//! - [`intent`]: payment intents, and whether a payment is the intent's.
//! - [`chargeback`]: chargebacks and orders at risk.
//! - [`platform_order`]: orders of the Orders API (`ORD…`).
//! - [`fraud`]: what a fraud alert may do and how a payment is undone.
//! - [`finality`]: what a new outcome means against a recorded final one.

pub mod chargeback;
pub mod fraud;
pub mod intent;
pub mod payment;
pub mod platform_order;
pub mod release;

pub use intent::{IntentDecision, IntentOutcome};
pub use release::{Release, ReleaseDecision};

/// What a new final outcome means against the one recorded, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finality {
    /// Nothing recorded: record and emit.
    New,
    /// The same outcome again: nothing to do.
    Same,
    /// A different outcome for a subject already final: recorded as a
    /// conflict, changes nothing.
    Conflict,
}

pub fn finality<T: PartialEq>(recorded: Option<T>, new: T) -> Finality {
    match recorded {
        None => Finality::New,
        Some(r) if r == new => Finality::Same,
        Some(_) => Finality::Conflict,
    }
}

#[cfg(test)]
mod tests;
