//! The fraud saga's I/O: `rules::fraud::next` names each step, and this
//! performs it (an API call, or a durable record of the order's block
//! before any money moves) and tells the saga what came of it. Nothing
//! here decides.

use super::JobError;
use super::ctx::Ctx;
use crate::api::error::{ApiError, ErrorClass};
use crate::domain::{Effects, FraudAlert, refs};
use crate::rules::fraud::{self as plan, BlockSeen, Lookup, Saga, Step, Undone};
use crate::store::LeasedJob;

/// Steps a saga may take in one run; each call or record is one. A plan
/// that asked for more would be looping.
const MAX_STEPS: usize = 12;
/// The window of the cap on reviews opened by unauthenticated alerts.
const HOUR_MS: i64 = 3_600_000;

pub(super) async fn run(
    ctx: &Ctx<'_>,
    job: &LeasedJob,
    alert: FraudAlert,
) -> Result<Effects, JobError> {
    let account = job.account.as_str();
    let policy = ctx.policy(job).clone();
    let review = ctx
        .store
        .latest_review(job.account.clone(), job.key.clone())
        .await?;
    // A signature seen on another delivery was replayed from it.
    let replayed = match (alert.authenticated, job.input_delivery_id) {
        (true, Some(d)) => ctx.store.signature_seen_elsewhere(d).await?,
        _ => false,
    };
    if replayed {
        tracing::warn!(
            job_id = job.id,
            "fraud alert's signature was seen on another delivery: not authenticated"
        );
    }
    let authenticated = alert.authenticated && !replayed;
    let mut saga = Saga::new(
        job.account.clone(),
        alert,
        job.key.clone(),
        job.input_delivery_id,
        authenticated,
        policy,
        review,
    );
    for _ in 0..MAX_STEPS {
        match plan::next(&saga) {
            Step::FetchPayment(id) => {
                saga.payment = found(ctx.api.payment(ctx.calls, account, &id).await, job)?;
            }
            Step::FetchOrder(id) => {
                saga.order = found(ctx.api.merchant_order(ctx.calls, account, &id).await, job)?;
            }
            Step::ReadOrderReviews { order, payment } => {
                saga.order_reviews = Some(
                    ctx.store
                        .order_reviews(
                            job.account.clone(),
                            order.to_string(),
                            payment.map(|p| p.to_string()),
                            ctx.now() - HOUR_MS,
                        )
                        .await?,
                );
            }
            Step::Block(decision) => {
                let order = decision
                    .marks
                    .iter()
                    .find_map(|m| m.order().cloned())
                    .ok_or_else(|| JobError::unprocessable("a block that names no order"))?;
                // What the order is known by, kept with its block: a
                // search finds the order a fraud alert stopped.
                let refs = match (&saga.order, &saga.payment) {
                    (Lookup::Found(o), p) => refs::of_merchant_order(o, found_value(p)),
                    (_, Lookup::Found(p)) => refs::of_payment(p),
                    _ => Vec::new(),
                };
                let effects = Effects {
                    refs,
                    ..Effects::one(decision)
                };
                ctx.record(job, effects).await?;
                let (released, blocked_by_alert) = ctx
                    .store
                    .block_state(job.account.clone(), order.to_string(), saga.subject())
                    .await?;
                saga.block = Some(BlockSeen {
                    released,
                    blocked_by_alert,
                });
            }
            Step::Cancel(payment) => {
                saga.undone = Some(undone(
                    ctx.api.cancel_payment(ctx.calls, account, &payment).await,
                )?);
            }
            Step::Refund {
                payment,
                idempotency_key,
            } => {
                saga.undone = Some(undone(
                    ctx.api
                        .refund_payment(ctx.calls, account, &payment, &idempotency_key)
                        .await,
                )?);
            }
            Step::Finish(finish) => {
                if let Some(reason) = finish.rejected {
                    tracing::warn!(
                        job_id = job.id,
                        reason,
                        "fraud alert rejected: nothing blocked"
                    );
                    ctx.metrics.fraud_alert_rejected(account, reason);
                }
                return Ok(finish.effects);
            }
        }
    }
    Err(JobError::unprocessable(format!(
        "the fraud saga took more than {MAX_STEPS} steps"
    )))
}

/// What a lookup found; a 404 is an answer here (a real alert names what
/// exists), anything else the job's error.
fn found<T>(answer: Result<T, ApiError>, job: &LeasedJob) -> Result<Lookup<T>, JobError> {
    match answer {
        Ok(v) => Ok(Lookup::Found(v)),
        Err(ApiError::NotFound { .. }) => Ok(Lookup::Missing),
        Err(e) => Err(JobError::from_api(e, job)),
    }
}

fn found_value<T>(lookup: &Lookup<T>) -> Option<&T> {
    match lookup {
        Lookup::Found(v) => Some(v),
        _ => None,
    }
}

/// How a cancel or refund ended: a definitive refusal is the saga's to
/// tell; anything retryable is the job's.
fn undone<T>(answer: Result<T, ApiError>) -> Result<Undone, JobError> {
    match answer {
        Ok(_) => Ok(Undone::Done),
        Err(e) => match e.class() {
            ErrorClass::Retry(after) => Err(JobError::Retry {
                reason: e.to_string(),
                after,
                failure: e.failure(),
            }),
            ErrorClass::NotFound | ErrorClass::Permanent => Ok(Undone::Refused(e.to_string())),
        },
    }
}
