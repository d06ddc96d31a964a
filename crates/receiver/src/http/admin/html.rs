//! What every console page and error shares: rendering a template with the
//! console's strict headers, and errors as a page a person reads (the
//! API's errors stay JSON). Below the console and the session, so neither
//! reaches into the other for them.

use askama::Template;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use super::AdminError;
use crate::store::StoreError;

/// A page, with the console's headers.
pub fn render(page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => {
            protected(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response())
        }
        Err(e) => {
            tracing::error!(error = %e, "a console page did not render");
            HtmlError::status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
            .into_response()
        }
    }
}

/// Never framed (clickjacking), never cached, no script from anywhere.
pub fn protected(mut res: Response) -> Response {
    let headers = res.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    res
}

#[derive(Template)]
#[template(path = "console/problem.html")]
struct ProblemPage<'a> {
    status: u16,
    message: &'a str,
}

/// An error, as a page a person reads (the API's errors stay JSON).
#[derive(Debug)]
pub struct HtmlError {
    status: StatusCode,
    message: String,
}

impl HtmlError {
    pub fn status(status: StatusCode, message: &str) -> HtmlError {
        HtmlError {
            status,
            message: message.to_string(),
        }
    }

    pub fn not_found(what: &str) -> HtmlError {
        HtmlError::status(StatusCode::NOT_FOUND, &format!("no such {what}"))
    }

    pub fn bad(message: &str) -> HtmlError {
        HtmlError::status(StatusCode::BAD_REQUEST, message)
    }

    /// A form without the session's token.
    pub fn stale() -> HtmlError {
        HtmlError::status(
            StatusCode::FORBIDDEN,
            "the form is stale or was not sent from this console: reload the page",
        )
    }
}

impl From<StoreError> for HtmlError {
    fn from(e: StoreError) -> HtmlError {
        AdminError::from(e).into()
    }
}

impl From<AdminError> for HtmlError {
    fn from(e: AdminError) -> HtmlError {
        let status = e.into_response().status();
        let message = match status {
            StatusCode::SERVICE_UNAVAILABLE => "storage is unavailable: try again shortly".into(),
            _ => "the request was refused".to_string(),
        };
        HtmlError { status, message }
    }
}

impl IntoResponse for HtmlError {
    fn into_response(self) -> Response {
        let page = ProblemPage {
            status: self.status.as_u16(),
            message: &self.message,
        };
        let mut res = match page.render() {
            Ok(html) => {
                ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
            }
            Err(_) => self.message.into_response(),
        };
        *res.status_mut() = self.status;
        protected(res)
    }
}

/// A number from a path.
pub fn number(text: &str) -> Result<i64, HtmlError> {
    text.parse()
        .map_err(|_| HtmlError::bad(&format!("{text:?} is not a number")))
}
