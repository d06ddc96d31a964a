//! `GET /healthz` (the process answers) and `GET /readyz` (storage takes
//! durable writes: no commit is failing, and a write went through in the
//! last second). Neither says more than that, but for a full disk, said in
//! those words; any other cause is in the log.

use http::{Response, StatusCode};

use crate::store::Store;
use pointhook_common::response::{self, Body};

pub fn alive() -> Response<Body> {
    response::json(StatusCode::OK, r#"{"status":"ok"}"#)
}

pub async fn ready(store: &Store) -> Response<Body> {
    if store.ready().await {
        response::json(StatusCode::OK, r#"{"status":"ready"}"#)
    } else if store.disk_full() {
        response::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "disk_full",
            "disk full: storage is not taking writes until space is freed",
        )
    } else {
        response::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            "storage is not taking writes",
        )
    }
}
