//! How an incident that no longer stands was resolved, when a person did
//! it: read from the audit of its item (the last action that succeeded,
//! alert sends aside), and for a fraud review from the review itself, so
//! that a resolution says what was done and by whom ("fraud review 1
//! confirmed by ana: payment 13 cancelled, 250.00 ARS").

use crate::actions::consequence;
use crate::domain::{Action, AuditOutcome, Via};
use crate::store::console_views::{AuditFilter, AuditView, ReviewDetail};
use crate::store::{Store, StoreError};

/// Entries of an item's audit read to find the one that resolved it.
const LOOKED_AT: usize = 10;

/// What resolved `key`, in words; `None` when no person's action did (a
/// job that succeeded, a destination that answers again).
pub async fn how(store: &Store, key: &str) -> Result<Option<String>, StoreError> {
    let entries = store
        .audit(AuditFilter {
            item: Some(key.to_string()),
            without_alerts: true,
            limit: LOOKED_AT,
            ..Default::default()
        })
        .await?;
    let Some(done) = entries
        .into_iter()
        .find(|a| a.outcome() == Some(AuditOutcome::Done) && a.via != <&str>::from(Via::Alerts))
    else {
        return Ok(None);
    };
    let review = match key.strip_prefix("fraud_review:").map(str::parse::<i64>) {
        Some(Ok(id)) => store.review(id).await?,
        _ => None,
    };
    Ok(Some(match review {
        Some(r) => reviewed(&r, &done),
        None => format!("by {}: {}", done.actor, done.detail),
    }))
}

/// "fraud review 1 confirmed by ana: payment 13 cancelled, 250.00 ARS".
fn reviewed(d: &ReviewDetail, by: &AuditView) -> String {
    let r = &d.review;
    let head = format!("fraud review {} {} by {}", r.id, r.state, by.actor);
    let payment = r.payment_id.as_deref().unwrap_or("unknown");
    let order = r.merchant_order_id.as_deref().unwrap_or("unknown");
    if by.action == <&str>::from(Action::Dismiss) {
        return format!("{head}: merchant order {order} unblocked, decided again");
    }
    let c = consequence(d);
    let amount = d
        .payment
        .as_ref()
        .and_then(|p| {
            let a = p.amount.as_deref()?;
            Some(match &p.currency {
                Some(cur) => format!(", {a} {cur}"),
                None => format!(", {a}"),
            })
        })
        .unwrap_or_default();
    // Once its job ran, the payment's own status says what was done.
    let status = d.payment.as_ref().map(|p| p.status.as_str());
    match (status, c.undo) {
        (Some("cancelled"), _) | (_, Some("cancel")) => {
            format!("{head}: payment {payment} cancelled{amount}")
        }
        (Some("refunded"), _) => format!("{head}: payment {payment} refunded{amount}"),
        (_, Some(_)) => format!("{head}: payment {payment} refunded{amount}"),
        (_, None) if c.moves_money => {
            format!("{head}: payment {payment} cancelled or refunded{amount}")
        }
        (_, None) => format!("{head}: merchant order {order} stays blocked, no money moved"),
    }
}
