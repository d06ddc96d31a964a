//! Fraud alerts as a typed plan. `next` looks at what
//! the saga has learnt so far and answers the one step to take; the worker
//! performs it (an API call, or a durable record), tells the saga what came
//! of it, and asks again, until a `Finish`.
//!
//! Verify first, always: nothing is blocked before the API confirms the
//! payment is in the order named (or, for an alert naming only an order,
//! that the order exists with a payment). Only an alert that may move money
//! cancels or refunds: an authenticated one, one a person confirmed, or any
//! verified one on an account that opted into `act`. Unauthenticated alerts
//! place a bounded number of blocks an hour, never relay their text, and an
//! order released already is never undone automatically.

mod decisions;
mod saga;

pub use decisions::{Undo, dismissed, idempotency_key, undo_for, undone};
pub use saga::{BlockSeen, Lookup, Saga, Undone};

use crate::domain::platform::{MerchantOrder, Payment};
use crate::domain::{
    Decision, Effects, EventType, MerchantOrderId, PaymentId, UnauthenticatedAlerts, kinds,
};
use decisions::{after_release, block, hold, reject};
use saga::{Standing, Verified};

/// The one step to take next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    FetchPayment(PaymentId),
    FetchOrder(MerchantOrderId),
    /// Read how this order stands with the reviews (`OrderReviews`): a
    /// review held for it and this payment (or any, with none).
    ReadOrderReviews {
        order: MerchantOrderId,
        payment: Option<PaymentId>,
    },
    /// Record this block durably, then say how the order stands.
    Block(Decision),
    Cancel(PaymentId),
    Refund {
        payment: PaymentId,
        idempotency_key: String,
    },
    Finish(Finish),
}

/// The end of the saga: what to record, and why an alert was rejected.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Finish {
    pub effects: Effects,
    /// For `pointhook_fraud_alerts_rejected_total{reason}`.
    pub rejected: Option<&'static str>,
}

/// The next step of the saga.
pub fn next(s: &Saga) -> Step {
    let standing = s.standing();
    if standing == Standing::Dismissed {
        return Step::Finish(Finish::default());
    }
    let a = &s.alert;
    // What the alert names, or what its bare id turns out to be: what the
    // API says of an id was not said by the alert, so it may only hold
    // (until a person confirms).
    let mut learnt: Option<&str> = None;
    let (payment_id, named_order) = match (&a.payment, &a.merchant_order, &a.notified_id) {
        (None, None, Some(n)) => {
            learnt = Some(
                "the alert named no order or payment; what it is about was learnt from the API",
            );
            match (&s.payment, n.cast::<kinds::Payment>().ok()) {
                (Lookup::NotAsked, Some(p)) => return Step::FetchPayment(p),
                (Lookup::Found(p), _) => (Some(p.id.clone()), p.merchant_order.clone()),
                _ => match (&s.order, n.cast::<kinds::MerchantOrder>().ok()) {
                    (Lookup::NotAsked, Some(o)) => return Step::FetchOrder(o),
                    (Lookup::Found(o), _) => (None, Some(o.id.clone())),
                    _ => {
                        return rejected(
                            s,
                            "names_nothing",
                            "the alert names nothing the API knows of",
                        );
                    }
                },
            }
        }
        (p, o, _) => (p.clone(), o.clone()),
    };
    let verified = match &payment_id {
        Some(pid) => match &s.payment {
            Lookup::NotAsked => return Step::FetchPayment(pid.clone()),
            Lookup::Missing => {
                return rejected(
                    s,
                    "payment_not_found",
                    &format!("no payment {pid} for this account"),
                );
            }
            Lookup::Found(p) => match verify(named_order.as_ref(), p) {
                Ok(order) => Verified {
                    order,
                    payment: Some(p),
                },
                Err((code, why)) => return rejected(s, code, &why),
            },
        },
        None => {
            let Some(order) = named_order else {
                return rejected(
                    s,
                    "names_nothing",
                    "the alert names no payment and no order",
                );
            };
            match &s.order {
                Lookup::NotAsked => return Step::FetchOrder(order),
                Lookup::Missing => {
                    return rejected(
                        s,
                        "order_not_found",
                        &format!("no merchant order {order} for this account"),
                    );
                }
                Lookup::Found(o) if o.payments.is_empty() => {
                    return rejected(
                        s,
                        "order_without_payment",
                        &format!("merchant order {order} has no payment"),
                    );
                }
                // Its payment is read, so that the review names the cancel
                // or refund and its amount.
                Lookup::Found(o) => match (undoable_payment(o), &s.payment) {
                    (Some(p), Lookup::NotAsked) => return Step::FetchPayment(p),
                    (Some(_), Lookup::Found(p)) if p.merchant_order.as_ref() == Some(&order) => {
                        learnt = Some(
                            "the alert names an order but no payment; its payment was read from the API",
                        );
                        Verified {
                            order,
                            payment: Some(p),
                        }
                    }
                    _ => Verified {
                        order,
                        payment: None,
                    },
                },
            }
        }
    };
    let may_move_money = standing == Standing::Confirmed
        || (learnt.is_none()
            && (s.authenticated || s.policy.fraud_unauthenticated == UnauthenticatedAlerts::Act));
    let Some(block) = s.block else {
        if !may_move_money {
            // One review per order and payment: an alert that may only hold
            // joins the review held for its order (blocked already) rather
            // than open another, unless it names another payment of it
            // (another undo for a person to decide); past the hourly cap
            // it is recorded, not held.
            let Some(reviews) = &s.order_reviews else {
                return Step::ReadOrderReviews {
                    order: verified.order.clone(),
                    payment: verified.payment.map(|p| p.id.clone()),
                };
            };
            match &reviews.held {
                Some(key) if *key != s.job_key => {
                    return held(
                        s,
                        &verified,
                        &format!(
                            "joins the review already held for merchant order {}",
                            verified.order
                        ),
                    );
                }
                Some(_) => {}
                None if reviews.opened_last_hour >= s.policy.fraud_reviews_per_hour() => {
                    return rejected(
                        s,
                        "over_review_cap",
                        &format!(
                            "over the limit of {} reviews an hour opened by alerts that are not authenticated: recorded, not held",
                            s.policy.fraud_reviews_per_hour()
                        ),
                    );
                }
                None => {}
            }
        }
        return Step::Block(block(s, &verified));
    };
    if block.released && !block.blocked_by_alert {
        return finish(after_release(s, &verified.order));
    }
    if !block.blocked_by_alert {
        return held(
            s,
            &verified,
            &format!(
                "over the limit of {} blocks an hour by alerts that are not authenticated: held without blocking",
                s.policy.fraud_blocks_per_hour
            ),
        );
    }
    match (may_move_money, verified.payment) {
        (true, Some(payment)) => undo(s, &verified.order, payment),
        (_, None) => held(
            s,
            &verified,
            "the alert names an order but no payment: a person decides",
        ),
        (false, Some(_)) if learnt.is_some() => held(s, &verified, learnt.unwrap_or_default()),
        (false, Some(_)) => held(
            s,
            &verified,
            "the alert is not authenticated (no fresh, unseen signature binding its payment)",
        ),
    }
}

