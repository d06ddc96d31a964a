//! One handler per job kind: fetch what the notification names, apply the
//! rules, and return the effects to record. No handler trusts a
//! notification body for a decision, except what DESIGN section 1 allows
//! (an intent body in CANCELED or ERROR, which has no payment).

use serde_json::{Value, json};

use super::JobError;
use crate::api::ApiClient;
use crate::api::types::{AdditionalInfo, MerchantOrder};
use crate::clock::Clock;
use crate::domain::{IntentState, JobKind, ResourceId};
use crate::rules::{self, IntentDecision, Release};
use crate::store::{Decision, Effects, Guard, LeasedJob, Mark, OrderSeen, Store};

/// What handlers reach for.
pub(super) struct Ctx<'a> {
    pub api: &'a ApiClient,
    pub store: &'a Store,
    pub clock: &'a dyn Clock,
    pub deliver_events: bool,
}

impl Ctx<'_> {
    pub fn now(&self) -> i64 {
        crate::store::unix_ms(self.clock.now())
    }
}

pub(super) async fn run(ctx: &Ctx<'_>, job: &LeasedJob) -> Result<Effects, JobError> {
    let (api, store) = (ctx.api, ctx.store);
    let id = ResourceId::parse(&job.resource_id)
        .map_err(|e| JobError::Permanent(format!("resource id {:?} {e}", job.resource_id)))?;
    let account = job.account.as_str();
    let api_err = |e| JobError::from_api(e, job.attempt);
    match job.kind {
        JobKind::Payment => {
            let payment = api.payment(account, &id).await.map_err(api_err)?;
            match payment.order_id() {
                Some(order_id) => {
                    let order = api
                        .merchant_order(account, order_id)
                        .await
                        .map_err(api_err)?;
                    Ok(order_effects(&order))
                }
                // A payment outside any merchant order releases nothing.
                None => Ok(Effects::default()),
            }
        }
        JobKind::MerchantOrder => {
            let order = api.merchant_order(account, &id).await.map_err(api_err)?;
            Ok(order_effects(&order))
        }
        JobKind::Chargeback => chargeback(api, job, &id).await,
        JobKind::PaymentIntent => {
            let intent = api.payment_intent(account, &id).await.map_err(api_err)?;
            match IntentState::parse(&intent.state) {
                Some(state) => {
                    let info = intent.additional_info.clone().unwrap_or_default();
                    decide_intent(
                        api,
                        job,
                        &intent.id,
                        state,
                        intent.payment_id().cloned(),
                        &info,
                    )
                    .await
                }
                // Not final yet: a later notification will bring the change.
                None => Ok(Effects::default()),
            }
        }
        JobKind::IntentBody => intent_body(api, store, job).await,
        JobKind::FraudAlert => super::fraud::run(ctx, job).await,
    }
}

/// The release rule's decision for `order`, and its amounts.
fn order_effects(order: &MerchantOrder) -> Effects {
    let d = rules::release(order);
    let oid = order.id.as_str().to_string();
    let subject = format!("merchant_order:{oid}");
    let data = json!({
        "merchant_order_id": id_json(&order.id),
        "total_amount": d.total.to_string(),
        "paid_amount": d.paid.to_string(),
        "payment_ids": d.payment_ids.iter().map(id_json).collect::<Vec<_>>(),
        "external_reference": order.external_reference,
    });
    let decision = match d.outcome {
        Release::Release => Some(Decision {
            subject,
            key: "order.released".into(),
            event_type: "order.released".into(),
            data,
            guards: vec![Guard::OrderNotBlocked(oid.clone())],
            marks: vec![Mark::OrderReleased(oid.clone())],
            final_outcome: false,
        }),
        Release::AwaitingShipment => Some(Decision {
            subject,
            key: "order.awaiting_shipment".into(),
            event_type: "order.awaiting_shipment".into(),
            data,
            guards: vec![
                Guard::OrderNotReleased(oid.clone()),
                Guard::OrderNotBlocked(oid.clone()),
            ],
            marks: vec![],
            final_outcome: false,
        }),
        Release::NotPaid => None,
    };
    Effects {
        decisions: decision.into_iter().collect(),
        orders: vec![OrderSeen {
            order_id: oid,
            total_amount: d.total.to_string(),
            paid_amount: d.paid.to_string(),
        }],
    }
}

