//! Standard Webhooks signatures: `v1,` and the base64 HMAC-SHA256 of
//! `{id}.{timestamp}.{body}`, once per key, space-separated, so a receiver
//! holding any one of a destination's secrets (rotation) verifies.
//! <https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md>

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::config::SigningKey;

/// The `webhook-signature` header: one `v1,…` per key.
pub fn signatures(keys: &[SigningKey], id: &str, timestamp: i64, body: &str) -> String {
    keys.iter()
        .map(|k| sign(k.bytes(), id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any size");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verify(secret: &str, id: &str, ts: i64, signature: &str, body: &str) -> bool {
        let wh = standardwebhooks::Webhook::new(secret).unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", id.parse().unwrap());
        headers.insert("webhook-timestamp", ts.to_string().parse().unwrap());
        headers.insert("webhook-signature", signature.parse().unwrap());
        wh.verify(body.as_bytes(), &headers).is_ok()
    }

    #[test]
    fn every_secret_of_a_rotation_verifies_with_the_official_crate() {
        let old = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let new = SigningKey::generate();
        let keys = [
            SigningKey::parse(old).unwrap(),
            SigningKey::parse(&new).unwrap(),
        ];
        let body = r#"{"id":"evt_1","type":"order.released"}"#;
        let ts = pointhook_common::clock::unix_ms_now() / 1000;
        let header = signatures(&keys, "evt_1", ts, body);
        assert_eq!(header.split(' ').count(), 2, "{header}");
        assert!(header.split(' ').all(|s| s.starts_with("v1,")));
        assert!(verify(old, "evt_1", ts, &header, body));
        assert!(verify(&new, "evt_1", ts, &header, body));
        let other = SigningKey::generate();
        assert!(!verify(&other, "evt_1", ts, &header, body));
        assert!(!verify(old, "evt_2", ts, &header, body), "bound to the id");
    }
}
