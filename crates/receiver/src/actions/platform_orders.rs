//! Money given back on an order of the Orders API, as a person asks: a
//! cancel or a refund at the platform, recorded in the audit as the other
//! actions are (written before the call, completed after). Each call
//! carries an idempotency key made from what is asked, so asking again
//! (after a timeout, say) never refunds twice.

use sha2::{Digest, Sha256};

use super::{About, Acted, Actions, Done};
use crate::api::ApiClient;
use crate::api::calls::CallLog;
use crate::domain::{Action, PlatformOrderId};
use crate::operators::Actor;
use crate::store::StoreError;
use pointhook_common::money::Money;
use pointhook_common::text::printable;

/// What is asked of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderChange<'a> {
    Cancel,
    /// In full (`None`), or this much of one of its payments (`PAY…`).
    Refund(Option<(&'a str, Money)>),
}

impl OrderChange<'_> {
    /// What will happen, in words (for the person asked and the audit).
    pub fn words(&self) -> String {
        match self {
            OrderChange::Cancel => "cancel it".into(),
            OrderChange::Refund(None) => "refund it in full".into(),
            OrderChange::Refund(Some((t, a))) => {
                format!("refund {a} of its payment {}", printable(t))
            }
        }
    }

    /// The same request, the same key: what was asked, hashed.
    fn idempotency_key(&self, account: &str, order: &PlatformOrderId) -> String {
        let amount = match self {
            OrderChange::Refund(Some((_, a))) => a.to_string(),
            _ => String::new(),
        };
        let parts: Vec<&str> = match self {
            OrderChange::Cancel => vec!["cancel", account, order.as_str()],
            OrderChange::Refund(partial) => vec![
                "refund",
                account,
                order.as_str(),
                partial.map_or("", |(t, _)| t),
                &amount,
            ],
        };
        let mut h = Sha256::new();
        for p in parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p.as_bytes());
        }
        format!("pointhook-{}", &hex::encode(h.finalize())[..32])
    }
}

impl Actions {
    /// Cancels or refunds `order` at the platform. What the platform
    /// answered is the result; a 4xx is the reason it was not done, and no
    /// clear answer leaves it unknown.
    pub async fn change_platform_order(
        &self,
        who: &Actor,
        api: &ApiClient,
        account: &str,
        order: &PlatformOrderId,
        change: OrderChange<'_>,
    ) -> Result<Acted<serde_json::Value>, StoreError> {
        let about = About {
            item: format!("platform_order:{order}"),
            account: Some(account.to_string()),
            order_id: Some(order.to_string()),
            detail: format!("order {order}: {}", change.words()),
        };
        let key = change.idempotency_key(account, order);
        let run = async {
            let log = CallLog::default();
            let answer = match change {
                OrderChange::Cancel => api.cancel_platform_order(&log, account, order, &key).await,
                OrderChange::Refund(partial) => {
                    api.refund_platform_order(&log, account, order, partial, &key)
                        .await
                }
            };
            Ok(match answer {
                Ok(v) => Done::Done(v),
                Err(e) if e.may_have_acted() => Done::Unknown(format!(
                    "no clear answer from the platform ({e}): the order may have changed; \
                     asking again is safe, the same request never acts twice"
                )),
                Err(e) => Done::Refused(format!("the platform refused it: {e}")),
            })
        };
        let action = match change {
            OrderChange::Cancel => Action::CancelOrder,
            OrderChange::Refund(_) => Action::RefundOrder,
        };
        self.audited(who, action, about, run, |_| "done at the platform".into())
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_request_has_the_same_key_and_another_another() {
        let order = PlatformOrderId::parse("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3").unwrap();
        let twenty = Money::parse("20.00").unwrap();
        let key = |c: OrderChange<'_>, account: &str| c.idempotency_key(account, &order);
        let partial = OrderChange::Refund(Some(("PAY1", twenty)));
        assert_eq!(key(partial, "a"), key(partial, "a"));
        let all = [
            key(partial, "a"),
            key(partial, "b"),
            key(OrderChange::Refund(None), "a"),
            key(OrderChange::Refund(Some(("PAY2", twenty))), "a"),
            key(OrderChange::Cancel, "a"),
        ];
        for (i, k) in all.iter().enumerate() {
            assert!(k.starts_with("pointhook-") && k.len() == 42, "{k}");
            assert!(all[i + 1..].iter().all(|o| o != k), "{all:?}");
        }
    }

    /// The keys of requests already sent stay what they were: a command run
    /// again after an upgrade must not refund twice.
    #[test]
    fn the_keys_do_not_change_between_versions() {
        let order = PlatformOrderId::parse("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3").unwrap();
        let twenty = Money::parse("20.00").unwrap();
        for (change, key) in [
            (
                OrderChange::Cancel,
                "pointhook-477193955feb6cb9de886080c6a37f80",
            ),
            (
                OrderChange::Refund(Some(("PAY1", twenty))),
                "pointhook-2b90d28ac19949b124df9f278992546b",
            ),
            (
                OrderChange::Refund(None),
                "pointhook-6329981bd1958c99232ff33039e1cc93",
            ),
        ] {
            assert_eq!(change.idempotency_key("default", &order), key, "{change:?}");
        }
    }
}
