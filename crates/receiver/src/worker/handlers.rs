//! One handler per kind of work: fetch what the notification names, hand it
//! to the rules, and return the effects to record. Nothing here decides:
//! `rules` does, from what the API said, and `rules::wait` says how long
//! to ask again. The fraud alert's saga is `fraud.rs`.

use pointhook_common::money::Overflow;

use super::JobError;
use super::ctx::Ctx;
use crate::domain::refs;
use crate::domain::{
    ChargebackId, Effects, IntentId, MerchantOrderId, OrderPayment, PaymentId, PlatformOrderId,
    Work,
};
use crate::rules::wait::Wait;
use crate::rules::{self, IntentDecision};
use crate::store::LeasedJob;

pub(super) async fn run(ctx: &Ctx<'_>, job: &LeasedJob) -> Result<Effects, JobError> {
    let work = job.work.clone().map_err(JobError::unprocessable)?;
    match work {
        Work::Payment { id } => payment(ctx, job, &id).await,
        Work::MerchantOrder { id } => merchant_order(ctx, job, &id).await,
        Work::Chargeback { id } => chargeback(ctx, job, &id).await,
        Work::PaymentIntent { id } => intent(ctx, job, &id).await,
        Work::PlatformOrder { id } => platform_order(ctx, job, &id).await,
        Work::FraudAlert(alert) => super::fraud::run(ctx, job, alert).await,
    }
}

fn overflow(what: String) -> impl FnOnce(Overflow) -> JobError {
    move |e| JobError::unprocessable(format!("{what}: {e}"))
}

/// Each new status of the payment is told; then its merchant order, if it
/// has one of this platform's, goes through the release rule.
async fn payment(ctx: &Ctx<'_>, job: &LeasedJob, id: &PaymentId) -> Result<Effects, JobError> {
    let account = job.account.as_str();
    let api_err = |e| JobError::from_api(e, job);
    let payment = ctx
        .api
        .payment(ctx.calls, account, id)
        .await
        .map_err(api_err)?;
    let mut effects = Effects::one(rules::payment::updated(&payment));
    effects.refs = refs::of_payment(&payment);
    let Some(order_id) = payment.merchant_order.clone() else {
        return Ok(effects);
    };
    let order = ctx
        .api
        .merchant_order(ctx.calls, account, &order_id)
        .await
        .map_err(api_err)?;
    if rules::payment::order_is_behind(&payment, &order) && ctx.may_wait(job, Wait::OrderBehind) {
        // Tell the payment now; the order is looked at again shortly.
        ctx.record(job, effects).await?;
        return Err(JobError::waiting(format!(
            "merchant order {order_id} does not list approved payment {id} yet"
        )));
    }
    let order_effects = rules::release::order_effects(&order)
        .map_err(overflow(format!("merchant order {order_id}")))?;
    effects.decisions.extend(order_effects.decisions);
    effects.orders.extend(order_effects.orders);
    effects.refs = refs::of_merchant_order(&order, Some(&payment));
    Ok(effects)
}

async fn merchant_order(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    id: &MerchantOrderId,
) -> Result<Effects, JobError> {
    let order = ctx
        .api
        .merchant_order(ctx.calls, &job.account, id)
        .await
        .map_err(|e| JobError::from_api(e, job))?;
    let mut effects =
        rules::release::order_effects(&order).map_err(overflow(format!("merchant order {id}")))?;
    effects.refs = refs::of_merchant_order(&order, None);
    Ok(effects)
}

async fn chargeback(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    id: &ChargebackId,
) -> Result<Effects, JobError> {
    let account = job.account.as_str();
    let api_err = |e| JobError::from_api(e, job);
    let cb = ctx
        .api
        .chargeback(ctx.calls, account, id)
        .await
        .map_err(api_err)?;
    let mut effects = Effects::one(rules::chargeback::updated(&cb));
    for payment_id in &cb.payments {
        let payment = ctx
            .api
            .payment(ctx.calls, account, payment_id)
            .await
            .map_err(api_err)?;
        if let Some(order) = &payment.merchant_order {
            effects
                .decisions
                .push(rules::chargeback::at_risk(&cb, payment_id, order));
        }
    }
    Ok(effects)
}

