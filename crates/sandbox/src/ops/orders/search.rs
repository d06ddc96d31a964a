//! `GET /v1/orders`: orders created between `begin_date` and `end_date`
//! (RFC 3339, both required, at most 30 days apart, the start not in the
//! future, the end at most 5 years old), filtered by `external_reference`,
//! `type`, `status` and `status_detail`. The SDKs page two ways (Go and
//! Python `limit`/`offset`, Node `page`/`page_size`); both are read, and
//! `paging` answers with strings, as the SDKs' types expect:
//! `{"data":[…],"paging":{"total","total_pages","offset","limit"}}`.

use http::StatusCode;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::error::HttpError;
use crate::ops::sandbox::Sandbox;
use crate::state::resources;
use pointhook_common::query::Query;

const MAX_WINDOW_MS: i64 = 30 * 86_400_000;
const MAX_AGE_MS: i64 = 5 * 365 * 86_400_000;
const DEFAULT_LIMIT: u64 = 30;
const MAX_LIMIT: u64 = 100;

fn invalid(message: &str) -> HttpError {
    HttpError::orders(StatusCode::BAD_REQUEST, "invalid_parameter", message)
}

fn created(order: &Value, field: &str) -> Option<i64> {
    order[field]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .map(|t| t.as_millisecond())
}

pub async fn search(sb: &Sandbox, ctx: &Ctx, query: &str) -> Result<Reply, HttpError> {
    let q = Query::parse(query);
    let (Some(begin), Some(end)) = (q.get("begin_date"), q.get("end_date")) else {
        return Err(HttpError::orders(
            StatusCode::BAD_REQUEST,
            "missing_required_params",
            "begin_date and end_date are required",
        ));
    };
    let (Ok(begin), Ok(end)) = (begin.parse::<Timestamp>(), end.parse::<Timestamp>()) else {
        return Err(invalid(
            "begin_date and end_date must be RFC 3339 (2026-01-01T00:00:00Z)",
        ));
    };
    let (begin, end) = (begin.as_millisecond(), end.as_millisecond());
    if end < begin || end - begin > MAX_WINDOW_MS {
        return Err(invalid(
            "end_date must be after begin_date, at most 30 days",
        ));
    }
    if begin > ctx.now {
        return Err(invalid("begin_date cannot be in the future"));
    }
    if ctx.now - end > MAX_AGE_MS {
        return Err(invalid("end_date cannot be more than 5 years ago"));
    }
    let number = |name: &str| match q.get(name) {
        None => Ok(None),
        Some(t) => t
            .parse::<u64>()
            .map(Some)
            .map_err(|_| invalid(&format!("{name} must be a whole number"))),
    };
    let paging = (
        number("limit"),
        number("offset"),
        number("page_size"),
        number("page"),
    );
    let (limit, offset) = match paging {
        (Ok(l), Ok(o), Ok(size), Ok(page)) => {
            let limit = l.or(size).unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
            let offset =
                o.unwrap_or_else(|| page.unwrap_or(1).saturating_sub(1).saturating_mul(limit));
            (limit, offset)
        }
        (Err(r), ..) | (_, Err(r), ..) | (_, _, Err(r), _) | (.., Err(r)) => return Err(r),
    };
    let sort = match q.get("sort_by").unwrap_or("created_date") {
        f @ ("created_date" | "last_updated_date") => f.to_string(),
        _ => return Err(invalid("sort_by must be created_date or last_updated_date")),
    };
    let descending = match q.get("sort_order").unwrap_or("asc") {
        "asc" => false,
        "desc" => true,
        _ => return Err(invalid("sort_order must be asc or desc")),
    };
    let filters: Vec<(&str, String)> = ["external_reference", "type", "status", "status_detail"]
        .into_iter()
        .filter_map(|f| q.get(f).map(|v| (f, v.to_string())))
        .collect();
    let name = ctx.account.name.clone();
    let mut found: Vec<Value> = sb
        .db
        .call(move |tx| resources::of_kind(tx, "order", &name))
        .await?
        .into_iter()
        .filter(|o| created(o, "created_date").is_some_and(|t| t >= begin && t <= end))
        .filter(|o| filters.iter().all(|(f, v)| o[*f].as_str() == Some(v)))
        .collect();
    // Oldest first by default, so an order created while a caller pages
    // lands on a later page instead of shifting the earlier ones.
    found.sort_by(|a, b| {
        let o = created(a, &sort)
            .cmp(&created(b, &sort))
            .then_with(|| a["id"].as_str().cmp(&b["id"].as_str()));
        if descending { o.reverse() } else { o }
    });
    let total = found.len() as u64;
    let data: Vec<Value> = found
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit as usize)
        .collect();
    Ok(Reply::ok(
        StatusCode::OK,
        json!({
            "data": data,
            "paging": {
                "total": total.to_string(),
                "total_pages": total.div_ceil(limit).to_string(),
                "offset": offset.to_string(),
                "limit": limit.to_string(),
            },
        }),
    ))
}
