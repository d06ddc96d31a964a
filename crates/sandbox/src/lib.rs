//! The sandbox: a local emulator of the notification service. It serves the platform's resources API, a control API under
//! `/sandbox/…` to create and change resources, and dispatches IPNs and
//! webhooks on the platform's retry schedule, scaled by `time_scale`.
//!
//! Its own crate: it shares only `pointhook-common` with the receiver, and
//! the receiver never depends on it.
//!
//! Three layers, each importing only those below it:
//!
//! - `routes`: the HTTP face, one axum table with the control API nested
//!   under `/sandbox`; route functions extract, call one operation and
//!   answer JSON;
//! - `ops`: the operations, the notifications they send, and what runs on
//!   the sandbox's clock (dispatch, emulated terminals, device e-mails);
//! - `state`: SQLite, the only SQL.
//!
//! Beside them: `fixture`, a client that drives a running sandbox through
//! a file of steps (`pointhook sandbox trigger`, the demo). Below all
//! three: `error` (the one `HttpError`, and its
//! rendering in the platform's or the control API's shape), `model` (the
//! stored enums, an account, a notification), `settings`, `quirks` (the
//! quirk settings) and `faults` (injected API faults, the call log).
//!
//! Time comes from the clock it is given, so tests can run the whole
//! 96-hour schedule on a virtual clock (`run_due`, `run_terminals` after
//! advancing it, or `advance`, which runs whatever falls due on the way).

#![recursion_limit = "256"]

pub mod error;
pub mod faults;
pub mod fixture;
pub mod model;
pub mod ops;
pub mod quirks;
mod routes;
pub mod settings;
pub mod state;

pub use ops::sandbox::{Sandbox, random_token};
pub use settings::{
    AccountSpec, EVENT_GROUPS, FIRST_DEVICE, MailSettings, Reach, SandboxFile, SandboxSettings,
};