/// The order the alert is about, once the API confirmed the payment is in
/// it; `Err` says why the alert is rejected (a code, and words).
pub fn verify(
    named: Option<&MerchantOrderId>,
    payment: &Payment,
) -> Result<MerchantOrderId, (&'static str, String)> {
    match (named, &payment.merchant_order) {
        (None, _) => Err(("names_no_order", "the alert names no merchant order".into())),
        (Some(n), Some(o)) if n == o => Ok(o.clone()),
        (Some(n), owner) => Err((
            "payment_not_in_order",
            format!(
                "payment {} belongs to {}, not {n}",
                payment.id,
                owner
                    .as_ref()
                    .map_or("no merchant order".to_string(), |o| format!(
                        "merchant order {o}"
                    ))
            ),
        )),
    }
}

/// The one payment of `order` that a cancel or refund could undo; `None`
/// when there are several (a person picks) or none.
fn undoable_payment(order: &MerchantOrder) -> Option<PaymentId> {
    let mut undoable = order
        .payments
        .iter()
        .filter(|p| matches!(undo_for(&p.status), Undo::Cancel | Undo::Refund));
    match (undoable.next(), undoable.next()) {
        (Some(p), None) => Some(p.id.clone()),
        _ => None,
    }
}

fn undo(s: &Saga, order: &MerchantOrderId, payment: &Payment) -> Step {
    let how = undo_for(&payment.status);
    match (&s.undone, how) {
        (_, Undo::NothingMoved) => Step::Finish(Finish::default()),
        (_, Undo::AlreadyDone(event)) => finish(undone(payment, order, event, None)),
        (_, Undo::Impossible(why)) => finish(undone(
            payment,
            order,
            EventType::PaymentCancelFailed,
            Some(why),
        )),
        (None, Undo::Cancel) => Step::Cancel(payment.id.clone()),
        (None, Undo::Refund) => Step::Refund {
            payment: payment.id.clone(),
            idempotency_key: idempotency_key(&s.account, order, &payment.id),
        },
        (Some(Undone::Done), Undo::Cancel) => {
            finish(undone(payment, order, EventType::PaymentCancelled, None))
        }
        (Some(Undone::Done), Undo::Refund) => {
            finish(undone(payment, order, EventType::PaymentRefunded, None))
        }
        (Some(Undone::Refused(why)), _) => finish(undone(
            payment,
            order,
            EventType::PaymentCancelFailed,
            Some(why.clone()),
        )),
    }
}

fn finish(d: Decision) -> Step {
    Step::Finish(Finish {
        effects: Effects::one(d),
        rejected: None,
    })
}

/// Not confirmed by the API: recorded for a person, counted under `code`.
fn rejected(s: &Saga, code: &'static str, reason: &str) -> Step {
    Step::Finish(Finish {
        effects: Effects::one(reject(s, reason)),
        rejected: Some(code),
    })
}

fn held(s: &Saga, v: &Verified<'_>, reason: &str) -> Step {
    finish(hold(s, v, reason))
}
