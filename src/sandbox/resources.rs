//! The platform's resources API, as the sandbox serves it: Bearer token
//! required, errors in the platform's shape (`message`, `error`, `status`,
//! `cause[]`).

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::{self, AccountRow};
use super::db;
use super::faults::Call;
use super::{changes, devices, intents, merchant_orders, payments, refunds, search, terminals};
use crate::http::response::{self, Body};
use crate::money::Money;

pub(super) async fn handle(
    sb: &std::sync::Arc<Sandbox>,
    req: Request<Incoming>,
) -> anyhow::Result<Response<Body>> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    sb.faults.record(Call {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        authorization: header("authorization"),
        idempotency_key: header("x-idempotency-key"),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    if let Some((status, delay, retry_after)) =
        sb.faults.take(parts.method.as_str(), parts.uri.path())
    {
        tokio::time::sleep(delay).await;
        if let Some(code) = status {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut res = platform_error(status, "injected", &format!("injected {code}"), &[]);
            if let Some(secs) = retry_after {
                res.headers_mut()
                    .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
            }
            return Ok(res);
        }
    }
    if parts.method == Method::GET {
        tokio::time::sleep(sb.faults.read_delay()).await;
    }
    let req = Request::from_parts(parts, ());
    let Some(account) = accounts::authenticate(sb, &req).await? else {
        return Ok(platform_error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "invalid access token",
            &[(401, "a valid Bearer access token is required")],
        ));
    };
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let headers = req.headers().clone();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (&method, parts.as_slice()) {
        (&Method::POST, ["v1", "payments"]) => create_payment(sb, &account, &body).await,
        (&Method::GET, ["v1", "payments", "search"]) => {
            search::payments(sb, &account, &query).await
        }
        (&Method::GET, ["merchant_orders", "search"]) => {
            search::merchant_orders(sb, &account, &query).await
        }
        (&Method::GET, ["v1", "chargebacks", "search"]) => {
            search::chargebacks(sb, &account, &query).await
        }
        (&Method::GET, ["v1", "payments", id]) => {
            get(sb, &account, "payment", id, "Payment not found").await
        }
        (&Method::PUT, ["v1", "payments", id]) => payments::update(sb, &account, id, &body).await,
        (&Method::POST, ["v1", "payments", id, "refunds"]) => {
            let key = headers
                .get("x-idempotency-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            refunds::create(sb, &account, id, key, &body).await
        }
        (&Method::GET, ["v1", "payments", id, "refunds"]) => refunds::list(sb, &account, id).await,
        (&Method::GET, ["v1", "payments", id, "refunds", refund]) => {
            refunds::get(sb, &account, id, refund).await
        }
        (&Method::POST, ["merchant_orders"]) => merchant_orders::create(sb, &account, &body).await,
        (&Method::PUT, ["merchant_orders", id]) => {
            merchant_orders::update(sb, &account, id, &body).await
        }
        (_, ["point", "integration-api", rest @ ..]) => {
            point(sb, &account, &method, rest, &query, &body).await
        }
        (&Method::GET, ["merchant_orders", id]) => {
            get(
                sb,
                &account,
                "merchant_order",
                id,
                "Merchant order not found",
            )
            .await
        }
        (&Method::GET, ["v1", "chargebacks", id]) => {
            get(sb, &account, "chargeback", id, "Chargeback not found").await
        }
        (_, ["v1", "orders", ..] | ["terminals", "v1", ..]) => {
            super::orders::handle(sb, &account, &req, &body).await
        }
        _ => Ok(platform_error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no resource at {method} {path}"),
            &[],
        )),
    }
}

/// The point-of-sale API (`/point/integration-api/…`): devices, payment
/// intents on them, intent events, the integrator.
async fn point(
    sb: &std::sync::Arc<Sandbox>,
    account: &AccountRow,
    method: &Method,
    rest: &[&str],
    query: &str,
    body: &[u8],
) -> anyhow::Result<Response<Body>> {
    match (method, rest) {
        (&Method::GET, ["devices"]) => devices::list(sb, account, query).await,
        (&Method::PATCH, ["devices", device]) => {
            devices::change_mode(sb, account, device, body).await
        }
        (&Method::POST, ["devices", device, "payment-intents"]) => {
            terminals::create(sb, account, device, body).await
        }
        (&Method::DELETE, ["devices", device, "payment-intents", id]) => {
            terminals::cancel(sb, account, device, id).await
        }
        (&Method::GET, ["payment-intents", "events"]) => {
            search::intent_events(sb, account, query).await
        }
        (&Method::GET, ["payment-intents", id]) => get_intent(sb, account, id).await,
        (&Method::GET, ["payment-intents", id, "events"]) => {
            terminals::last_event(sb, account, id).await
        }
        (_, ["integrator"]) => intents::integrator(sb, account, method, body).await,
        _ => Ok(platform_error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!(
                "no resource at {method} /point/integration-api/{}",
                rest.join("/")
            ),
            &[],
        )),
    }
}

/// An error body as the platform writes it.
pub(super) fn platform_error(
    status: StatusCode,
    error: &str,
    message: &str,
    causes: &[(u32, &str)],
) -> Response<Body> {
    let cause: Vec<Value> = causes
        .iter()
        .map(|(code, d)| json!({"code": code, "description": d, "data": null}))
        .collect();
    response::json(
        status,
        json!({"message": message, "error": error, "status": status.as_u16(), "cause": cause})
            .to_string(),
    )
}

pub(super) fn ok_json(status: StatusCode, v: &Value) -> Response<Body> {
    response::json(status, v.to_string())
}

