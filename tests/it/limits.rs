//! What one request may cost is bounded, whatever it sends:
//! what it stores, what its connection buffers; and what is stored is
//! its owner's only.

use serde_json::json;

use crate::helpers::*;

on_both_backends!(one_request_stores_at_most_72_kib_whatever_its_headers_and_query);

/// The most one request may store with the default `max_body_bytes` (64
/// KiB): the body, and at most 8 KiB for everything else.
const MOST_STORED: i64 = 72 * 1024;

/// The bytes a delivery and its job hold (every column; 8 bytes a number).
fn stored(app: &TestApp, delivery_id: i64) -> i64 {
    let delivery = app
        .sql
        .value(
            "SELECT octet_length(account) + octet_length(topic) + octet_length(resource_id)
                  + coalesce(octet_length(notification_id), 0)
                  + coalesce(octet_length(source_news), 0) + octet_length(query)
                  + octet_length(headers) + coalesce(octet_length(body), 0)
                  + octet_length(remote_addr) + octet_length(fingerprint)
                  + coalesce(octet_length(job_key), 0) + coalesce(octet_length(signature_key), 0)
                  + coalesce(octet_length(body_sha256), 0) + 6 * 8
             FROM deliveries WHERE id = $1",
            &[SqlValue::Int(delivery_id)],
        )
        .int();
    let job = app
        .sql
        .rows(
            "SELECT octet_length(j.account) + octet_length(j.job_key) + octet_length(j.resource_id)
                  + coalesce(octet_length(j.work), 0) + 10 * 8
             FROM jobs j JOIN deliveries d ON d.account = j.account AND d.job_key = j.job_key
             WHERE d.id = $1",
            &[SqlValue::Int(delivery_id)],
        )
        .first()
        .map_or(0, |r| r[0].int());
    delivery + job
}

/// The kept headers at their largest that are still kept: each under its
/// cap, together under theirs, with quotes that grow when escaped; and as
/// many other headers as a connection buffers, which are not kept.
fn big_headers() -> Vec<(String, String)> {
    let mut headers = vec![
        ("x-forwarded-for".to_string(), "\"".repeat(480)),
        ("user-agent".to_string(), "u".repeat(800)),
        ("x-signature".to_string(), "s".repeat(60)),
        ("x-request-id".to_string(), "r".repeat(60)),
        ("content-type".to_string(), "application/json".to_string()),
    ];
    for i in 0..20 {
        headers.push((format!("x-pad-{i}"), "p".repeat(1000)));
    }
    headers
}

/// A query of exactly the cap, ending in `source_news` padded to fit.
fn big_query(start: &str) -> String {
    let cap = pointhook::http::record::QUERY_CAP;
    let lead = format!("{start}&source_news=");
    format!("{lead}{}", "n".repeat(cap - lead.len()))
}

/// `value` padded with a `pad` field to exactly `size` bytes of JSON.
fn padded(mut value: serde_json::Value, size: usize) -> Vec<u8> {
    value["pad"] = json!("");
    let bare = value.to_string().len();
    value["pad"] = json!("x".repeat(size - bare));
    let bytes = value.to_string().into_bytes();
    assert_eq!(bytes.len(), size);
    bytes
}

/// One request stored 341 KiB before: its headers and query whole. Now a
/// request stores its body (up to `max_body_bytes`, the whole of it only
/// for what is read again) and at most 8 KiB besides; a longer query is
/// 414, a longer kept header 431, a head past the connection's buffer 431,
/// and none of those stores anything.
async fn one_request_stores_at_most_72_kib_whatever_its_headers_and_query() {
    let app = spawn_app().await;
    let max = 65_536;
    // The longest id the platform could send: its largest, zero-padded.
    let ids = format!("{:0>32}", i64::MAX);
    let alert = padded(
        json!({"type": "stop_delivery_op_wh", "id": "i".repeat(2000),
               "data": {"merchant_order": ids, "payment_id": ids,
                        "description": "\u{1}".repeat(600)}}),
        max,
    );
    let requests = [
        (
            big_query(&format!("type=stop_delivery_op_wh&data.id={ids}")),
            alert,
        ),
        (
            big_query(&format!("topic=payment&id={ids}")),
            padded(json!({"resource": ids}), max),
        ),
        (
            big_query("x=1"),
            padded(
                json!({"type": "t".repeat(20_000), "id": "i".repeat(20_000)}),
                max,
            ),
        ),
        (
            big_query("x=1"),
            padded(json!({"id": "intent-1", "state": "FINISHED"}), max),
        ),
    ];
    let headers = big_headers();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for (query, body) in &requests {
        let (status, answer) = answer(app.post(query, &headers, Some(body)).await).await;
        assert_eq!(status, 200, "{answer}");
        let id = answer["delivery_id"].as_i64().unwrap();
        let size = stored(&app, id);
        assert!(size <= MOST_STORED, "{} stored {size} bytes", &query[..30]);
    }
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 4);

    // Past a cap: refused, and nothing is stored.
    let long_query = format!("{}n", big_query("topic=payment&id=1"));
    let res = app.post(&long_query, &[], None).await;
    assert_eq!(res.status(), 414);
    let long = "a".repeat(pointhook::http::record::HEADER_CAP + 1);
    let res = app
        .post("topic=payment&id=1", &[("user-agent", long.as_str())], None)
        .await;
    assert_eq!(res.status(), 431);
    let quotes = "\"".repeat(1000);
    let res = app
        .post(
            "topic=payment&id=1",
            &[
                ("user-agent", quotes.as_str()),
                ("x-forwarded-for", quotes.as_str()),
            ],
            None,
        )
        .await;
    assert_eq!(res.status(), 431);
    let mut head =
        b"POST /notifications?topic=payment&id=1 HTTP/1.1\r\nhost: x\r\nx-pad: ".to_vec();
    head.extend(std::iter::repeat_n(b'p', 100 * 1024));
    head.extend_from_slice(b"\r\n\r\n");
    let response = raw_exchange(app.addr, &head).await;
    assert!(response.starts_with("HTTP/1.1 431"), "{response:?}");
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 4);
    app.stop().await;
}

/// A connection buffers at most a few tens of KiB: headers that never end
/// are answered 431 once they pass it, rather than held (1,024 such
/// connections of 380 KB each took the process from 29 MB to 595 MB).
#[tokio::test]
async fn unfinished_headers_past_the_connection_buffer_are_431() {
    let app = spawn_app().await;
    let mut head =
        b"POST /notifications?topic=payment&id=1 HTTP/1.1\r\nhost: x\r\nx-pad: ".to_vec();
    head.extend(std::iter::repeat_n(
        b'p',
        pointhook_common::serve::CONNECTION_BUFFER,
    ));
    // No end of line, no end of headers: the client means to go on.
    let response = raw_exchange(app.addr, &head).await;
    assert!(response.starts_with("HTTP/1.1 431"), "{response:?}");
    app.stop().await;
}

/// The database holds every body and header received: it and its `-wal`,
/// `-shm` and lock files are created readable by their owner only, whatever
/// the umask.
#[tokio::test]
async fn the_database_and_its_files_are_created_0600() {
    use std::os::unix::fs::PermissionsExt;
    let app = spawn_app().await;
    assert_eq!(
        app.post("topic=payment&id=1", &[], None).await.status(),
        200
    );
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let mut path = app.db_path.clone().into_os_string();
        path.push(suffix);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}: {mode:o}", path.to_string_lossy());
    }
    app.stop().await;
}
