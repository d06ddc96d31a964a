//! pointhook receives a payment platform's notifications (IPN and webhooks),
//! stores each durably before answering 200, and turns them into decisions
//! for the merchant's own system.
//!
//! Code map (see ARCHITECTURE.md for the flow and the invariants):
//! - [`config`]: the TOML configuration, environment overrides, validation.
//! - [`http`]: the notification listener: classify, verify, persist, ack.
//! - [`store`]: the only module with SQL: migrations, the group-commit
//!   writer, deliveries and jobs.
//! - [`domain`] and [`rules`]: typed ids, the stored states, and the
//!   business rules as pure functions: their own crate, `pointhook_rules`,
//!   which depends on no runtime, database or HTTP crate.
//! - [`api`]: the platform API client (payments, orders, chargebacks, intents).
//! - [`worker`]: leases jobs, runs a handler per kind, records the outcome.
//! - [`outbox`]: signed delivery of decided events to each destination.
//! - [`reconcile`]: finds changes that came with no notification.
//! - [`alerts`]: tells a person (e-mail, chat webhooks) what needs them.
//! - [`actions`]: what a person may do, each recorded in the audit;
//!   [`operators`]: who signs in to the console, and their passwords.
//! - [`samples`]: once a minute, what the console's health charts draw.
//! - `pointhook_common` (its own crate, shared with the sandbox): money,
//!   clock, text escaping, TLS, signatures, the accept loop.
//!
//! [`App`] wires them: the caller owns the listener and the shutdown token.

pub mod actions;
pub mod alerts;
pub mod api;
mod app;
pub mod config;
pub mod http;
pub mod metrics;
pub mod operators;
pub mod outbox;
pub mod reconcile;
mod retry;
pub mod samples;
pub mod store;
mod systemd;
pub mod worker;

pub use app::{App, Options};
/// The rules crate's two halves under the names the receiver has always
/// used, so `crate::domain::…` and `crate::rules::…` read the same.
pub use pointhook_rules::{self as rules, domain};

#[cfg(test)]
mod tests;