async fn get(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
    missing: &'static str,
) -> anyhow::Result<Response<Body>> {
    let (id, now) = (id.to_string(), sb.now());
    let found = sb.db.call(move |c| visible(c, kind, &id, now)).await?;
    Ok(match found {
        Some((owner, body)) if owner == account.name => ok_json(StatusCode::OK, &body),
        _ => platform_error(
            StatusCode::NOT_FOUND,
            "not_found",
            missing,
            &[(2000, missing)],
        ),
    })
}

/// `GET /point/integration-api/payment-intents/{id}`, with the documented
/// answer for an intent that does not exist.
async fn get_intent(
    sb: &Sandbox,
    account: &AccountRow,
    id: &str,
) -> anyhow::Result<Response<Body>> {
    let (id, now) = (id.to_string(), sb.now());
    let found = sb
        .db
        .call(move |c| visible(c, "payment_intent", &id, now))
        .await?;
    Ok(match found {
        Some((owner, body)) if owner == account.name => ok_json(StatusCode::OK, &body),
        _ => terminals::intent_not_found(),
    })
}

/// The resource as `GET` serves it: absent while the eventual-consistency
/// quirk hides it.
fn visible(
    c: &rusqlite::Connection,
    kind: &str,
    id: &str,
    now: i64,
) -> rusqlite::Result<Option<(String, Value)>> {
    if super::quirks::hidden(c, kind, id, now)? {
        return Ok(None);
    }
    db::get_resource(c, kind, id)
}

// Each check reads "unless the field is right, name it".
#[allow(clippy::nonminimal_bool)]
/// `POST /v1/payments`: validated like the platform validates it; created
/// in its final status (approved unless the control API preset another).
async fn create_payment(
    sb: &Sandbox,
    account: &AccountRow,
    body: &[u8],
) -> anyhow::Result<Response<Body>> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return Ok(platform_error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "body is not JSON",
            &[(1, "body is not JSON")],
        ));
    };
    let mut causes: Vec<(u32, String)> = Vec::new();
    let amount = v
        .get("transaction_amount")
        .and_then(|a| Money::parse(&a.to_string()));
    if !amount.is_some_and(|a| a > Money::ZERO) {
        causes.push((4020, "transaction_amount must be a positive number".into()));
    }
    if !v
        .get("token")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty())
    {
        causes.push((2006, "token is required (a card token)".into()));
    }
    if v.get("description").is_some_and(|d| !d.is_string()) {
        causes.push((4021, "description must be a string".into()));
    }
    if !v
        .get("installments")
        .and_then(Value::as_u64)
        .is_some_and(|i| i >= 1)
    {
        causes.push((
            3011,
            "installments must be a whole number, 1 or more".into(),
        ));
    }
    if !v
        .get("payment_method_id")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.is_empty())
    {
        causes.push((4037, "payment_method_id is required".into()));
    }
    if v.get("issuer_id")
        .is_some_and(|i| !(i.is_string() || i.is_u64()))
    {
        causes.push((3018, "issuer_id must be a number or a string".into()));
    }
    let notification_url = v
        .get("notification_url")
        .and_then(Value::as_str)
        .map(str::to_string);
    if v.get("notification_url").is_some()
        && !notification_url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .is_some_and(|u| matches!(u.scheme(), "http" | "https"))
    {
        causes.push((4034, "notification_url must be an http or https URL".into()));
    }
    let email = v.pointer("/payer/email").and_then(Value::as_str);
    if !email.is_some_and(|e| e.contains('@') && !e.starts_with('@') && !e.ends_with('@')) {
        causes.push((4050, "payer.email must be an e-mail address".into()));
    }
    for field in ["type", "number"] {
        let ok = v
            .pointer(&format!("/payer/identification/{field}"))
            .is_some_and(|x| x.as_str().is_some_and(|s| !s.is_empty()) || x.is_u64());
        if !ok {
            causes.push((2067, format!("payer.identification.{field} is required")));
        }
    }
    if !causes.is_empty() {
        let list: Vec<(u32, &str)> = causes.iter().map(|(c, d)| (*c, d.as_str())).collect();
        return Ok(platform_error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "invalid parameters",
            &list,
        ));
    }
    if v.get("capture").is_some_and(|c| !c.is_boolean()) {
        return Ok(platform_error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "capture must be true or false",
            &[(1, "capture must be true or false")],
        ));
    }
    // `"capture": false` reserves the amount: the payment is authorized
    // until `PUT {"capture":true}` (a preset status still wins).
    let reserve = v.get("capture") == Some(&Value::Bool(false));
    let amount = amount.unwrap_or(Money::ZERO);
    let name = account.name.clone();
    let now = sb.now();
    let input = v.clone();
    let payment = sb
        .db
        .call(move |conn| {
            let tx = conn.transaction()?;
            let status = accounts::take_preset(&tx, &name, "next_payment_status")?
                .unwrap_or_else(|| if reserve { "authorized" } else { "approved" }.into());
            let id = db::next_id(&tx, "payment", 1_300_000_001)?;
            let mut payment = changes::payment_body(
                id,
                &status,
                amount,
                input.get("description").cloned(),
                None,
                now,
            );
            // What the payer chose and the seller's reference, as sent.
            for field in ["external_reference", "payment_method_id", "installments"] {
                if let Some(x) = input.get(field).filter(|x| x.is_string() || x.is_u64()) {
                    payment[field] = x.clone();
                }
            }
            db::put_resource(
                &tx,
                "payment",
                &id.to_string(),
                &name,
                &payment,
                notification_url.as_deref(),
            )?;
            tx.commit()?;
            Ok(payment)
        })
        .await?;
    let id = payment["id"].to_string();
    changes::announce(sb, account, "payment", &id, "payment.created").await?;
    Ok(ok_json(StatusCode::CREATED, &payment))
}
