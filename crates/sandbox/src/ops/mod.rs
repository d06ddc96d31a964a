//! The operations: what each call does to the sandbox's state and which
//! notifications it sends, the background rounds that send them on the
//! platform's schedule, emulated terminals, device e-mails and the clock.
//! Below `routes`, above `state`; nothing here speaks SQL or HTTP routing.
//!
//! - `sandbox`: the `Sandbox` every operation acts on;
//! - resources of the platform's API: `payments`, `card_tokens`, `refunds`,
//!   `merchant_orders`, `search`, `read`, `devices`, `terminals` (intents
//!   on devices), `intents` (how an intent ends, the integrator), `orders`
//!   (the Orders API), `preferences` and `checkout` (Checkout Pro, paid
//!   on the checkout page), `payment_fields` (what a payment carries),
//!   `stores` (stores and points of sale), `catalog` (payment methods,
//!   identification types, the user, per site), `customers` (and cards);
//! - the control API's: `control` (orders, payments, chargebacks, fraud
//!   alerts), `admin` (faults, quirks, devices, resources, the clock),
//!   `replay` (a recorded notification sent again);
//! - notifications: `changes` (a change and its announcement), `shapes`
//!   (their bodies), `queue` (queued with the quirks' effects,
//!   `quirk_effects`), `dispatch` (the attempts), `rounds` (the loop),
//!   `mail` (device e-mails), `clock` (the manual clock).

pub mod admin;
pub mod card_tokens;
pub mod catalog;
pub mod changes;
pub mod checkout;
pub mod clock;
pub mod control;
pub mod customers;
pub mod devices;
pub mod dispatch;
pub mod intents;
pub mod mail;
pub mod merchant_orders;
pub mod orders;
pub mod payment_fields;
pub mod payments;
pub mod preferences;
pub mod queue;
pub mod quirk_effects;
pub mod read;
pub mod refunds;
pub mod replay;
pub mod rounds;
pub mod sandbox;
pub mod search;
pub mod shapes;
pub mod stores;
pub mod terminals;
