//! The admin API on `[admin] listen`: read and replay deliveries, jobs,
//! merchant orders and events. Every request needs
//! `Authorization: Bearer {admin.token}`.
//!
//! - `GET  /api/deliveries?account=&kind=&topic=&since=&before=&limit=`
//! - `GET  /api/deliveries/{id}`
//! - `GET  /api/jobs?state=&limit=` (dead first)
//! - `GET  /api/jobs/{id}`
//! - `POST /api/jobs/{id}/retry`, `POST /api/jobs/retry-dead`
//! - `GET  /api/orders/{id}?account=`
//! - `GET  /api/events?type=&state=&limit=`
//! - `GET  /api/events/{id}`, `POST /api/events/{id}/redeliver`
//! - `GET  /api/fraud-reviews?state=held|confirmed|dismissed|all` (held by default)
//! - `POST /api/fraud-reviews/{id}/confirm`, `POST /api/fraud-reviews/{id}/dismiss`
//! - `GET  /metrics` (Prometheus text)
//! - `GET  /` the status page; `POST /jobs/{id}/retry` its retry button

// A refusal here is the response itself, built once and returned by value.
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::sync::Arc;

use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde::Serialize;

use super::Handler;
use super::classify::Query;
use super::response::{self, Body};
use crate::clock::Clock;
use crate::config::Secret;
use crate::store::admin::{self, DeliveryFilter};
use crate::store::{self, Store, StoreError};

pub struct Admin {
    pub store: Store,
    pub token: Secret,
    pub clock: Arc<dyn Clock>,
    /// Whether events are delivered anywhere (redelivery needs a URL).
    pub delivers_events: bool,
    /// The default account for `/api/orders/{id}`.
    pub default_account: Option<String>,
    pub metrics: crate::metrics::SharedMetrics,
}

