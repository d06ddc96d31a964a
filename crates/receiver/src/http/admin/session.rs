//! Signing in to the console: `GET /login`, `POST /login` (a form: name,
//! password), `POST /logout`, and the check every console route passes
//! through. A session is a random token in a cookie (HttpOnly,
//! SameSite=Strict, Secure when the console is reached over https; the
//! `cookie` crate writes it), kept in the store as its SHA-256 with the
//! session's own CSRF token, and ends after `[admin] session_idle_secs`
//! unused. The login form carries a token of its own, matched against a
//! cookie it set (no session exists yet to hold one).

use std::net::{IpAddr, Ipv4Addr};

use askama::Template;
use axum::Form;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use http::{HeaderValue, Method, StatusCode, header};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::door::ClientAddr;
use super::html::{HtmlError, render};
use super::redirect::{local, see_other};
use super::throttle::Refusal;
use super::{Shared, constant_time_eq};
use crate::operators;

pub const SESSION_COOKIE: &str = "pointhook_session";
const LOGIN_COOKIE: &str = "pointhook_login";
/// The most of a typed name the throttle keeps (longer names are no
/// operator's).
const NAME_KEPT: usize = 128;
/// A session's last use is written at most this often.
const TOUCH_EVERY_MS: i64 = 60_000;

/// The signed-in person, for the handlers (a request extension).
#[derive(Debug, Clone)]
pub struct Operator {
    pub name: String,
    pub csrf: String,
}

fn random_token() -> String {
    use rand::RngExt;
    let bytes: [u8; 32] = rand::rng().random();
    hex::encode(bytes)
}

fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn cookie_value(req_headers: &http::HeaderMap, name: &str) -> Option<String> {
    req_headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| Cookie::split_parse(v.to_string()))
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_string())
}