/// Fetches the intent (whatever a notification claimed of it) and its
/// payment, and decides from those.
async fn intent(ctx: &Ctx<'_>, job: &LeasedJob, id: &IntentId) -> Result<Effects, JobError> {
    let account = job.account.as_str();
    let api_err = |e| JobError::from_api(e, job);
    let intent = ctx
        .api
        .payment_intent(ctx.calls, account, id)
        .await
        .map_err(api_err)?;
    let Some(state) = intent.state else {
        return not_final(
            ctx,
            job,
            &format!("payment intent {id} is in state {:?}", intent.state_text),
        );
    };
    let payment = match &intent.payment {
        Some(pid) if rules::intent::needs_payment(state) => Some(
            ctx.api
                .payment(ctx.calls, account, pid)
                .await
                .map_err(api_err)?,
        ),
        _ => None,
    };
    if let Some(p) = &payment {
        rules::intent::payment_matches(&intent, p).map_err(|m| {
            JobError::needs_person(format!(
                "payment intent {id} not decided, a person must look: {m}"
            ))
        })?;
    }
    match rules::intent::intent(state, payment.as_ref().map(|p| &p.status)) {
        IntentDecision::Decided(outcome) => Ok(Effects {
            refs: refs::of_intent(&intent, payment.as_ref()),
            ..Effects::one(rules::intent::decision(
                &intent,
                state,
                payment.as_ref(),
                outcome,
            ))
        }),
        IntentDecision::Wait(reason) => {
            Err(JobError::waiting(format!("payment intent {id}: {reason}")))
        }
        IntentDecision::NotFinal(state) => not_final(
            ctx,
            job,
            &format!("payment intent {id} is still {}", state.as_str()),
        ),
    }
}

/// Fetches the order (and, for one to check on the terminal, its payment)
/// and decides from those.
async fn platform_order(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    id: &PlatformOrderId,
) -> Result<Effects, JobError> {
    use rules::platform_order::{self as po, OrderDecision};
    let account = job.account.as_str();
    let api_err = |e| JobError::from_api(e, job);
    let order = ctx
        .api
        .platform_order(ctx.calls, account, id)
        .await
        .map_err(api_err)?;
    let mut payments = po::payments(&order);
    let (outcome, checked) = match po::status(&order) {
        OrderDecision::Final(outcome) => (outcome, None),
        OrderDecision::CheckPayment => {
            // Recorded now, so not again with the decision.
            keep_payments(ctx, job, std::mem::take(&mut payments)).await?;
            let Some(pid) = order.payments.iter().find_map(|t| t.payment_id()) else {
                return Err(JobError::waiting(format!(
                    "order {id} asks for a check but names no payment yet"
                )));
            };
            let payment = ctx
                .api
                .payment(ctx.calls, account, &pid)
                .await
                .map_err(api_err)?;
            match po::checked(&payment.status) {
                Some(outcome) => (outcome, Some(payment.status)),
                None => {
                    return Err(JobError::waiting(format!(
                        "order {id}: payment {pid} is still {}",
                        payment.status.as_str()
                    )));
                }
            }
        }
        OrderDecision::NotFinal => {
            keep_payments(ctx, job, payments).await?;
            return not_final(
                ctx,
                job,
                &format!(
                    "order {id} is still {}",
                    pointhook_common::text::printable(&order.status)
                ),
            );
        }
    };
    let decisions = po::decisions(&order, outcome, checked.as_ref())
        .map_err(overflow(format!("order {id}")))?;
    Ok(Effects {
        decisions,
        order_payments: payments,
        refs: refs::of_platform_order(&order),
        ..Effects::default()
    })
}

/// An order's payments recorded before its run may end without a decision
/// (asked again later): the sweeper must not take them for notifications
/// that never came meanwhile.
async fn keep_payments(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    payments: Vec<OrderPayment>,
) -> Result<(), JobError> {
    if payments.is_empty() {
        return Ok(());
    }
    let effects = Effects {
        order_payments: payments,
        ..Effects::default()
    };
    ctx.record(job, effects).await
}

/// An intent that is still moving is asked again for a while; after that
/// the job ends without a decision (a later notification brings the change).
fn not_final(ctx: &Ctx<'_>, job: &LeasedJob, what: &str) -> Result<Effects, JobError> {
    if ctx.may_wait(job, Wait::NotFinal) {
        return Err(JobError::waiting(what.to_string()));
    }
    tracing::warn!(
        job_id = job.id,
        "{what} after {} attempts: nothing decided",
        job.attempt
    );
    Ok(Effects::default())
}