impl Handler for Admin {
    fn handle(
        &self,
        req: Request<Incoming>,
        _peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<Body>> + Send {
        self.route(req)
    }
}

impl Admin {
    async fn route(&self, req: Request<Incoming>) -> Response<Body> {
        if !self.authorized(&req) {
            let mut res = response::error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "send Authorization: Bearer <admin.token>",
            );
            // Browsers (the status page) sign in with Basic: the token is the password.
            let api = req.uri().path().starts_with("/api/") || req.uri().path() == "/metrics";
            let challenge = if api {
                "Bearer"
            } else {
                "Basic realm=\"pointhook\""
            };
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static(challenge),
            );
            return res;
        }
        self.dispatch(req).await.unwrap_or_else(|refusal| refusal)
    }

    async fn dispatch(&self, req: Request<Incoming>) -> Result<Response<Body>, Response<Body>> {
        let query = Query::parse(req.uri().query().unwrap_or(""));
        let path: Vec<&str> = req.uri().path().trim_matches('/').split('/').collect();
        match (req.method(), path.as_slice()) {
            (&Method::GET, [""]) => self.status_page().await,
            (&Method::POST, ["jobs", id, "retry"]) => {
                let id = parse_id(id)?;
                let body = http_body_util::BodyExt::collect(req.into_body())
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let form = Query::parse(&String::from_utf8_lossy(&body));
                let expected = super::status_page::csrf_token(self.token.expose());
                if !form
                    .get("csrf")
                    .is_some_and(|t| constant_time_eq(t.as_bytes(), expected.as_bytes()))
                {
                    return Err(response::error(
                        StatusCode::FORBIDDEN,
                        "bad_form",
                        "the form is stale: reload the page",
                    ));
                }
                let now = self.now();
                self.store
                    .write(move |c| admin::retry_job(c, id, now))
                    .await
                    .map_err(storage_error)?;
                self.store.wake_worker();
                let mut res = response::json(StatusCode::SEE_OTHER, "{}");
                res.headers_mut()
                    .insert(header::LOCATION, http::HeaderValue::from_static("/"));
                Ok(res)
            }
            (&Method::GET, ["metrics"]) => match self.metrics.render(&self.store, self.now()).await
            {
                Ok(text) => {
                    let mut res = response::json(StatusCode::OK, text);
                    res.headers_mut().insert(
                        header::CONTENT_TYPE,
                        http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                    );
                    Ok(res)
                }
                Err(e) => Err(storage_error(e)),
            },
            (&Method::GET, ["api", "deliveries"]) => self.deliveries(&query).await,
            (&Method::GET, ["api", "deliveries", id]) => {
                let id = parse_id(id)?;
                found(
                    self.store.read(move |c| admin::get_delivery(c, id)).await,
                    "delivery",
                )
            }
            (&Method::GET, ["api", "jobs"]) => {
                let state = match query.get("state") {
                    None => None,
                    Some(s) => Some(admin::parse_job_state(s).ok_or_else(|| {
                        bad_request(&format!(
                            "state must be pending, running, done or dead, not {s:?}"
                        ))
                    })?),
                };
                let limit = limit(&query)?;
                json(
                    self.store
                        .read(move |c| admin::list_jobs(c, state, limit))
                        .await,
                )
            }
            (&Method::GET, ["api", "jobs", id]) => {
                let id = parse_id(id)?;
                found(self.store.read(move |c| admin::get_job(c, id)).await, "job")
            }
            (&Method::POST, ["api", "jobs", "retry-dead"]) => {
                let now = self.now();
                let n = self
                    .store
                    .write(move |c| admin::retry_dead_jobs(c, now))
                    .await;
                self.store.wake_worker();
                json(n.map(|n| serde_json::json!({"retried": n})))
            }
            (&Method::POST, ["api", "jobs", id, "retry"]) => {
                let id = parse_id(id)?;
                let now = self.now();
                match self
                    .store
                    .write(move |c| admin::retry_job(c, id, now))
                    .await
                {
                    Ok(true) => {
                        self.store.wake_worker();
                        json(Ok(serde_json::json!({"retried": id})))
                    }
                    Ok(false) => Err(response::error(
                        StatusCode::CONFLICT,
                        "not_dead",
                        &format!("job {id} does not exist or is not dead"),
                    )),
                    Err(e) => Err(storage_error(e)),
                }
            }
            (&Method::GET, ["api", "orders", id]) => {
                let account = query
                    .get("account")
                    .map(str::to_string)
                    .or_else(|| self.default_account.clone())
                    .ok_or_else(|| bad_request("several accounts: give ?account=NAME"))?;
                let order = id.to_string();
                found(
                    self.store
                        .read(move |c| admin::get_order(c, &account, &order))
                        .await,
                    "merchant order",
                )
            }
            (&Method::GET, ["api", "events"]) => {
                let kind = query.get("type").map(str::to_string);
                let state = match query.get("state") {
                    None => None,
                    Some(s) => Some(admin::parse_event_state(s).ok_or_else(|| {
                        bad_request(&format!(
                            "state must be pending, delivered, dead or stored, not {s:?}"
                        ))
                    })?),
                };
                let limit = limit(&query)?;
                json(
                    self.store
                        .read(move |c| admin::list_events(c, kind.as_deref(), state, limit))
                        .await,
                )
            }
            (&Method::GET, ["api", "events", id]) => {
                let id = id.to_string();
                found(
                    self.store.read(move |c| admin::get_event(c, &id)).await,
                    "event",
                )
            }
            (&Method::POST, ["api", "events", id, "redeliver"]) => self.redeliver(id).await,
            (&Method::GET, ["api", "fraud-reviews"]) => {
                let state = match query.get("state").unwrap_or("held") {
                    "all" => None,
                    s => Some(crate::domain::Review::parse(s).ok_or_else(|| {
                        bad_request(&format!(
                            "state must be held, confirmed, dismissed or all, not {s:?}"
                        ))
                    })?),
                };
                let limit = limit(&query)?;
                json(self.store.reviews(state, limit).await)
            }
            (&Method::POST, ["api", "fraud-reviews", id, verb @ ("confirm" | "dismiss")]) => {
                let id = parse_id(id)?;
                let now = self.now();
                let answer = if *verb == "confirm" {
                    self.store.confirm_review(id, now).await
                } else {
                    self.store
                        .dismiss_review(id, now, self.delivers_events)
                        .await
                };
                match answer.map_err(storage_error)? {
                    store::Answer::Done(review) => json(Ok(review)),
                    store::Answer::NotFound => Err(response::error(
                        StatusCode::NOT_FOUND,
                        "not_found",
                        &format!("no fraud review {id}"),
                    )),
                    store::Answer::AlreadyDecided(state) => Err(response::error(
                        StatusCode::CONFLICT,
                        "already_decided",
                        &format!("fraud review {id} is {state} already"),
                    )),
                }
            }
            (m, _) => Err(response::not_found(m, req.uri().path())),
        }
    }

    async fn deliveries(&self, query: &Query) -> Result<Response<Body>, Response<Body>> {
        let since = match query.get("since") {
            None => None,
            Some(s) => Some(parse_time(s)?),
        };
        let before = match query.get("before") {
            None => None,
            Some(b) => Some(parse_id(b)?),
        };
        let filter = DeliveryFilter {
            account: query.get("account").map(str::to_string),
            kind: query.get("kind").map(str::to_string),
            topic: query.get("topic").map(str::to_string),
            since,
            before,
            limit: limit(query)?,
        };
        json(
            self.store
                .read(move |c| admin::list_deliveries(c, &filter))
                .await,
        )
    }

    async fn redeliver(&self, id: &str) -> Result<Response<Body>, Response<Body>> {
        if !self.delivers_events {
            return Err(response::error(
                StatusCode::CONFLICT,
                "no_fulfillment_url",
                "events are only stored: set [fulfillment] url to deliver them",
            ));
        }
        let (id, now) = (id.to_string(), self.now());
        let target = id.clone();
        match self
            .store
            .write(move |c| admin::redeliver_event(c, &target, now))
            .await
        {
            Ok(true) => {
                self.store.wake_outbox();
                json(Ok(serde_json::json!({"redelivering": id})))
            }
            Ok(false) => Err(response::error(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!("no event {id}"),
            )),
            Err(e) => Err(storage_error(e)),
        }
    }

    async fn status_page(&self) -> Result<Response<Body>, Response<Body>> {
        let storage_ok = self.store.check_writable().await.map_err(|e| e.to_string());
        let now = self.now();
        let mut page = self
            .store
            .read(move |c| super::status_page::load(c, now))
            .await
            .map_err(storage_error)?;
        page.storage_ok = storage_ok;
        let html =
            super::status_page::render(&page, &super::status_page::csrf_token(self.token.expose()));
        let mut res = response::json(StatusCode::OK, html);
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/html; charset=utf-8"),
        );
        Ok(res)
    }

    /// `Bearer <token>`, or Basic with the token as the password.
    fn authorized(&self, req: &Request<Incoming>) -> bool {
        let Some(value) = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        let given = if let Some(token) = value.strip_prefix("Bearer ") {
            token.as_bytes().to_vec()
        } else if let Some(b64) = value.strip_prefix("Basic ") {
            use base64::Engine;
            let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(b64.trim()) else {
                return false;
            };
            match decoded.iter().position(|b| *b == b':') {
                Some(i) => decoded[i + 1..].to_vec(),
                None => return false,
            }
        } else {
            return false;
        };
        constant_time_eq(&given, self.token.expose().as_bytes())
    }

    fn now(&self) -> i64 {
        store::unix_ms(self.clock.now())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn json<T: Serialize>(result: Result<T, StoreError>) -> Result<Response<Body>, Response<Body>> {
    match result {
        Ok(v) => Ok(response::json(
            StatusCode::OK,
            serde_json::to_string(&v).unwrap_or_else(|_| "null".into()),
        )),
        Err(e) => Err(storage_error(e)),
    }
}

fn found<T: Serialize>(
    result: Result<Option<T>, StoreError>,
    what: &str,
) -> Result<Response<Body>, Response<Body>> {
    match result {
        Ok(Some(v)) => json(Ok(v)),
        Ok(None) => Err(response::error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no such {what}"),
        )),
        Err(e) => Err(storage_error(e)),
    }
}