/// Each new status of a chargeback is told once; an order already released
/// whose payment is charged back is flagged at risk, once per chargeback.
async fn chargeback(
    api: &ApiClient,
    job: &LeasedJob,
    id: &ResourceId,
) -> Result<Effects, JobError> {
    let account = job.account.as_str();
    let api_err = |e| JobError::from_api(e, job.attempt);
    let cb = api.chargeback(account, id).await.map_err(api_err)?;
    let mut decisions = vec![Decision {
        subject: format!("chargeback:{}", cb.id),
        key: format!("chargeback.updated:{}", cb.status_key()),
        event_type: "chargeback.updated".into(),
        data: json!({
            "chargeback_id": id_json(&cb.id),
            "payment_ids": cb.payments.iter().map(id_json).collect::<Vec<_>>(),
            "amount": cb.amount.map(|a| a.to_string()),
            "currency": cb.currency,
            "reason": cb.reason,
            "documentation_status": cb.documentation_status,
            "coverage_applied": cb.coverage_applied,
            "date_last_updated": cb.date_last_updated,
        }),
        guards: vec![],
        marks: vec![],
        final_outcome: false,
    }];
    for payment_id in &cb.payments {
        let payment = api.payment(account, payment_id).await.map_err(api_err)?;
        let Some(order_id) = payment.order_id() else {
            continue;
        };
        let oid = order_id.as_str().to_string();
        decisions.push(Decision {
            subject: format!("merchant_order:{oid}"),
            key: format!("order.at_risk:{}", cb.id),
            event_type: "order.at_risk".into(),
            data: json!({
                "merchant_order_id": id_json(order_id),
                "chargeback_id": id_json(&cb.id),
                "payment_id": id_json(payment_id),
            }),
            guards: vec![Guard::OrderReleased(oid.clone())],
            marks: vec![Mark::OrderAtRisk(oid)],
            final_outcome: false,
        });
    }
    Ok(Effects {
        decisions,
        orders: vec![],
    })
}

/// A payment-intent webhook body: only a pointer to the payment, except in
/// CANCELED and ERROR, which have none.
async fn intent_body(api: &ApiClient, store: &Store, job: &LeasedJob) -> Result<Effects, JobError> {
    let delivery = job
        .input_delivery_id
        .ok_or_else(|| JobError::Permanent("intent job without its delivery".into()))?;
    let (body, _) = store
        .delivery_body(delivery)
        .await?
        .ok_or_else(|| JobError::Permanent(format!("delivery {delivery} is gone")))?;
    let body: Value = serde_json::from_slice(&body)
        .map_err(|e| JobError::Permanent(format!("delivery {delivery} body is not JSON: {e}")))?;
    let state = body
        .get("state")
        .and_then(Value::as_str)
        .and_then(IntentState::parse)
        .ok_or_else(|| JobError::Permanent(format!("delivery {delivery} has no final state")))?;
    let intent = ResourceId::parse(&job.resource_id)
        .map_err(|e| JobError::Permanent(format!("intent id {e}")))?;
    let payment = body.pointer("/payment/id").and_then(loose_id);
    let info: AdditionalInfo = body
        .get("additional_info")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    decide_intent(api, job, &intent, state, payment, &info).await
}

async fn decide_intent(
    api: &ApiClient,
    job: &LeasedJob,
    intent: &ResourceId,
    state: IntentState,
    payment_id: Option<ResourceId>,
    info: &AdditionalInfo,
) -> Result<Effects, JobError> {
    let needs_payment = matches!(
        state,
        IntentState::Finished | IntentState::ConfirmationRequired
    );
    let payment = match (&payment_id, needs_payment) {
        (Some(pid), true) => Some(
            api.payment(&job.account, pid)
                .await
                .map_err(|e| JobError::from_api(e, job.attempt))?,
        ),
        _ => None,
    };
    let outcome = match rules::intent(state, payment.as_ref().map(|p| &p.status)) {
        IntentDecision::Decided(o) => o,
        IntentDecision::RetryLater(reason) => {
            return Err(JobError::Retry {
                reason: reason.to_string(),
                after: None,
            });
        }
    };
    Ok(Effects {
        decisions: vec![Decision {
            subject: format!("payment_intent:{intent}"),
            key: "final".into(),
            event_type: outcome.event_type().into(),
            data: json!({
                "payment_intent_id": intent.as_str(),
                "payment_id": payment_id.as_ref().map(id_json),
                "state": state.as_str(),
                "payment_status": payment.as_ref().map(|p| p.status.as_str().to_string()),
                "external_reference": info.external_reference,
                "ticket_number": info.ticket_number,
            }),
            guards: vec![],
            marks: vec![],
            final_outcome: true,
        }],
        orders: vec![],
    })
}

/// An id sent as a string or a number.
pub(super) fn loose_id(v: &Value) -> Option<ResourceId> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    ResourceId::parse(&text).ok()
}

/// Platform ids are numbers; an id that is not one stays a string.
pub(super) fn id_json(id: &ResourceId) -> Value {
    match id.as_str().parse::<u64>() {
        Ok(n) if !id.as_str().starts_with('0') || id.as_str() == "0" => Value::from(n),
        _ => Value::from(id.as_str()),
    }
}
