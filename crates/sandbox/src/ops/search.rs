//! The platform's search endpoints, as the sandbox serves them
//! (docs/reconciliation.md): payments by a date range with the platform's
//! paging (at most 50 a page, no offset past 10,000), merchant orders by
//! last update, payment-intent events by day, chargebacks by payment.

use std::cmp::Ordering;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::sandbox::Sandbox;
use super::shapes::json_id_text;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::resources;
use pointhook_common::query::Query;

const MAX_LIMIT: u64 = 50;
const MAX_OFFSET: u64 = 10_000;

fn bad(message: &str) -> HttpError {
    HttpError::bad_request(1001, message)
}

/// A date parameter: an instant with its offset, `NOW`, or `NOW-nUNITS`.
fn date(q: &Query, name: &str, now: i64, default: i64) -> Result<i64, HttpError> {
    let Some(text) = q.get(name) else {
        return Ok(default);
    };
    if let Some(rest) = text.strip_prefix("NOW") {
        if rest.is_empty() {
            return Ok(now);
        }
        let rest = rest.strip_prefix('-').unwrap_or("");
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let unit = &rest[digits.len()..];
        let n: i64 = digits.parse().unwrap_or(0);
        let ms = match unit {
            "MINUTES" => 60_000,
            "HOURS" => 3_600_000,
            "DAYS" => 86_400_000,
            "WEEKS" => 7 * 86_400_000,
            "MONTHS" => 30 * 86_400_000,
            _ => 0,
        };
        if n > 0 && ms > 0 {
            return Ok(now - n * ms);
        }
    }
    text.parse::<Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|_| {
            bad(&format!(
                "{name} must be yyyy-MM-dd'T'HH:mm:ss.SSSZ or NOW-nDAYS"
            ))
        })
}

fn number(q: &Query, name: &str, default: u64) -> Result<u64, HttpError> {
    match q.get(name) {
        None => Ok(default),
        Some(t) => t
            .parse()
            .map_err(|_| bad(&format!("{name} must be a whole number"))),
    }
}

fn at(v: &Value, field: &str) -> Option<i64> {
    v[field]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .map(|t| t.as_millisecond())
}

/// `GET /v1/payments/search`.
pub async fn payments(sb: &Sandbox, account: &AccountRow, query: &str) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let now = sb.now();
    let range = q.get("range").unwrap_or("date_created").to_string();
    if !matches!(
        range.as_str(),
        "date_created" | "date_last_updated" | "date_approved" | "money_release_date"
    ) {
        return Err(bad(
            "range must be date_created, date_last_updated, date_approved or money_release_date",
        ));
    }
    let (begin, end, offset, limit) = match (
        date(&q, "begin_date", now, now - 90 * 86_400_000),
        date(&q, "end_date", now, now),
        number(&q, "offset", 0),
        number(&q, "limit", 30),
    ) {
        (Ok(b), Ok(e), Ok(o), Ok(l)) => (b, e, o, l.clamp(1, MAX_LIMIT)),
        (Err(r), ..) | (_, Err(r), ..) | (_, _, Err(r), _) | (.., Err(r)) => return Err(r),
    };
    if offset > MAX_OFFSET {
        return Err(bad("offset must be at most 10000"));
    }
    let sort = q.get("sort").unwrap_or("date_created").to_string();
    let descending = q.get("criteria") == Some("desc");
    let filters: Vec<(&str, String)> = ["external_reference", "status"]
        .into_iter()
        .filter_map(|f| q.get(f).map(|v| (f, v.to_string())))
        .collect();
    let name = account.name.clone();
    let mut found: Vec<Value> = sb
        .db
        .call(move |tx| resources::of_kind(tx, "payment", &name))
        .await?
        .into_iter()
        .filter(|p| at(p, &range).is_some_and(|t| t >= begin && t <= end))
        .filter(|p| filters.iter().all(|(f, v)| json_id_text(&p[*f]) == *v))
        .collect();
    found.sort_by(|a, b| {
        let o = match sort.as_str() {
            "id" => json_id_text(&a["id"])
                .parse::<u64>()
                .unwrap_or(0)
                .cmp(&json_id_text(&b["id"]).parse::<u64>().unwrap_or(0)),
            field => at(a, field).cmp(&at(b, field)),
        };
        let o = o.then_with(|| json_id_text(&a["id"]).cmp(&json_id_text(&b["id"])));
        if descending { o.reverse() } else { o }
    });
    let total = found.len() as u64;
    let results: Vec<Value> = found
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    Ok(json!({"paging": {"total": total, "limit": limit, "offset": offset}, "results": results}))
}

