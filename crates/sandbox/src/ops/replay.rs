//! Sending a notification as it was recorded (`POST /sandbox/notifications`):
//! its query, headers and body exactly as given, to the account's
//! notification or webhook URL (or a loopback URL given), queued like any
//! notification of the sandbox's own, so the schedule, the log, dropped
//! notifications and quirks apply. A scenario replays what pointhook saw
//! with it; a recorded signature is stale, so it may ask for a fresh one
//! with the account's secret.

use http::StatusCode;
use serde_json::{Value, json};

use super::sandbox::Sandbox;
use super::{queue, shapes};
use crate::error::HttpError;
use crate::model::{AccountRow, Form, OutBody, Outgoing};
use pointhook_common::query::Query;

fn bad(message: &str) -> HttpError {
    HttpError::control(StatusCode::BAD_REQUEST, message)
}

/// `POST /sandbox/notifications {"to"?,"url"?,"query"?,"headers"?,"body"?,"sign"?}`.
pub async fn send(sb: &Sandbox, account: &AccountRow, v: &Value) -> Result<Value, HttpError> {
    let base = match (v.get("url"), v.get("to").and_then(Value::as_str)) {
        (Some(Value::String(u)), _) => {
            if !sb.may_notify(u) {
                return Err(bad(super::payments::NOT_LOOPBACK));
            }
            u.clone()
        }
        (Some(_), _) => return Err(bad("url must be a URL")),
        (None, None | Some("notification_url")) => account
            .notification_url
            .clone()
            .ok_or_else(|| bad("the account has no notification_url"))?,
        (None, Some("webhook_url")) => account
            .webhook_url
            .clone()
            .ok_or_else(|| bad("the account has no webhook_url"))?,
        (None, Some(_)) => return Err(bad("to must be notification_url or webhook_url")),
    };
    let query = match v.get("query") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(q)) => q.trim_start_matches('?').to_string(),
        Some(_) => return Err(bad("query must be a query string (topic=payment&id=1)")),
    };
    let url = match (query.is_empty(), base.contains('?')) {
        (true, _) => base,
        (false, true) => format!("{base}&{query}"),
        (false, false) => format!("{base}?{query}"),
    };
    let mut headers: Vec<(String, String)> = match v.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(h)) => h
            .iter()
            .map(|(k, x)| match x {
                Value::String(s) => Ok((k.to_ascii_lowercase(), s.clone())),
                _ => Err(bad("headers must be an object of strings")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("headers must be an object of strings")),
    };
    let body = match v.get("body") {
        None | Some(Value::Null) => OutBody::Raw(String::new()),
        Some(Value::String(raw)) => OutBody::Raw(raw.clone()),
        Some(other) => OutBody::Json(other.clone()),
    };
    if !headers.iter().any(|(k, _)| k == "content-type") {
        headers.push(("content-type".into(), "application/json".into()));
    }
    let q = Query::parse(&query);
    let data_id = q.get("data.id").map(str::to_string);
    if v.get("sign") == Some(&Value::Bool(true)) {
        let secret = account
            .webhook_secret
            .as_deref()
            .ok_or_else(|| bad("sign needs the account's webhook secret, and it has none"))?;
        let now_secs = (sb.now() / 1000).max(0) as u64;
        shapes::resign(&mut headers, secret, data_id.as_deref(), now_secs);
    }
    let out = Outgoing {
        url: url.clone(),
        form: if data_id.is_some() {
            Form::Webhook
        } else {
            Form::Ipn
        },
        topic: q
            .get("topic")
            .or_else(|| q.get("type"))
            .unwrap_or("notification")
            .to_string(),
        resource_id: q
            .get("id")
            .or(data_id.as_deref())
            .unwrap_or_default()
            .to_string(),
        body,
        headers,
    };
    let (name, now) = (account.name.clone(), sb.now());
    let id: i64 = sb
        .db
        .call(move |tx| queue::enqueue(tx, &name, &out, now))
        .await?;
    sb.queued();
    Ok(json!({"dispatch": id, "url": url}))
}
