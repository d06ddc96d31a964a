//! Fraud alerts (DESIGN section 4) as a typed plan. `next` looks at what
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

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::platform::{MerchantOrder, Payment, PaymentStatus};
use crate::domain::verdict::DismissedReview;
use crate::domain::{
    Decision, Effects, EventType, FraudAlert, Guard, Mark, MerchantOrderId, PaymentId, Review,
    ReviewMark, ReviewSeen, Slot, UnauthenticatedAlerts, kinds,
};

/// An account's fraud settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub unauthenticated: UnauthenticatedAlerts,
    /// Blocks unauthenticated alerts may place per hour.
    pub blocks_per_hour: u32,
}

/// What an API lookup found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Lookup<T> {
    #[default]
    NotAsked,
    /// The API does not know it (404).
    Missing,
    Found(T),
}

/// How the order stands once the alert's block was recorded (or refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSeen {
    pub released: bool,
    /// This alert's block stands.
    pub blocked_by_alert: bool,
}

/// How a cancel or refund call ended (a retryable failure never gets
/// here: the job retries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undone {
    Done,
    /// Definitively refused by the API: a person takes it from here.
    Refused(String),
}

/// What the saga knows: given at the start, then learnt step by step.
#[derive(Debug, Clone)]
pub struct Saga {
    pub account: String,
    pub alert: FraudAlert,
    /// The job's key (`fraud:…`).
    pub job_key: String,
    /// The delivery the job's work came from.
    pub delivery_id: Option<i64>,
    /// The alert's signature binds it, is fresh, and was seen on no other
    /// delivery.
    pub authenticated: bool,
    pub policy: Policy,
    pub review: Option<ReviewSeen>,
    pub payment: Lookup<Payment>,
    pub order: Lookup<MerchantOrder>,
    pub block: Option<BlockSeen>,
    pub undone: Option<Undone>,
}

/// The one step to take next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    FetchPayment(PaymentId),
    FetchOrder(MerchantOrderId),
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

/// Where a person's review leaves this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// No decided review covers this delivery.
    Open,
    Confirmed,
    Dismissed,
}

impl Saga {
    /// `authenticated`: the alert's own claim (a signature that binds it,
    /// fresh at ingest) and no other delivery carries its signature.
    pub fn new(
        account: String,
        alert: FraudAlert,
        job_key: String,
        delivery_id: Option<i64>,
        authenticated: bool,
        policy: Policy,
        review: Option<ReviewSeen>,
    ) -> Saga {
        Saga {
            account,
            alert,
            job_key,
            delivery_id,
            authenticated,
            policy,
            review,
            payment: Lookup::NotAsked,
            order: Lookup::NotAsked,
            block: None,
            undone: None,
        }
    }

    /// A dismissal or a rejection covers the deliveries it saw: a later
    /// alert for the same key opens the next round. A confirmation covers
    /// the key (the money moved, or is moving, already).
    pub fn round(&self) -> u32 {
        match self.review {
            None => 0,
            Some(r)
                if matches!(r.state, Review::Dismissed | Review::Rejected)
                    && r.delivery_id != self.delivery_id =>
            {
                r.round + 1
            }
            Some(r) => r.round,
        }
    }

    fn standing(&self) -> Standing {
        match self.review {
            Some(r) if r.state == Review::Confirmed => Standing::Confirmed,
            Some(r) if r.state == Review::Dismissed && self.round() == r.round => {
                Standing::Dismissed
            }
            _ => Standing::Open,
        }
    }

    /// The alert's subject: `fraud_alert:{order}:{payment}`, and `#N` from
    /// its second round on.
    pub fn subject(&self) -> String {
        let base = format!(
            "fraud_alert:{}",
            self.job_key.strip_prefix("fraud:").unwrap_or(&self.job_key)
        );
        match self.round() {
            0 => base,
            n => format!("{base}#{n}"),
        }
    }
}