fn storage_error(e: StoreError) -> Response<Body> {
    tracing::error!(error = %e, "admin request failed");
    response::error(
        StatusCode::SERVICE_UNAVAILABLE,
        "storage_unavailable",
        &e.to_string(),
    )
}

fn bad_request(message: &str) -> Response<Body> {
    response::error(StatusCode::BAD_REQUEST, "bad_request", message)
}

fn parse_id(s: &str) -> Result<i64, Response<Body>> {
    s.parse()
        .map_err(|_| bad_request(&format!("{s:?} is not a number")))
}

fn limit(query: &Query) -> Result<usize, Response<Body>> {
    match query.get("limit") {
        None => Ok(admin::DEFAULT_LIMIT),
        Some(l) => l
            .parse()
            .ok()
            .filter(|n| (1..=admin::MAX_LIMIT).contains(n))
            .ok_or_else(|| bad_request(&format!("limit must be 1 to {}", admin::MAX_LIMIT))),
    }
}

/// RFC 3339, or unix seconds.
fn parse_time(s: &str) -> Result<i64, Response<Body>> {
    if let Ok(secs) = s.parse::<i64>() {
        return Ok(secs * 1000);
    }
    humantime::parse_rfc3339_weak(s)
        .map(store::unix_ms)
        .map_err(|_| {
            bad_request(&format!(
                "since must be RFC 3339 or unix seconds, not {s:?}"
            ))
        })
}
