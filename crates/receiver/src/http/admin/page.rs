//! `GET /` on the admin listener: a small server-rendered status page (no
//! JavaScript, `templates/status.html`, escaped by the template engine) with
//! the health of storage, the API and the merchant's endpoint, jobs by state
//! with dead ones first and a retry button, and the recent deliveries and
//! events. The retry form carries a token derived from the admin token, its
//! body is bounded, and the page is never framed nor cached.

use askama::Template;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderValue, header};
use sha2::Sha256;

use super::error::{AdminError, Result};
use super::{Shared, constant_time_eq};
use crate::domain::JobState;
use crate::http::classify::Query;
use crate::store::{DeliveryFilter, DeliverySummary, EventSummary, JobSummary};

/// The retry form is one hidden field; anything larger is not ours.
const FORM_LIMIT: usize = 1024;

pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/", get(page)).route(
        "/jobs/{id}/retry",
        post(retry).layer(DefaultBodyLimit::max(FORM_LIMIT)),
    )
}

/// The status page's context.
#[derive(Template)]
#[template(path = "status.html")]
struct StatusPage {
    storage_ok: bool,
    api: Option<ApiCall>,
    merchant_failing: Option<String>,
    last_delivered_at: Option<String>,
    outbox_backlog: i64,
    job_counts: Vec<(&'static str, i64)>,
    /// Dead first, then running and pending.
    jobs: Vec<JobSummary>,
    deliveries: Vec<DeliverySummary>,
    events: Vec<EventSummary>,
    reconcile: Option<Reconcile>,
    csrf: String,
}

/// The reconciliation line.
struct Reconcile {
    /// Changes found with no notification in the last 24 hours (any
    /// instance's).
    missed_24h: u64,
    /// This process's last pass, in words.
    last_pass: String,
    last_error: Option<String>,
}

struct ApiCall {
    ok: bool,
    endpoint: String,
    resource_id: String,
    status: String,
    at: String,
}

/// The form token for `secret` (the admin token).
pub fn csrf_token(secret: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any size");
    mac.update(b"pointhook status page form");
    hex::encode(mac.finalize().into_bytes())
}

async fn page(State(s): State<Shared>) -> Result<Response> {
    let storage_ok = s.store.check_writable().await.is_ok();
    let now = s.now();
    let store = &s.store;
    let mut jobs = store.list_jobs(Some(JobState::Dead), 50).await?;
    jobs.extend(store.list_jobs(Some(JobState::Running), 20).await?);
    jobs.extend(store.list_jobs(Some(JobState::Pending), 20).await?);
    let (health, counts) = (store.health().await?, store.metrics_snapshot(now).await?);
    let deliveries = store
        .list_deliveries(DeliveryFilter {
            limit: 20,
            ..Default::default()
        })
        .await?;
    let events = store.list_events(None, None, 20).await?;
    let reconcile = match &s.sweep {
        None => None,
        Some(status) => {
            let st = status.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let last_pass = match (&st.last_pass_at, &st.last_report) {
                (Some(at), Some(r)) => format!(
                    "last pass at {}: {} changes listed, {} known, {} waiting for their notification, {} missed",
                    crate::clock::rfc3339(*at),
                    r.found,
                    r.known,
                    r.waiting,
                    r.missed()
                ),
                _ if !st.leading && st.last_pass_at.is_none() => {
                    "no pass here yet (another instance may be sweeping)".into()
                }
                _ => "no pass yet".into(),
            };
            Some(Reconcile {
                missed_24h: store.missed_since(now - 86_400_000).await?,
                last_pass,
                last_error: st.last_error,
            })
        }
    };
    let page = StatusPage {
        storage_ok,
        api: health.last_api_call.map(|f| ApiCall {
            ok: (200..300).contains(&f.status),
            status: if f.status == 0 {
                "no answer".into()
            } else {
                f.status.to_string()
            },
            endpoint: f.endpoint,
            resource_id: f.resource_id,
            at: f.at,
        }),
        merchant_failing: health.merchant_failing,
        last_delivered_at: health.last_delivered_at,
        outbox_backlog: counts.outbox_backlog,
        job_counts: counts.jobs,
        jobs,
        deliveries,
        events,
        reconcile,
        csrf: csrf_token(s.token.expose()),
    };
    let html = page.render().map_err(|e| {
        tracing::error!(error = %e, "status page did not render");
        AdminError::BadRequest("the status page could not be rendered".into())
    })?;
    let mut res = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    protect(&mut res);
    Ok(res)
}

/// The retry button: a dead job runs again, then back to the page.
async fn retry(State(s): State<Shared>, Path(text): Path<String>, body: Bytes) -> Result<Response> {
    let id: i64 = text
        .parse()
        .map_err(|_| AdminError::BadRequest(format!("{text:?} is not a number")))?;
    let form = Query::parse(&String::from_utf8_lossy(&body));
    let expected = csrf_token(s.token.expose());
    if !form
        .get("csrf")
        .is_some_and(|t| constant_time_eq(t.as_bytes(), expected.as_bytes()))
    {
        return Err(AdminError::Forbidden("the form is stale: reload the page"));
    }
    let now = s.now();
    s.store.retry_job(id, now).await?;
    let mut res = Redirect::to("/").into_response();
    protect(&mut res);
    Ok(res)
}

/// Never framed (clickjacking), never cached.
fn protect(res: &mut Response) {
    let headers = res.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}
