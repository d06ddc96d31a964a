//! The console's search box, on either backend: what a text names in any
//! of the accounts (a merchant order, a payment's order, an intent, an
//! Orders API order, an external reference's orders), by what each order
//! is known by (`order_refs`) and by what events told.

use crate::domain::PlatformOrderId;
use crate::store::StoreError;
use crate::store::admin_reads::event_order;
use crate::store::console_views::*;
use crate::store::order_refs;
use crate::store::sql::{Conn, sql};

use super::reads::order_state;

/// Whether anything is recorded under `subject` (an event, or a job of
/// that key).
async fn known_subject(c: &Conn<'_>, account: &str, subject: &str) -> Result<bool, StoreError> {
    c.query_one(
        sql!(
            "SELECT EXISTS (SELECT 1 FROM events WHERE account = $1 AND subject = $2)
                 OR EXISTS (SELECT 1 FROM jobs WHERE account = $1 AND job_key = $2)"
        ),
        &[&account, &subject],
        |r| r.get(0),
    )
    .await
}

/// The merchant order a payment belongs to, as events about it said.
async fn order_of_payment(
    c: &Conn<'_>,
    account: &str,
    payment: &str,
) -> Result<Option<String>, StoreError> {
    let seq = event_order(c);
    let bodies: Vec<String> = c
        .query(
            &format!(
                "SELECT body FROM events WHERE account = $1 AND subject = 'payment:' || $2
                 ORDER BY {seq} DESC LIMIT 5"
            ),
            &[&account, &payment],
            |r| r.get(0),
        )
        .await?;
    let from_events = bodies.into_iter().find_map(|b| {
        event_data(Some(b))?
            .get("merchant_order_id")?
            .as_str()
            .map(str::to_string)
    });
    if from_events.is_some() {
        return Ok(from_events);
    }
    c.query_opt(
        sql!(
            "SELECT merchant_order FROM fraud_reviews WHERE account = $1 AND payment = $2
             AND merchant_order IS NOT NULL LIMIT 1"
        ),
        &[&account, &payment],
        |r| r.get(0),
    )
    .await
}

/// The subjects of events whose data carries `text` as its external
/// reference, by the index on that expression. The dialects spell a JSON
/// field apart (SQLite's `json_extract`, PostgreSQL's `->>` on jsonb), and
/// each index is on its own spelling.
async fn by_reference(c: &Conn<'_>, account: &str, text: &str) -> Result<Vec<String>, StoreError> {
    let (source, reference) = c.dialect().pick(
        (
            "events INDEXED BY events_reference",
            "json_extract(body, '$.data.external_reference')",
        ),
        (
            "events",
            "((body::jsonb -> 'data') ->> 'external_reference')",
        ),
    );
    c.query(
        // No DISTINCT: its order would lead PostgreSQL's planner to the
        // subject index; `add` keeps each order once.
        &format!(
            "SELECT subject FROM {source}
             WHERE {reference} = $1 AND {reference} IS NOT NULL AND account = $2
             LIMIT 20"
        ),
        &[&text, &account],
        |r| r.get(0),
    )
    .await
}

/// What a search shows for `subject`: the order a payment belongs to
/// when it is known, else the subject itself; `None` for a subject no
/// search opens.
async fn subject_found(
    c: &Conn<'_>,
    account: &str,
    subject: &str,
    matched: &'static str,
) -> Result<Option<Found>, StoreError> {
    let Some((kind, id)) = subject.split_once(':') else {
        return Ok(None);
    };
    let (kind, id) = match kind {
        "merchant_order" => ("merchant_order", id.to_string()),
        "platform_order" => ("platform_order", id.to_string()),
        "payment_intent" => ("payment_intent", id.to_string()),
        "payment" => match order_of_payment(c, account, id).await? {
            Some(order) => ("merchant_order", order),
            None => ("payment", id.to_string()),
        },
        _ => return Ok(None),
    };
    Ok(Some(Found {
        account: account.to_string(),
        kind,
        id,
        matched,
    }))
}

/// A numeric id as the platform writes it: without leading zeros
/// (`000123` is `123`); `None` when that is the text already.
fn without_zeros(text: &str) -> Option<&str> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let trimmed = text.trim_start_matches('0');
    let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
    (trimmed != text).then_some(trimmed)
}

/// Every order (or intent, or lone payment) `text` names, in any account;
/// a number with leading zeros also as the id it writes (an external
/// reference keeps its zeros).
pub(super) async fn search(
    c: &Conn<'_>,
    accounts: &[String],
    text: &str,
) -> Result<Vec<Found>, StoreError> {
    let text = text.trim();
    let mut found = search_one(c, accounts, text).await?;
    if let Some(id) = without_zeros(text) {
        for f in search_one(c, accounts, id).await? {
            if !found.contains(&f) {
                found.push(f);
            }
        }
    }
    Ok(found)
}

async fn search_one(
    c: &Conn<'_>,
    accounts: &[String],
    text: &str,
) -> Result<Vec<Found>, StoreError> {
    let mut found: Vec<Found> = Vec::new();
    if text.is_empty() || text.len() > 200 {
        return Ok(found);
    }
    let add = |f: Found, found: &mut Vec<Found>| {
        if !found.contains(&f) {
            found.push(f);
        }
    };
    for account in accounts {
        let hit = |kind, matched| Found {
            account: account.clone(),
            kind,
            id: text.to_string(),
            matched,
        };
        // What the order is known by, as kept when it was decided (blocked
        // or not, told or not).
        for (kind, subject) in order_refs::named_by(c, account, text).await? {
            if let Some(f) = subject_found(c, account, &subject, kind.label()).await? {
                add(f, &mut found);
            }
        }
        if PlatformOrderId::parse(text).is_ok() {
            if known_subject(c, account, &format!("platform_order:{text}")).await? {
                add(hit("platform_order", "Orders API order"), &mut found);
            }
            continue;
        }
        if order_state(c, account, text).await?.is_some()
            || known_subject(c, account, &format!("merchant_order:{text}")).await?
        {
            add(hit("merchant_order", "merchant order"), &mut found);
        }
        if known_subject(c, account, &format!("payment_intent:{text}")).await? {
            add(hit("payment_intent", "payment intent"), &mut found);
        }
        if known_subject(c, account, &format!("payment:{text}")).await? {
            match order_of_payment(c, account, text).await? {
                Some(order) => add(
                    Found {
                        id: order,
                        ..hit("merchant_order", "payment")
                    },
                    &mut found,
                ),
                None => add(hit("payment", "payment"), &mut found),
            }
        }
        // The classic payment behind an order of the Orders API.
        let behind: Option<String> = c
            .query_opt(
                sql!(
                    "SELECT platform_order FROM order_payments
                     WHERE account = $1 AND payment_id = $2"
                ),
                &[account, &text],
                |r| r.get(0),
            )
            .await?;
        if let Some(order) = behind {
            add(
                Found {
                    id: order,
                    ..hit("platform_order", "payment")
                },
                &mut found,
            );
        }
        for subject in by_reference(c, account, text).await? {
            if let Some(f) = subject_found(c, account, &subject, "external reference").await? {
                add(f, &mut found);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_number_with_leading_zeros_is_the_id_without_them() {
        assert_eq!(super::without_zeros("000123"), Some("123"));
        assert_eq!(super::without_zeros("000"), Some("0"));
        assert_eq!(super::without_zeros("123"), None);
        assert_eq!(super::without_zeros("0a1"), None);
        assert_eq!(super::without_zeros(""), None);
    }
}
