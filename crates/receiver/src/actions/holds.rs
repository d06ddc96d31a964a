//! A person answers a hold of any kind (approve or reject), recorded in
//! the audit as every other action: the kind's words say what it does.

use super::{About, Acted, Actions, Done};
use crate::domain::{Action, HoldAnswer, HoldSeen};
use crate::operators::Actor;
use crate::rules::holds::{FRAUD_REVIEW, kind};
use crate::store::StoreError;
use crate::store::holds::HoldDone;

/// What answering `h` so does, in the kind's words.
pub fn hold_does(h: &HoldSeen, answer: HoldAnswer) -> String {
    match (kind(&h.kind), answer) {
        (Some(k), HoldAnswer::Approve) => k.approve.to_string(),
        (Some(k), HoldAnswer::Reject) => k.reject.to_string(),
        (None, _) => format!(
            "{} a hold of a kind this build does not know",
            answer.as_str()
        ),
    }
}

/// The order a hold is about, when its subject is a merchant order.
fn order_of(h: &HoldSeen) -> Option<String> {
    h.subject
        .strip_prefix("merchant_order:")
        .map(str::to_string)
}

impl Actions {
    /// What answering `h` so does, for the second confirmation: a fraud
    /// review's approval names the cancel or refund and its amount.
    pub async fn hold_words(&self, h: &HoldSeen, answer: HoldAnswer) -> Result<String, StoreError> {
        if h.kind == FRAUD_REVIEW.name
            && answer == HoldAnswer::Approve
            && let Some(d) = self.store.review(h.id).await?
        {
            return Ok(format!("confirm: {}", super::consequence(&d).words));
        }
        Ok(hold_does(h, answer))
    }

    /// A person approves or rejects a held hold. A fraud review is
    /// confirmed or dismissed, audited as the review's own page does.
    pub async fn answer_hold(
        &self,
        who: &Actor,
        id: i64,
        answer: HoldAnswer,
    ) -> Result<Acted<HoldSeen>, StoreError> {
        let hold = self.store.hold(id).await?;
        if hold.as_ref().is_some_and(|h| h.kind == FRAUD_REVIEW.name) {
            let review = self.store.review(id).await?;
            let (verb, action, said) = match answer {
                HoldAnswer::Approve => (
                    "confirm",
                    Action::Confirm,
                    "confirmed: its job runs the undo",
                ),
                HoldAnswer::Reject => (
                    "dismiss",
                    Action::Dismiss,
                    "dismissed: the block is lifted, the order is decided again",
                ),
            };
            let about = self.review_about(id, review.as_ref(), verb);
            return self
                .audited(who, action, about, self.answer(who, id, answer), |_| {
                    said.into()
                })
                .await;
        }
        let about = About {
            item: format!("hold:{id}"),
            account: hold.as_ref().map(|h| h.account.clone()),
            order_id: hold.as_ref().and_then(order_of),
            detail: match &hold {
                Some(h) => format!(
                    "{} hold {id} ({} on {}): {}",
                    answer.as_str(),
                    h.kind,
                    h.subject,
                    hold_does(h, answer)
                ),
                None => format!("{} hold {id}", answer.as_str()),
            },
        };
        let run = self.answer(who, id, answer);
        let action = match answer {
            HoldAnswer::Approve => Action::Approve,
            HoldAnswer::Reject => Action::Reject,
        };
        self.audited(who, action, about, run, |h| {
            format!("{}: {}", h.state.as_str(), hold_does(h, answer))
        })
        .await
    }

    /// The store's answer, as an action's end.
    async fn answer(
        &self,
        who: &Actor,
        id: i64,
        answer: HoldAnswer,
    ) -> Result<Done<HoldSeen>, StoreError> {
        let by = who.name.clone();
        Ok(
            match self.store.answer_hold(id, answer, by, self.now()).await? {
                HoldDone::Done(h) => Done::Done(*h),
                HoldDone::NotFound => Done::Refused(format!("no hold {id}")),
                HoldDone::AlreadyDecided(s) => {
                    Done::Refused(format!("hold {id} is {} already", s.as_str()))
                }
            },
        )
    }
}
