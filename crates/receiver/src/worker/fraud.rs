//! The fraud saga's steps with I/O (the policy is `rules::fraud`): resolve
//! what the alert names, verify it against the API, block the order in its
//! own committed step before any money moves, then cancel or refund if the
//! alert may, or hold it for a person.

use super::JobError;
use super::handlers::Ctx;
use crate::api::ApiError;
use crate::api::ErrorClass;
use crate::api::types::Payment;
use crate::domain::{Effects, EventType, FraudAlert, MerchantOrderId, PaymentId, kinds};
use crate::rules::fraud::{self as policy, Alert, Plan, Undo};
use crate::store::LeasedJob;

pub(super) async fn run(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    work: FraudAlert,
) -> Result<Effects, JobError> {
    let account = job.account.as_str();
    let unauthenticated = ctx.alerts.get(account).copied().unwrap_or_default();
    let review = ctx
        .store
        .review_state(job.account.clone(), job.key.clone())
        .await?;
    let mut plan = policy::plan(work.authenticated, unauthenticated, review);
    if plan == Plan::Nothing {
        return Ok(Effects::default());
    }
    let mut alert = Alert {
        subject: Alert::subject_of(&job.key),
        job_key: job.key.clone(),
        merchant_order: work.merchant_order.clone(),
        payment: work.payment.clone(),
        description: work.description.clone(),
        delivery_id: job.input_delivery_id,
        authenticated: work.authenticated,
    };
    let mut hold_reason = "the alert is not authenticated (no valid signature binding its payment)";

    // An alert naming nothing: learn what its own id is from the API. What
    // the API says of that id was not said by the alert, so it may only hold.
    if alert.payment.is_none()
        && alert.merchant_order.is_none()
        && let Some(n) = &work.notified_id
    {
        hold_reason = "the alert named no order or payment; resolved from its id";
        plan = plan.at_most_hold();
        if let Some(payment) = lookup(ctx, job, n.cast::<kinds::Payment>().ok()).await? {
            alert.merchant_order = payment.merchant_order_id();
            alert.payment = Some(payment.id);
        } else if let Ok(order) = n.cast::<kinds::MerchantOrder>()
            && exists_order(ctx, job, &order).await?
        {
            alert.merchant_order = Some(order);
        }
    }

    let Some(payment_id) = alert.payment.clone() else {
        let Some(order) = alert.merchant_order.clone() else {
            return Ok(Effects::one(
                alert.rejected("the alert names nothing the API knows of"),
            ));
        };
        // An order but no payment: block it and let a person decide.
        return block_then(ctx, job, &alert, &order, None, Plan::Hold, hold_reason).await;
    };
    let Some(payment) = lookup(ctx, job, Some(payment_id.clone())).await? else {
        return Ok(Effects::one(
            alert.rejected(&format!("no payment {payment_id} for this account")),
        ));
    };
    let order = match policy::verify(alert.merchant_order.as_ref(), &payment) {
        Ok(order) => order,
        Err(reason) => {
            tracing::warn!(subject = %alert.subject, reason, "fraud alert rejected: nothing cancelled");
            return Ok(Effects::one(alert.rejected(&reason)));
        }
    };
    block_then(ctx, job, &alert, &order, Some(&payment), plan, hold_reason).await
}

/// The payment, `None` when the API does not know it (404).
async fn lookup(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    id: Option<PaymentId>,
) -> Result<Option<Payment>, JobError> {
    let Some(id) = id else { return Ok(None) };
    match ctx.api.payment(&job.account, &id).await {
        Ok(p) => Ok(Some(p)),
        Err(ApiError::NotFound { .. }) => Ok(None),
        Err(e) => Err(JobError::from_api(e, job.attempt)),
    }
}

async fn exists_order(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    id: &MerchantOrderId,
) -> Result<bool, JobError> {
    match ctx.api.merchant_order(&job.account, id).await {
        Ok(_) => Ok(true),
        Err(ApiError::NotFound { .. }) => Ok(false),
        Err(e) => Err(JobError::from_api(e, job.attempt)),
    }
}

/// Blocks the order first, durably, so no release can slip in after; then
/// holds the alert or undoes the payment.
async fn block_then(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    alert: &Alert,
    order: &MerchantOrderId,
    payment: Option<&Payment>,
    plan: Plan,
    hold_reason: &str,
) -> Result<Effects, JobError> {
    let payment_id = payment.map(|p| p.id.clone());
    let block = alert.block(order, payment_id.as_ref());
    ctx.record(job, Effects::one(block)).await?;
    let (released, blocked) = ctx
        .store
        .order_flags(job.account.clone(), order.to_string())
        .await?;
    if released && !blocked {
        return Ok(Effects::one(alert.after_release(order)));
    }
    match (plan, payment) {
        (Plan::Act, Some(payment)) => undo(ctx, job, payment, order).await,
        (Plan::Nothing, _) => Ok(Effects::default()),
        _ => Ok(Effects::one(alert.unverified(hold_reason))),
    }
}

/// Cancels or refunds the payment, and names the outcome.
async fn undo(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    payment: &Payment,
    order: &MerchantOrderId,
) -> Result<Effects, JobError> {
    let account = job.account.as_str();
    let outcome = |event, reason| Ok(Effects::one(policy::undone(payment, order, event, reason)));
    let call = match policy::undo(&payment.status) {
        Undo::Cancel => ctx
            .api
            .cancel_payment(account, &payment.id)
            .await
            .map(|_| EventType::PaymentCancelled),
        Undo::Refund => {
            let key = policy::idempotency_key(account, order, &payment.id);
            ctx.api
                .refund_payment(account, &payment.id, &key)
                .await
                .map(|_| EventType::PaymentRefunded)
        }
        Undo::AlreadyDone(event) => Ok(event),
        Undo::NothingMoved => return Ok(Effects::default()),
        Undo::Impossible(reason) => return outcome(EventType::PaymentCancelFailed, Some(reason)),
    };
    match call {
        Ok(event) => outcome(event, None),
        Err(e) => match e.class() {
            ErrorClass::Retry(after) => Err(JobError::Retry {
                reason: e.to_string(),
                after,
            }),
            // A definitive refusal: a person takes it from here.
            ErrorClass::NotFound | ErrorClass::Permanent => {
                outcome(EventType::PaymentCancelFailed, Some(e.to_string()))
            }
        },
    }
}
