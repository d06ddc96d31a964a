//! `GET /healthz` (the process answers) and `GET /readyz` (storage takes a
//! durable write now).

use std::time::Duration;

use http::{Response, StatusCode};

use super::response::{self, Body};
use crate::store::Store;

const READY_TIMEOUT: Duration = Duration::from_secs(2);

pub fn alive() -> Response<Body> {
    response::json(StatusCode::OK, r#"{"status":"ok"}"#)
}

pub async fn ready(store: &Store) -> Response<Body> {
    match tokio::time::timeout(READY_TIMEOUT, store.check_writable()).await {
        Ok(Ok(())) => response::json(StatusCode::OK, r#"{"status":"ready"}"#),
        Ok(Err(e)) => response::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            &e.to_string(),
        ),
        Err(_) => response::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            "storage did not answer within 2 seconds",
        ),
    }
}
