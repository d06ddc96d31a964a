//! One review per order, on PostgreSQL (as SQLite's `review_join.rs`):
//! how an order stands with the reviews, and the join of a hold into the
//! review already held for its order. Holds for one order take a
//! transaction-scoped advisory lock first, so two instances deciding alerts
//! of one order at once open one review.

use deadpool_postgres::Transaction;

use super::prepared::prepared;
use crate::domain::{OrderReviews, Review, ReviewMark};
use crate::store::StoreError;

/// As SQLite's `held_for`.
async fn held_for(
    tx: &Transaction<'_>,
    account: &str,
    order: &str,
    payment: Option<&str>,
    except: &str,
) -> Result<Option<String>, StoreError> {
    let sql = "SELECT job_key FROM fraud_reviews
               WHERE account = $1 AND merchant_order = $2 AND state = $3 AND job_key != $4
                 AND ($5::text IS NULL OR payment = $5)
               ORDER BY id LIMIT 1";
    Ok(tx
        .query_opt(
            &prepared(tx, sql).await?,
            &[&account, &order, &Review::Held, &except, &payment],
        )
        .await?
        .map(|r| r.try_get(0))
        .transpose()?)
}

pub async fn order_reviews(
    tx: &Transaction<'_>,
    account: &str,
    order: &str,
    payment: Option<&str>,
    since: i64,
) -> Result<OrderReviews, StoreError> {
    let held = held_for(tx, account, order, payment, "").await?;
    let sql = "SELECT count(*) FROM fraud_reviews
               WHERE account = $1 AND created_at > $2 AND state != $3";
    let opened: i64 = tx
        .query_one(
            &prepared(tx, sql).await?,
            &[&account, &since, &Review::Rejected],
        )
        .await?
        .try_get(0)?;
    Ok(OrderReviews {
        held,
        opened_last_hour: u32::try_from(opened).unwrap_or(u32::MAX),
    })
}

/// As SQLite's `join_held`: whether `r`'s delivery joined the review held
/// for its order.
pub async fn join_held(
    tx: &Transaction<'_>,
    account: &str,
    r: &ReviewMark,
) -> Result<bool, StoreError> {
    let Some(order) = r
        .merchant_order
        .as_ref()
        .filter(|_| r.state == Review::Held)
    else {
        return Ok(false);
    };
    let lock = "SELECT pg_advisory_xact_lock(hashtextextended($1, 44))";
    tx.execute(
        &prepared(tx, lock).await?,
        &[&format!("fraud-review:{account}:{order}")],
    )
    .await?;
    let own = "SELECT EXISTS (SELECT 1 FROM fraud_reviews
                              WHERE account = $1 AND job_key = $2 AND round = $3)";
    let own: bool = tx
        .query_one(
            &prepared(tx, own).await?,
            &[&account, &r.job_key, &(r.round as i32)],
        )
        .await?
        .try_get(0)?;
    if own {
        return Ok(false);
    }
    let payment = r.payment.as_ref().map(|p| p.as_str());
    let Some(other) = held_for(tx, account, order.as_str(), payment, &r.job_key).await? else {
        return Ok(false);
    };
    if let Some(d) = r.delivery_id {
        let sql = "UPDATE deliveries SET job_key = $3 WHERE id = $1 AND account = $2";
        tx.execute(&prepared(tx, sql).await?, &[&d, &account, &other])
            .await?;
    }
    tracing::info!(alert = %r.alert, joined = %other, "fraud alert joins the review held for its order");
    Ok(true)
}
