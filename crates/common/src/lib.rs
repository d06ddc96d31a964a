//! What pointhook's receiver and its sandbox both need, and nothing else:
//! the platform's wire conventions and the small HTTP serving helpers.
//!
//! - [`money`]: exact decimal amounts, read from the JSON text.
//! - [`clock`]: the source of "now" that tests can fix or advance, and the
//!   RFC 3339 form of times.
//! - [`signature`]: the `x-signature` of webhooks, made and checked.
//! - [`query`]: query strings.
//! - [`serve`]: the accept loop every listener shares; [`response`]: JSON
//!   answers and error bodies.
//! - [`text`]: text from outside made safe for logs and terminals.
//! - [`host`]: which `Host` a listener answers (against DNS rebinding).
//! - [`tls`]: the process's TLS provider.

pub mod clock;
#[cfg(feature = "serve")]
pub mod host;
pub mod money;
pub mod query;
#[cfg(feature = "serve")]
pub mod response;
#[cfg(feature = "serve")]
pub mod serve;
pub mod signature;
pub mod text;
#[cfg(feature = "serve")]
pub mod tls;
