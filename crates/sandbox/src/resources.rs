//! The platform's resources API, as the sandbox serves it: Bearer token
//! required, errors in the platform's shape (`message`, `error`, `status`,
//! `cause[]`).

use axum::Router;
use axum::extract::{Extension, Request, State};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::routing::{any, delete, get, patch, post};
use http::{HeaderMap, Method, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::Sandbox;
use super::accounts::{self, AccountRow};
use super::db;
use super::faults::Call;
use super::routes::{Answer, Fail, Raw, Sb, Seg};
use super::{changes, devices, intents, merchant_orders, payments, refunds, search, terminals};
use pointhook_common::money::Money;
use pointhook_common::response::{self, Body};

/// The platform's route table. Every call is recorded and may meet an
/// injected fault (`observe`), then needs an account's Bearer token
/// (`authenticate`), unknown routes included, as on the platform.
pub(crate) fn routes(sb: Sb) -> Router {
    Router::new()
        .route("/v1/payments", post(create_payment))
        .route("/v1/payments/search", get(search_payments))
        .route("/v1/payments/{id}", get(get_payment).put(update_payment))
        .route(
            "/v1/payments/{id}/refunds",
            post(create_refund).get(list_refunds),
        )
        .route("/v1/payments/{id}/refunds/{refund}", get(get_refund))
        .route("/merchant_orders", post(create_merchant_order))
        .route("/merchant_orders/search", get(search_merchant_orders))
        .route(
            "/merchant_orders/{id}",
            get(get_merchant_order).put(update_merchant_order),
        )
        .route("/v1/chargebacks/search", get(search_chargebacks))
        .route("/v1/chargebacks/{id}", get(get_chargeback))
        .route(POINT_DEVICES, get(list_devices))
        .route(
            "/point/integration-api/devices/{device}",
            patch(change_device_mode),
        )
        .route(
            "/point/integration-api/devices/{device}/payment-intents",
            post(create_intent_on_device),
        )
        .route(
            "/point/integration-api/devices/{device}/payment-intents/{id}",
            delete(cancel_intent_on_device),
        )
        .route(
            "/point/integration-api/payment-intents/events",
            get(intent_events_by_date),
        )
        .route(
            "/point/integration-api/payment-intents/{id}",
            get(get_intent),
        )
        .route(
            "/point/integration-api/payment-intents/{id}/events",
            get(intent_last_event),
        )
        .route("/point/integration-api/integrator", any(integrator))
        .merge(super::orders::routes())
        .fallback(no_resource)
        .method_not_allowed_fallback(no_resource)
        .layer(middleware::from_fn_with_state(sb.clone(), authenticate))
        .layer(middleware::from_fn_with_state(sb.clone(), observe))
        .with_state(sb)
}

/// A layer's answer: its own refusal, or the route's answer passed on as is.
type Passed = Result<axum::response::Response, Fail>;

const POINT_DEVICES: &str = "/point/integration-api/devices";

/// Records the call for `GET /sandbox/requests`, answers an injected fault
/// instead when one matches, and delays reads as configured.
async fn observe(State(sb): State<Sb>, req: Request, next: Next) -> Passed {
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
            return Ok(res.into_response());
        }
    }
    if parts.method == Method::GET {
        tokio::time::sleep(sb.faults.read_delay()).await;
    }
    Ok(next
        .run(Request::from_parts(parts, axum::body::Body::from(body)))
        .await)
}

/// The account whose Bearer token the call carries, for the route
/// functions to extract; 401 without one.
async fn authenticate(State(sb): State<Sb>, mut req: Request, next: Next) -> Passed {
    let Some(account) = accounts::authenticate(&sb, req.headers()).await? else {
        return Ok(platform_error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "invalid access token",
            &[(401, "a valid Bearer access token is required")],
        )
        .into_response());
    };
    req.extensions_mut().insert(account);
    Ok(next.run(req).await)
}

async fn no_resource(method: Method, uri: Uri) -> Response<Body> {
    platform_error(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("no resource at {method} {}", uri.path()),
        &[],
    )
}

type Account = Extension<AccountRow>;

async fn create_payment(State(sb): State<Sb>, Extension(a): Account, Raw(body): Raw) -> Answer {
    Ok(new_payment(&sb, &a, &body).await?)
}

async fn search_payments(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    Ok(search::payments(&sb, &a, uri.query().unwrap_or("")).await?)
}

async fn get_payment(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    Ok(fetch(&sb, &a, "payment", &id, "Payment not found").await?)
}

async fn update_payment(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    Ok(payments::update(&sb, &a, &id, &body).await?)
}

async fn create_refund(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    headers: HeaderMap,
    Raw(body): Raw,
) -> Answer {
    let key = headers
        .get("x-idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Ok(refunds::create(&sb, &a, &id, key, &body).await?)
}

async fn list_refunds(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    Ok(refunds::list(&sb, &a, &id).await?)
}

async fn get_refund(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((id, refund)): Seg<(String, String)>,
) -> Answer {
    Ok(refunds::get(&sb, &a, &id, &refund).await?)
}

async fn create_merchant_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Raw(body): Raw,
) -> Answer {
    Ok(merchant_orders::create(&sb, &a, &body).await?)
}

async fn search_merchant_orders(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    Ok(search::merchant_orders(&sb, &a, uri.query().unwrap_or("")).await?)
}

async fn get_merchant_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    Ok(fetch(&sb, &a, "merchant_order", &id, "Merchant order not found").await?)
}

async fn update_merchant_order(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    Ok(merchant_orders::update(&sb, &a, &id, &body).await?)
}

async fn search_chargebacks(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    Ok(search::chargebacks(&sb, &a, uri.query().unwrap_or("")).await?)
}

async fn get_chargeback(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    Ok(fetch(&sb, &a, "chargeback", &id, "Chargeback not found").await?)
}

async fn list_devices(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    Ok(devices::list(&sb, &a, uri.query().unwrap_or("")).await?)
}

async fn change_device_mode(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(device): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    Ok(devices::change_mode(&sb, &a, &device, &body).await?)
}

async fn create_intent_on_device(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(device): Seg<String>,
    Raw(body): Raw,
) -> Answer {
    Ok(terminals::create(&sb, &a, &device, &body).await?)
}

async fn cancel_intent_on_device(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg((device, id)): Seg<(String, String)>,
) -> Answer {
    Ok(terminals::cancel(&sb, &a, &device, &id).await?)
}

async fn get_intent(State(sb): State<Sb>, Extension(a): Account, Seg(id): Seg<String>) -> Answer {
    Ok(fetch_intent(&sb, &a, &id).await?)
}

async fn intent_events_by_date(State(sb): State<Sb>, Extension(a): Account, uri: Uri) -> Answer {
    Ok(search::intent_events(&sb, &a, uri.query().unwrap_or("")).await?)
}

async fn intent_last_event(
    State(sb): State<Sb>,
    Extension(a): Account,
    Seg(id): Seg<String>,
) -> Answer {
    Ok(terminals::last_event(&sb, &a, &id).await?)
}

async fn integrator(
    State(sb): State<Sb>,
    Extension(a): Account,
    method: Method,
    Raw(body): Raw,
) -> Answer {
    Ok(intents::integrator(&sb, &a, &method, &body).await?)
}

/// An error body as the platform writes it.
pub(crate) fn platform_error(
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

async fn fetch(
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
async fn fetch_intent(
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
async fn new_payment(
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
