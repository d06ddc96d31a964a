//! One review per order (and payment): how an order stands with the reviews (read by
//! the fraud saga before an alert that may only hold blocks anything), and
//! the join of a hold into the review already held for its order (in the
//! deciding transaction, so two alerts racing for one order open one
//! review). A joined alert's delivery becomes that review's evidence, so a
//! confirmation or dismissal of the review covers it too.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::{OrderReviews, Review, ReviewMark};

/// The key of a review held for `order` other than `except`'s, and for
/// `payment` when one is named (an alert naming another payment of the
/// order is another undo for a person: it is not joined).
fn held_for(
    conn: &Connection,
    account: &str,
    order: &str,
    payment: Option<&str>,
    except: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "SELECT job_key FROM fraud_reviews
         WHERE account = ?1 AND merchant_order = ?2 AND state = ?3 AND job_key != ?4
           AND (?5 IS NULL OR payment = ?5)
         ORDER BY id LIMIT 1",
    )?
    .query_row(
        params![account, order, Review::Held, except, payment],
        |r| r.get(0),
    )
    .optional()
}

pub(super) fn order_reviews(
    conn: &Connection,
    account: &str,
    order: &str,
    payment: Option<&str>,
    since: i64,
) -> rusqlite::Result<OrderReviews> {
    let held = held_for(conn, account, order, payment, "")?;
    let opened: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM fraud_reviews
             WHERE account = ?1 AND created_at > ?2 AND state != ?3",
        )?
        .query_row(params![account, since, Review::Rejected], |r| r.get(0))?;
    Ok(OrderReviews {
        held,
        opened_last_hour: u32::try_from(opened).unwrap_or(u32::MAX),
    })
}

/// When `r` would open a new held review and another is held for its
/// order: its delivery joins that one's evidence, and the answer is `true`
/// (the caller lifts the alert's own block: the order stays blocked by
/// the held review's).
pub(super) fn join_held(
    conn: &Connection,
    account: &str,
    r: &ReviewMark,
) -> rusqlite::Result<bool> {
    let Some(order) = r
        .merchant_order
        .as_ref()
        .filter(|_| r.state == Review::Held)
    else {
        return Ok(false);
    };
    let own: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM fraud_reviews
                            WHERE account = ?1 AND job_key = ?2 AND round = ?3)",
        )?
        .query_row(params![account, r.job_key, r.round], |row| row.get(0))?;
    if own {
        return Ok(false);
    }
    let payment = r.payment.as_ref().map(|p| p.as_str());
    let Some(other) = held_for(conn, account, order.as_str(), payment, &r.job_key)? else {
        return Ok(false);
    };
    if let Some(d) = r.delivery_id {
        conn.prepare_cached("UPDATE deliveries SET job_key = ?3 WHERE id = ?1 AND account = ?2")?
            .execute(params![d, account, other])?;
    }
    tracing::info!(alert = %r.alert, joined = %other, "fraud alert joins the review held for its order");
    Ok(true)
}
