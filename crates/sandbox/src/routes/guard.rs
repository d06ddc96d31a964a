//! What keeps a sandbox on a tester's machine to its tester: requests a
//! browser marks as cross-site (an `Origin` not the sandbox's own,
//! `Sec-Fetch-Site: cross-site`) and requests naming a host other than a
//! loopback one (DNS rebinding) are refused before any route runs; the
//! control API, like the resources API, takes an account's Bearer token.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};

use super::Sb;
use super::extract::bearer;
use crate::error::HttpError;

/// Refuses what a browser sends on behalf of another site, and requests
/// for another host; 403 in the shape of the API the path belongs to.
pub(super) async fn same_origin(State(sb): State<Sb>, req: Request, next: Next) -> Response {
    let refusal = refusal(&sb, req.headers());
    let Some(message) = refusal else {
        return next.run(req).await;
    };
    tracing::warn!(reason = %message, "sandbox request refused");
    let control = req.uri().path() == "/sandbox" || req.uri().path().starts_with("/sandbox/");
    let error = if control {
        HttpError::control_code(StatusCode::FORBIDDEN, "forbidden", &message)
    } else {
        HttpError::platform(StatusCode::FORBIDDEN, "forbidden", &message)
    };
    axum::response::IntoResponse::into_response(error)
}

/// Why a request is refused, if it is.
fn refusal(sb: &Sb, headers: &HeaderMap) -> Option<String> {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let host = text(header::HOST);
    if let Some(host) = &host
        && !sb.may_be_called(host)
    {
        return Some(format!(
            "Host \"{}\" is not this sandbox's: call it by a loopback address or localhost",
            pointhook_common::text::printable(host)
        ));
    }
    if text(header::HeaderName::from_static("sec-fetch-site")).as_deref() == Some("cross-site") {
        return Some("cross-site requests are refused".into());
    }
    if let Some(origin) = text(header::ORIGIN) {
        let own = host.map(|h| format!("http://{h}"));
        if Some(origin.to_ascii_lowercase()) != own.map(|o| o.to_ascii_lowercase()) {
            return Some(format!(
                "requests from the page at \"{}\" are refused: only the sandbox's own origin may call it",
                pointhook_common::text::printable(&origin)
            ));
        }
    }
    None
}

/// The control API's account: the one whose Bearer token the call
/// carries; 401 without one.
pub(super) async fn control_account(
    State(sb): State<Sb>,
    mut req: Request,
    next: Next,
) -> Result<Response, HttpError> {
    let account = match bearer(req.headers()) {
        Some(token) => sb.account_of_token(token).await?,
        None => None,
    };
    let Some(account) = account else {
        return Err(HttpError::control_code(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the control API takes an account's access token: Authorization: Bearer TOKEN",
        ));
    };
    req.extensions_mut().insert(account);
    Ok(next.run(req).await)
}
