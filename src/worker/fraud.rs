//! The fraud saga (DESIGN section 4). An alert is verified against the API
//! before anything is touched: the payment must exist for this account and
//! belong to the named merchant order. Then the order is blocked for good
//! (recorded before any money moves) and the payment undone: cancelled while
//! still pending, refunded once approved, with an idempotency key derived
//! from the alert so a retry never refunds twice. An order already released
//! is left to a person: goods are gone, and a forged alert must not become
//! a free refund.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::JobError;
use super::handlers::{Ctx, id_json, loose_id};
use crate::api::types::{Payment, PaymentStatus};
use crate::api::{ApiError, ErrorClass};
use crate::domain::{ResourceId, SignatureStatus};
use crate::store::{Decision, Effects, Guard, LeasedJob, Mark};

pub(super) async fn run(ctx: &Ctx<'_>, job: &LeasedJob) -> Result<Effects, JobError> {
    let delivery = job
        .input_delivery_id
        .ok_or_else(|| JobError::Permanent("fraud alert job without its delivery".into()))?;
    let (body, signature) = ctx
        .store
        .delivery_body(delivery)
        .await?
        .ok_or_else(|| JobError::Permanent(format!("delivery {delivery} is gone")))?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let field = |name: &str| {
        body.get(name)
            .or_else(|| body.get("data").and_then(|d| d.get(name)))
    };
    let order = field("merchant_order").and_then(loose_id);
    let payment_id = ResourceId::parse(&job.resource_id)
        .map_err(|e| JobError::Permanent(format!("payment id {e}")))?;
    let alert = Alert {
        subject: format!(
            "fraud_alert:{}:{payment_id}",
            order.as_ref().map_or("-", |o| o.as_str())
        ),
        data: json!({
            "merchant_order_id": order.as_ref().map(id_json),
            "payment_id": id_json(&payment_id),
            "description": field("description").and_then(Value::as_str),
            "delivery_id": delivery,
        }),
    };

    if signature == SignatureStatus::Invalid {
        return Ok(alert.decide("unverified", "fraud_alert.unverified", None));
    }
    let Some(order) = order else {
        return Ok(alert.rejected("the alert names no merchant order"));
    };
    let payment = match ctx.api.payment(&job.account, &payment_id).await {
        Ok(p) => p,
        Err(e @ ApiError::NotFound { .. }) => {
            return Ok(alert.rejected(&format!("no such payment for this account: {e}")));
        }
        Err(e) => return Err(JobError::from_api(e, job.attempt)),
    };
    if payment.order_id() != Some(&order) {
        let owner = payment
            .order_id()
            .map_or("no order".to_string(), |o| format!("order {o}"));
        return Ok(alert.rejected(&format!(
            "payment {payment_id} belongs to {owner}, not {order}"
        )));
    }

    // Verified. Block first, durably, so no release can slip in after.
    let oid = order.as_str().to_string();
    let block = Effects {
        decisions: vec![Decision {
            subject: format!("merchant_order:{oid}"),
            key: "order.blocked".into(),
            event_type: "order.blocked".into(),
            data: json!({
                "merchant_order_id": id_json(&order),
                "payment_id": id_json(&payment_id),
                "description": alert.data["description"],
            }),
            guards: vec![Guard::OrderNotReleased(oid.clone())],
            marks: vec![Mark::OrderBlocked(oid.clone())],
            final_outcome: false,
        }],
        orders: vec![],
    };
    ctx.store
        .record_effects(job.clone(), block, ctx.now(), ctx.deliver_events)
        .await?;
    let (_, blocked) = ctx
        .store
        .order_flags(job.account.clone(), oid.clone())
        .await?;
    if !blocked {
        return Ok(Effects {
            decisions: vec![Decision {
                subject: format!("merchant_order:{oid}"),
                key: format!("order.fraud_after_release:{payment_id}"),
                event_type: "order.fraud_after_release".into(),
                data: alert.data.clone(),
                guards: vec![Guard::OrderReleased(oid)],
                marks: vec![],
                final_outcome: false,
            }],
            orders: vec![],
        });
    }
    undo(ctx, job, &payment, &order).await
}

/// Cancels or refunds the payment, and names the outcome.
async fn undo(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    payment: &Payment,
    order: &ResourceId,
) -> Result<Effects, JobError> {
    let event = |key: &str, reason: Option<String>| {
        let mut data = json!({
            "payment_id": id_json(&payment.id),
            "merchant_order_id": id_json(order),
            "amount": payment.transaction_amount.map(|a| a.to_string()),
            "status": payment.status.as_str(),
        });
        if let Some(r) = reason {
            data["reason"] = Value::from(r);
        }
        Effects {
            decisions: vec![Decision {
                subject: format!("payment:{}", payment.id),
                key: key.into(),
                event_type: key.into(),
                data,
                guards: vec![],
                marks: vec![],
                final_outcome: false,
            }],
            orders: vec![],
        }
    };
    let account = job.account.as_str();
    let call = match &payment.status {
        PaymentStatus::Pending | PaymentStatus::InProcess | PaymentStatus::Authorized => ctx
            .api
            .cancel_payment(account, &payment.id)
            .await
            .map(|_| "payment.cancelled"),
        PaymentStatus::Approved => {
            let key = idempotency_key(account, order, &payment.id);
            ctx.api
                .refund_payment(account, &payment.id, &key)
                .await
                .map(|_| "payment.refunded")
        }
        // Undone already (perhaps by an earlier run of this very job).
        PaymentStatus::Cancelled => Ok("payment.cancelled"),
        PaymentStatus::Refunded => Ok("payment.refunded"),
        PaymentStatus::Rejected => return Ok(Effects::default()),
        other => {
            return Ok(event(
                "payment.cancel_failed",
                Some(format!(
                    "a payment in status {} cannot be undone automatically",
                    other.as_str()
                )),
            ));
        }
    };
    match call {
        Ok(kind) => Ok(event(kind, None)),
        Err(e) => match e.class() {
            ErrorClass::Retry(after) => Err(JobError::Retry {
                reason: e.to_string(),
                after,
            }),
            // A definitive refusal: a person takes it from here.
            ErrorClass::NotFound | ErrorClass::Permanent => {
                Ok(event("payment.cancel_failed", Some(e.to_string())))
            }
        },
    }
}

/// The same alert always gives the same key.
fn idempotency_key(account: &str, order: &ResourceId, payment: &ResourceId) -> String {
    let mut h = Sha256::new();
    for part in [account, order.as_str(), payment.as_str()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("pointhook-fraud-{}", hex::encode(&h.finalize()[..16]))
}

struct Alert {
    subject: String,
    data: Value,
}

impl Alert {
    fn decide(&self, key: &str, event_type: &str, reason: Option<&str>) -> Effects {
        let mut data = self.data.clone();
        if let Some(r) = reason {
            data["reason"] = Value::from(r);
        }
        Effects {
            decisions: vec![Decision {
                subject: self.subject.clone(),
                key: key.into(),
                event_type: event_type.into(),
                data,
                guards: vec![],
                marks: vec![],
                final_outcome: false,
            }],
            orders: vec![],
        }
    }

    fn rejected(&self, reason: &str) -> Effects {
        tracing::warn!(subject = %self.subject, reason, "fraud alert rejected: nothing cancelled");
        self.decide("rejected", "fraud_alert.rejected", Some(reason))
    }
}