/// `GET /merchant_orders/search`: `{"elements","next_offset","total"}`, by
/// last update and the exact filters `external_reference`, `status`,
/// `order_status`, `preference_id`.
pub async fn merchant_orders(
    sb: &Sandbox,
    account: &AccountRow,
    query: &str,
) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let now = sb.now();
    let (from, to, offset, limit) = match (
        date(&q, "last_updated_from", now, 0),
        date(&q, "last_updated_to", now, i64::MAX),
        number(&q, "offset", 0),
        number(&q, "limit", 30),
    ) {
        (Ok(f), Ok(t), Ok(o), Ok(l)) => (f, t, o, l.clamp(1, 100)),
        (Err(r), ..) | (_, Err(r), ..) | (_, _, Err(r), _) | (.., Err(r)) => return Err(r),
    };
    let filters: Vec<(&str, String)> = [
        "external_reference",
        "status",
        "order_status",
        "preference_id",
    ]
    .into_iter()
    .filter_map(|f| q.get(f).map(|v| (f, v.to_string())))
    .collect();
    let name = account.name.clone();
    let mut found: Vec<Value> = sb
        .db
        .call(move |tx| resources::of_kind(tx, "merchant_order", &name))
        .await?
        .into_iter()
        .filter(|o| at(o, "last_updated").is_some_and(|t| t >= from && t <= to))
        .filter(|o| filters.iter().all(|(f, v)| json_id_text(&o[*f]) == *v))
        .collect();
    found.sort_by(
        |a, b| match at(a, "last_updated").cmp(&at(b, "last_updated")) {
            Ordering::Equal => json_id_text(&a["id"]).cmp(&json_id_text(&b["id"])),
            o => o,
        },
    );
    let total = found.len() as u64;
    let elements: Vec<Value> = found
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    let next = offset + elements.len() as u64;
    Ok(json!({"elements": elements, "next_offset": next, "total": total}))
}

/// `GET /point/integration-api/payment-intents/events?startDate&endDate`:
/// every state an intent reached on those days (UTC), at most 30 apart.
pub async fn intent_events(
    sb: &Sandbox,
    account: &AccountRow,
    query: &str,
) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let day = |name: &str| {
        q.get(name)
            .and_then(|d| d.parse::<jiff::civil::Date>().ok())
            .ok_or_else(|| bad(&format!("{name} is required, as YYYY-MM-DD")))
    };
    let (start, end) = match (day("startDate"), day("endDate")) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(r), _) | (_, Err(r)) => return Err(r),
    };
    if end < start || (end - start).get_days() > 30 {
        return Err(bad("endDate must be from startDate to 30 days after it"));
    }
    let ms = |d: jiff::civil::Date| {
        d.to_zoned(jiff::tz::TimeZone::UTC)
            .map(|z| z.timestamp().as_millisecond())
            .unwrap_or(0)
    };
    let (from, to) = (ms(start), ms(end) + 86_400_000);
    let name = account.name.clone();
    let events: Vec<Value> = sb
        .db
        .call(move |tx| resources::intent_events_between(tx, &name, from, to))
        .await?
        .into_iter()
        .map(|(intent, status, at)| {
            json!({
                "payment_intent_id": intent,
                "status": status,
                "created_on": pointhook_common::clock::rfc3339(at),
            })
        })
        .collect();
    Ok(json!({"events": events}))
}

/// `GET /v1/chargebacks/search?payment_id=`.
pub async fn chargebacks(
    sb: &Sandbox,
    account: &AccountRow,
    query: &str,
) -> Result<Value, HttpError> {
    let q = Query::parse(query);
    let Some(payment) = q.get("payment_id").map(str::to_string) else {
        return Err(bad("payment_id is required"));
    };
    let name = account.name.clone();
    let results: Vec<Value> = sb
        .db
        .call(move |tx| resources::of_kind(tx, "chargeback", &name))
        .await?
        .into_iter()
        .filter(|cb| {
            cb["payments"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| json_id_text(p) == payment))
        })
        .collect();
    let total = results.len();
    Ok(json!({"paging": {"total": total, "limit": total, "offset": 0}, "results": results}))
}
