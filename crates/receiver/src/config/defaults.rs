//! The default of each key that has one (sample-config.toml shows them).

use std::net::SocketAddr;

/// What one address may send per second. A merchant's real traffic is
/// its sales told some six times each (IPN and webhook, for the payment
/// and for its order, and their updates): 50 sales a second, more than
/// almost any single shop sells at its peak, is 300 notifications a
/// second. A client above 1,000 is a flood, and a 429 never reaches
/// the platform's real traffic (it would lose a fraud alert webhook,
/// which is never sent again).
pub const RATE_LIMIT_PER_IP: u32 = 1000;

pub fn retention_days() -> u64 {
    7
}
pub fn api_timeout_secs() -> u64 {
    10
}
pub fn api_requests_per_second() -> u32 {
    20
}
pub fn payment_intent_path() -> String {
    "/point/integration-api/payment-intents/{id}".into()
}
pub fn payment_cancel_path() -> String {
    "/v1/payments/{id}".into()
}
pub fn payment_refund_path() -> String {
    "/v1/payments/{id}/refunds".into()
}
pub fn fulfillment_timeout_secs() -> u64 {
    10
}
pub fn fulfillment_give_up_hours() -> u64 {
    72
}
pub fn fulfillment_max_in_flight() -> usize {
    64
}
/// Ten blocks an hour: more than a shop sees of real alerts, few
/// enough that a flood of forged ones stalls few orders.
pub fn fraud_blocks_per_hour() -> u32 {
    10
}
pub fn admin_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8081))
}
pub fn session_idle_secs() -> u64 {
    1800
}
