//! Input: `QUERY "\n" BODY` (no newline: the whole input is the query and
//! the body is empty). Classification must never panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pointhook::http::classify::{Query, classify};

fuzz_target!(|data: &[u8]| {
    let (query, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    // A request's query reaches the handler as text (hyper gives a &str).
    let query = String::from_utf8_lossy(query);
    let q = Query::parse(&query);
    let _ = q.account();
    for name in ["topic", "id", "type", "data.id"] {
        let _ = q.get(name);
    }
    match classify(&q, body) {
        Ok(mut c) => {
            let _ = format!("{c:?}");
            if let Some(id) = q.get("data.id") {
                c.authenticate(id);
            }
            let _ = c.is_fraud_alert();
        }
        Err(e) => {
            let _ = e.code();
            let _ = e.to_string();
        }
    }
});
