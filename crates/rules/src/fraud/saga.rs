//! What the fraud saga knows: the alert, the account's settings, the
//! person's latest review of its key, and what each step learnt; and what
//! follows from them (its round, its subject, where a review leaves it).

use crate::Policy;
use crate::domain::platform::{MerchantOrder, Payment};
use crate::domain::{FraudAlert, MerchantOrderId, OrderReviews, Review, ReviewSeen};

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
    /// The account's policy, whole.
    pub policy: Policy,
    pub review: Option<ReviewSeen>,
    pub payment: Lookup<Payment>,
    pub order: Lookup<MerchantOrder>,
    pub block: Option<BlockSeen>,
    pub undone: Option<Undone>,
    pub order_reviews: Option<OrderReviews>,
}

/// Where a person's review leaves this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
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
            order_reviews: None,
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

    pub(super) fn standing(&self) -> Standing {
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

/// What the API confirmed.
pub(super) struct Verified<'a> {
    pub order: MerchantOrderId,
    pub payment: Option<&'a Payment>,
}