fn set_cookie(
    s: &Shared,
    name: &str,
    value: String,
    path: &str,
    max_age: Option<i64>,
) -> HeaderValue {
    let mut c = Cookie::build((name.to_string(), value))
        .path(path.to_string())
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(s.secure_cookies)
        .build();
    if let Some(secs) = max_age {
        c.set_max_age(cookie::time::Duration::seconds(secs));
    }
    HeaderValue::from_str(&c.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Every console route: a live session, or off to the sign-in page (a
/// read) or refused (a write).
pub async fn require(State(s): State<Shared>, mut req: Request, next: Next) -> Response {
    match current(&s, req.headers()).await {
        Ok(Some(op)) => {
            req.extensions_mut().insert(op);
            next.run(req).await
        }
        Ok(None) if matches!(*req.method(), Method::GET | Method::HEAD) => {
            let here = req
                .uri()
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_string();
            let to = format!(
                "/login?next={}",
                form_urlencoded::byte_serialize(here.as_bytes()).collect::<String>()
            );
            see_other(&to)
        }
        Ok(None) => HtmlError::status(
            StatusCode::UNAUTHORIZED,
            "your session has ended: sign in again",
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn current(s: &Shared, headers: &http::HeaderMap) -> Result<Option<Operator>, HtmlError> {
    let Some(token) = cookie_value(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let hash = digest(&token);
    let Some(session) = s.store.session(hash.clone()).await? else {
        return Ok(None);
    };
    let now = s.now();
    if now - session.seen_at > s.session_idle_ms {
        s.store.close_session(hash).await?;
        return Ok(None);
    }
    if now - session.seen_at > TOUCH_EVERY_MS {
        s.store.touch_session(hash, now).await?;
    }
    Ok(Some(Operator {
        name: session.operator,
        csrf: session.csrf,
    }))
}

/// Whether a form's token is the session's.
pub fn csrf_ok(op: &Operator, given: &str) -> bool {
    constant_time_eq(given.as_bytes(), op.csrf.as_bytes())
}

#[derive(Template)]
#[template(path = "console/login.html")]
struct LoginPage {
    csrf: String,
    next: String,
    problem: Option<&'static str>,
    name: String,
}

#[derive(Deserialize)]
pub struct LoginQuery {
    next: Option<String>,
}

fn login_page(
    s: &Shared,
    status: StatusCode,
    next: String,
    name: String,
    problem: Option<&'static str>,
) -> Response {
    let csrf = random_token();
    let cookie = set_cookie(s, LOGIN_COOKIE, csrf.clone(), "/login", Some(3600));
    let page = LoginPage {
        csrf,
        next,
        problem,
        name,
    };
    let mut res = render(&page);
    *res.status_mut() = status;
    res.headers_mut().append(header::SET_COOKIE, cookie);
    res
}

pub async fn login_form(
    State(s): State<Shared>,
    axum::extract::Query(q): axum::extract::Query<LoginQuery>,
) -> Response {
    login_page(
        &s,
        StatusCode::OK,
        local(q.next.as_deref(), "/"),
        String::new(),
        None,
    )
}

#[derive(Deserialize)]
pub struct LoginForm {
    name: String,
    password: String,
    #[serde(default)]
    csrf: String,
    next: Option<String>,
}

/// `POST /login`: through the throttle (`throttle.rs`), then the password
/// check in its turn.
pub async fn login(
    State(s): State<Shared>,
    client: Option<axum::Extension<ClientAddr>>,
    headers: http::HeaderMap,
    Form(f): Form<LoginForm>,
) -> Result<Response, HtmlError> {
    let next = local(f.next.as_deref(), "/");
    let expected = cookie_value(&headers, LOGIN_COOKIE).unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(f.csrf.as_bytes(), expected.as_bytes()) {
        return Err(HtmlError::status(
            StatusCode::FORBIDDEN,
            "the sign-in form is stale: open it again",
        ));
    }
    let name: String = f.name.trim().chars().take(NAME_KEPT).collect();
    let address = client.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.0.ip());
    let place = match s.sign_ins.admit(&name, address) {
        Ok(place) => place,
        Err(refusal) => {
            s.metrics.sign_in_refused(refusal.reason());
            tracing::info!(operator = %pointhook_common::text::printable(&name), %address, reason = refusal.reason(), "console sign-in refused before its check");
            let mut res = login_page(
                &s,
                StatusCode::TOO_MANY_REQUESTS,
                next,
                name,
                Some(match refusal {
                    Refusal::Name(_) => {
                        "too many wrong passwords for this name from your address: wait and try again"
                    }
                    Refusal::Address | Refusal::Busy => {
                        "too many sign-in attempts: wait a few seconds"
                    }
                }),
            );
            if let Ok(v) = HeaderValue::from_str(&refusal.retry_after().to_string()) {
                res.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return Ok(res);
        }
    };
    let stored = match operators::check_name(&name) {
        Ok(_) => s.store.password_hash(name.clone()).await?,
        Err(_) => None,
    };
    let password = f.password;
    let known = stored.is_some();
    let ok = place
        .check(move || {
            let hash = stored.as_deref().unwrap_or_else(|| operators::decoy());
            operators::verify(&password, hash) && known
        })
        .await
        .unwrap_or(false);
    drop(place);
    if !ok {
        s.sign_ins.failed(&name, address);
        tracing::info!(operator = %pointhook_common::text::printable(&name), %address, "console sign-in refused");
        return Ok(login_page(
            &s,
            StatusCode::UNAUTHORIZED,
            next,
            name,
            Some("that name and password do not match an operator"),
        ));
    }
    s.sign_ins.succeeded(&name, address);
    let now = s.now();
    s.store.close_idle_sessions(now - s.session_idle_ms).await?;
    let token = random_token();
    s.store
        .open_session(digest(&token), name.clone(), random_token(), now)
        .await?;
    tracing::info!(operator = %name, "console sign-in");
    let mut res = see_other(&next);
    res.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&s, SESSION_COOKIE, token, "/", None),
    );
    res.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&s, LOGIN_COOKIE, String::new(), "/login", Some(0)),
    );
    Ok(res)
}

#[derive(Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    pub csrf: String,
}

pub async fn logout(
    State(s): State<Shared>,
    headers: http::HeaderMap,
    axum::Extension(op): axum::Extension<Operator>,
    Form(f): Form<CsrfForm>,
) -> Result<Response, HtmlError> {
    if !csrf_ok(&op, &f.csrf) {
        return Err(HtmlError::stale());
    }
    if let Some(token) = cookie_value(&headers, SESSION_COOKIE) {
        s.store.close_session(digest(&token)).await?;
    }
    let mut res = see_other("/login");
    res.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&s, SESSION_COOKIE, String::new(), "/", Some(0)),
    );
    Ok(res)
}
