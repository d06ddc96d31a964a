//! The calls that move money or change an order: cancel and refund, of a
//! payment or of an Orders API order. Each takes the run's call log; the
//! refunds carry an idempotency key so a retried call never acts twice.

use super::ApiClient;
use super::calls::CallLog;
use super::endpoint::Endpoint;
use super::error::ApiError;
use crate::domain::{PaymentId, PlatformOrderId};

impl ApiClient {
    /// Cancels an order of the Orders API. `idempotency_key` makes a
    /// repeated call return the same answer rather than act twice.
    pub async fn cancel_platform_order(
        &self,
        log: &CallLog,
        account: &str,
        id: &PlatformOrderId,
        idempotency_key: &str,
    ) -> Result<serde_json::Value, ApiError> {
        let call = self
            .at(
                log,
                account,
                Endpoint::PlatformOrderCancel,
                reqwest::Method::POST,
                "/v1/orders/{id}/cancel",
                id.as_str(),
            )
            .idempotent(idempotency_key);
        self.send(call).await
    }

    /// Refunds an order in full, or `amount` of its payment `transaction`.
    pub async fn refund_platform_order(
        &self,
        log: &CallLog,
        account: &str,
        id: &PlatformOrderId,
        partial: Option<(&str, pointhook_common::money::Money)>,
        idempotency_key: &str,
    ) -> Result<serde_json::Value, ApiError> {
        let body = partial.map(|(transaction, amount)| {
            serde_json::json!({"transactions": [{"id": transaction, "amount": amount.to_string()}]})
        });
        let mut call = self
            .at(
                log,
                account,
                Endpoint::PlatformOrderRefund,
                reqwest::Method::POST,
                "/v1/orders/{id}/refund",
                id.as_str(),
            )
            .idempotent(idempotency_key);
        if let Some(body) = body {
            call = call.body(body);
        }
        self.send(call).await
    }

    /// Cancels a payment that is still pending (`PUT {"status":"cancelled"}`).
    pub async fn cancel_payment(
        &self,
        log: &CallLog,
        account: &str,
        id: &PaymentId,
    ) -> Result<serde_json::Value, ApiError> {
        let body = serde_json::json!({"status": "cancelled"});
        let call = self
            .at(
                log,
                account,
                Endpoint::Cancel,
                reqwest::Method::PUT,
                &self.cancel_path,
                id.as_str(),
            )
            .body(body);
        self.send(call).await
    }

    /// Refunds a payment in full. `idempotency_key` makes a retry of the same
    /// refund a no-op at the platform.
    pub async fn refund_payment(
        &self,
        log: &CallLog,
        account: &str,
        id: &PaymentId,
        idempotency_key: &str,
    ) -> Result<serde_json::Value, ApiError> {
        let body = serde_json::json!({});
        let call = self
            .at(
                log,
                account,
                Endpoint::Refund,
                reqwest::Method::POST,
                &self.refund_path,
                id.as_str(),
            )
            .body(body)
            .idempotent(idempotency_key);
        self.send(call).await
    }
}