/// The next step of the saga.
pub fn next(s: &Saga) -> Step {
    let standing = s.standing();
    if standing == Standing::Dismissed {
        return Step::Finish(Finish::default());
    }
    let a = &s.alert;
    // What the alert names, or what its bare id turns out to be: what the
    // API says of an id was not said by the alert, so it may only hold.
    let mut learnt = false;
    let (payment_id, named_order) = match (&a.payment, &a.merchant_order, &a.notified_id) {
        (None, None, Some(n)) => {
            learnt = true;
            match (&s.payment, n.cast::<kinds::Payment>().ok()) {
                (Lookup::NotAsked, Some(p)) => return Step::FetchPayment(p),
                (Lookup::Found(p), _) => (Some(p.id.clone()), p.merchant_order.clone()),
                _ => match (&s.order, n.cast::<kinds::MerchantOrder>().ok()) {
                    (Lookup::NotAsked, Some(o)) => return Step::FetchOrder(o),
                    (Lookup::Found(o), _) => (None, Some(o.id.clone())),
                    _ => {
                        return reject(
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
                return reject(
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
                Err((code, why)) => return reject(s, code, &why),
            },
        },
        None => {
            let Some(order) = named_order else {
                return reject(
                    s,
                    "names_nothing",
                    "the alert names no payment and no order",
                );
            };
            match &s.order {
                Lookup::NotAsked => return Step::FetchOrder(order),
                Lookup::Missing => {
                    return reject(
                        s,
                        "order_not_found",
                        &format!("no merchant order {order} for this account"),
                    );
                }
                Lookup::Found(o) if o.payments.is_empty() => {
                    return reject(
                        s,
                        "order_without_payment",
                        &format!("merchant order {order} has no payment"),
                    );
                }
                Lookup::Found(_) => Verified {
                    order,
                    payment: None,
                },
            }
        }
    };
    let may_move_money = !learnt
        && (s.authenticated
            || standing == Standing::Confirmed
            || s.policy.unauthenticated == UnauthenticatedAlerts::Act);
    let Some(block) = s.block else {
        return Step::Block(block(s, &verified));
    };
    if block.released && !block.blocked_by_alert {
        return finish(after_release(s, &verified.order));
    }
    if !block.blocked_by_alert {
        return hold(
            s,
            &verified,
            &format!(
                "over the limit of {} blocks an hour by alerts that are not authenticated: held without blocking",
                s.policy.blocks_per_hour
            ),
        );
    }
    match (may_move_money, verified.payment) {
        (true, Some(payment)) => undo(s, &verified.order, payment),
        (_, None) => hold(
            s,
            &verified,
            "the alert names an order but no payment: a person decides",
        ),
        (false, Some(_)) if learnt => hold(
            s,
            &verified,
            "the alert named no order or payment; what it is about was learnt from the API",
        ),
        (false, Some(_)) => hold(
            s,
            &verified,
            "the alert is not authenticated (no fresh, unseen signature binding its payment)",
        ),
    }
}

/// What the API confirmed.
struct Verified<'a> {
    order: MerchantOrderId,
    payment: Option<&'a Payment>,
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

fn finish(d: Decision) -> Step {
    Step::Finish(Finish {
        effects: Effects::one(d),
        rejected: None,
    })
}

/// The alert's facts for its events. Its words only when authenticated:
/// an unconfirmed sender's text never reaches the merchant signed by us.
fn data(s: &Saga, order: Option<&MerchantOrderId>, payment: Option<&PaymentId>) -> Value {
    json!({
        "merchant_order_id": order.or(s.alert.merchant_order.as_ref()),
        "payment_id": payment.or(s.alert.payment.as_ref()),
        "description": if s.authenticated { s.alert.description.clone() } else { None },
        "delivery_id": s.delivery_id.map(|d| d.to_string()),
        "authenticated": s.authenticated,
    })
}

fn review(s: &Saga, state: Review, v: Option<&Verified<'_>>, reason: &str) -> Mark {
    Mark::Review(ReviewMark {
        job_key: s.job_key.clone(),
        round: s.round(),
        alert: s.subject(),
        state,
        delivery_id: s.delivery_id,
        merchant_order: v
            .map(|v| v.order.clone())
            .or(s.alert.merchant_order.clone()),
        payment: v
            .and_then(|v| v.payment.map(|p| p.id.clone()))
            .or(s.alert.payment.clone()),
        reason: reason.into(),
    })
}

/// Not confirmed by the API: nothing blocked, nothing told; kept for a
/// person to see.
fn reject(s: &Saga, code: &'static str, reason: &str) -> Step {
    let mut data = data(s, None, None);
    data["reason"] = Value::from(reason);
    Step::Finish(Finish {
        effects: Effects::one(Decision {
            subject: s.subject(),
            key: "rejected".into(),
            event: EventType::FraudAlertRejected,
            data,
            guards: vec![],
            marks: vec![review(s, Review::Rejected, None, reason)],
            slot: Slot::Once,
            reason: format!("{reason} → rejected: nothing blocked, nothing told"),
        }),
        rejected: Some(code),
    })
}

/// The order is blocked by this alert (never released while it stands).
fn block(s: &Saga, v: &Verified<'_>) -> Decision {
    let payment = v.payment.map(|p| p.id.clone());
    let mut guards = vec![Guard::OrderNotReleased(v.order.clone())];
    // A person's confirmation is not counted against the brake.
    let unauthenticated = !s.authenticated && s.standing() != Standing::Confirmed;
    if unauthenticated {
        guards.push(Guard::UnauthenticatedBlocksUnder(s.policy.blocks_per_hour));
    }
    Decision {
        subject: format!("merchant_order:{}", v.order),
        key: format!("order.blocked:{}", s.subject()),
        event: EventType::OrderBlocked,
        data: data(s, Some(&v.order), payment.as_ref()),
        guards,
        marks: vec![Mark::OrderBlocked {
            order: v.order.clone(),
            alert: s.subject(),
            unauthenticated,
        }],
        slot: Slot::Once,
        reason: match v.payment {
            Some(p) => format!(
                "the API confirms payment {} ({}) is in merchant order {} → blocked",
                p.id, p.status, v.order
            ),
            None => format!(
                "the API confirms merchant order {} exists with payments → blocked",
                v.order
            ),
        },
    }
}

/// Held for a person: nothing cancelled or refunded.
fn hold(s: &Saga, v: &Verified<'_>, reason: &str) -> Step {
    let payment = v.payment.map(|p| p.id.clone());
    let mut data = data(s, Some(&v.order), payment.as_ref());
    data["reason"] = Value::from(reason);
    finish(Decision {
        subject: s.subject(),
        key: "unverified".into(),
        event: EventType::FraudAlertUnverified,
        data,
        guards: vec![],
        marks: vec![review(s, Review::Held, Some(v), reason)],
        slot: Slot::Once,
        reason: format!("{reason} → held for a person"),
    })
}

/// The goods are gone: a person decides.
fn after_release(s: &Saga, order: &MerchantOrderId) -> Decision {
    Decision {
        subject: format!("merchant_order:{order}"),
        key: format!("order.fraud_after_release:{}", s.subject()),
        event: EventType::OrderFraudAfterRelease,
        data: data(s, Some(order), None),
        guards: vec![Guard::OrderReleased(order.clone())],
        marks: vec![],
        slot: Slot::Once,
        reason: format!(
            "merchant order {order} was released before the alert → nothing undone, a person decides"
        ),
    }
}

/// How a payment is undone, by its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    Cancel,
    Refund,
    /// Undone already (perhaps by an earlier run of the same job).
    AlreadyDone(EventType),
    /// Rejected: no money moved, nothing to undo.
    NothingMoved,
    /// Cannot be undone automatically: a person takes it from here.
    Impossible(String),
}

pub fn undo_for(status: &PaymentStatus) -> Undo {
    match status {
        PaymentStatus::Pending | PaymentStatus::InProcess | PaymentStatus::Authorized => {
            Undo::Cancel
        }
        PaymentStatus::Approved => Undo::Refund,
        PaymentStatus::Cancelled => Undo::AlreadyDone(EventType::PaymentCancelled),
        PaymentStatus::Refunded => Undo::AlreadyDone(EventType::PaymentRefunded),
        PaymentStatus::Rejected => Undo::NothingMoved,
        other => Undo::Impossible(format!(
            "a payment in status {other} cannot be undone automatically"
        )),
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

/// The same alert always gives the same key, so a retried refund is one
/// refund at the platform.
pub fn idempotency_key(account: &str, order: &MerchantOrderId, payment: &PaymentId) -> String {
    let mut h = Sha256::new();
    for part in [account, order.as_str(), payment.as_str()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("pointhook-fraud-{}", hex::encode(&h.finalize()[..16]))
}

/// How undoing `payment` ended: `payment.cancelled`, `payment.refunded` or
/// `payment.cancel_failed` (with the reason). The status is the payment's
/// after the decision.
pub fn undone(
    payment: &Payment,
    order: &MerchantOrderId,
    event: EventType,
    refused: Option<String>,
) -> Decision {
    let status = match event {
        EventType::PaymentCancelled => PaymentStatus::Cancelled.as_str().to_string(),
        EventType::PaymentRefunded => PaymentStatus::Refunded.as_str().to_string(),
        _ => payment.status.as_str().to_string(),
    };
    let mut data = json!({
        "payment_id": payment.id,
        "merchant_order_id": order,
        "amount": payment.amount.map(|a| a.to_string()),
        "status": status,
    });
    let reason = match &refused {
        Some(r) => format!(
            "payment {} ({}) could not be undone: {r} → a person decides",
            payment.id, payment.status
        ),
        None => format!(
            "fraud alert on merchant order {order}: payment {} was {}{} → {status}",
            payment.id,
            payment.status,
            payment
                .amount
                .map(|a| format!(" for {a}"))
                .unwrap_or_default()
        ),
    };
    if let Some(r) = refused {
        data["reason"] = Value::from(r);
    }
    Decision {
        subject: format!("payment:{}", payment.id),
        key: event.as_str().into(),
        event,
        data,
        guards: vec![],
        marks: vec![],
        slot: Slot::Once,
        reason,
    }
}

/// `fraud_alert.dismissed` for a review a person dismissed.
pub fn dismissed(r: &DismissedReview) -> Decision {
    Decision {
        subject: r.alert.clone(),
        key: "dismissed".into(),
        event: EventType::FraudAlertDismissed,
        data: json!({
            "review_id": r.review_id.to_string(),
            "merchant_order_id": r.merchant_order,
            "payment_id": r.payment,
            "reason": r.reason,
        }),
        guards: vec![],
        marks: vec![],
        slot: Slot::Once,
        reason: "a person dismissed the alert → its block is lifted and the order looked at again"
            .into(),
    }
}
