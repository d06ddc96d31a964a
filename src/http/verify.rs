//! The `x-signature` check of webhooks (DESIGN section 2).
//!
//! `x-signature: ts=…,v1=…` is a hex HMAC-SHA256, with the account's
//! `webhook_secret`, of the manifest `id:{data.id};request-id:{x-request-id};ts:{ts};`
//! where a part whose value is absent is left out. `data.id` is taken from
//! the query as received; the lowercased form is accepted too, because the
//! platform's docs and SDKs have disagreed on it. Any header value, however
//! odd, is a clean rejection.

use std::time::{Duration, SystemTime};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// How far `ts` may be from our clock.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// What a signed request carries, straight from its query and headers.
#[derive(Debug, Clone, Copy)]
pub struct SignedParts<'a> {
    /// `data.id` from the query, exactly as received.
    pub data_id: Option<&'a str>,
    pub request_id: Option<&'a [u8]>,
    pub signature: Option<&'a [u8]>,
}

/// Which form of `data.id` the signature was made over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdForm {
    AsReceived,
    Lowercased,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("x-signature header is missing")]
    Missing,
    #[error("x-signature header is malformed: {0}")]
    Malformed(&'static str),
    #[error("x-request-id header is not printable ASCII")]
    BadRequestId,
    #[error("x-signature ts is outside the {0}-second tolerance")]
    Stale(u64),
    #[error("x-signature does not match")]
    Mismatch,
}

/// Checks `parts` against `secret` at time `now`.
pub fn verify(
    secret: &[u8],
    parts: SignedParts<'_>,
    now: SystemTime,
    tolerance: Duration,
) -> Result<IdForm, SignatureError> {
    let header = parts.signature.ok_or(SignatureError::Missing)?;
    let header = std::str::from_utf8(header)
        .ok()
        .filter(|h| h.is_ascii())
        .ok_or(SignatureError::Malformed("not ASCII"))?;
    let (ts_raw, v1) = parse_header(header)?;

    let ts: u64 = ts_raw
        .parse()
        .map_err(|_| SignatureError::Malformed("ts is not a number"))?;
    // Values of 10^12 and over are milliseconds.
    let ts_secs = if ts >= 1_000_000_000_000 {
        ts / 1000
    } else {
        ts
    };
    let now_secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if now_secs.abs_diff(ts_secs) > tolerance.as_secs() {
        return Err(SignatureError::Stale(tolerance.as_secs()));
    }

    let request_id = match parts.request_id {
        None | Some(b"") => None,
        Some(r) => Some(
            std::str::from_utf8(r)
                .ok()
                .filter(|r| r.bytes().all(|b| b.is_ascii_graphic()))
                .ok_or(SignatureError::BadRequestId)?,
        ),
    };

    let matches = |id: Option<&str>| {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any size");
        if let Some(id) = id {
            mac.update(b"id:");
            mac.update(id.as_bytes());
            mac.update(b";");
        }
        if let Some(r) = request_id {
            mac.update(b"request-id:");
            mac.update(r.as_bytes());
            mac.update(b";");
        }
        mac.update(b"ts:");
        mac.update(ts_raw.as_bytes());
        mac.update(b";");
        // Constant-time comparison.
        mac.verify_slice(&v1).is_ok()
    };

    if matches(parts.data_id) {
        return Ok(IdForm::AsReceived);
    }
    if let Some(id) = parts.data_id {
        let lower = id.to_ascii_lowercase();
        if lower != id && matches(Some(&lower)) {
            return Ok(IdForm::Lowercased);
        }
    }
    Err(SignatureError::Mismatch)
}

/// `ts=…,v1=…`, in any order, with optional spaces.
fn parse_header(header: &str) -> Result<(&str, Vec<u8>), SignatureError> {
    let mut ts = None;
    let mut v1 = None;
    for part in header.split(',') {
        let Some((key, value)) = part.trim().split_once('=') else {
            return Err(SignatureError::Malformed("expected ts=…,v1=…"));
        };
        match key.trim() {
            "ts" => ts = Some(value.trim()),
            "v1" => v1 = Some(value.trim()),
            _ => {}
        }
    }
    let ts = ts
        .filter(|t| !t.is_empty())
        .ok_or(SignatureError::Malformed("no ts"))?;
    let v1 = v1
        .filter(|v| !v.is_empty())
        .ok_or(SignatureError::Malformed("no v1"))?;
    let v1 = hex::decode(v1).map_err(|_| SignatureError::Malformed("v1 is not hex"))?;
    if v1.len() != 32 {
        return Err(SignatureError::Malformed("v1 is not 32 bytes"));
    }
    Ok((ts, v1))
}

/// Signs a manifest the way the platform does: for the sandbox and
/// `pointhook notify`, and for tests.
pub fn sign(secret: &[u8], data_id: Option<&str>, request_id: Option<&str>, ts: u64) -> String {
    let mut manifest = String::new();
    if let Some(id) = data_id {
        manifest.push_str(&format!("id:{id};"));
    }
    if let Some(r) = request_id.filter(|r| !r.is_empty()) {
        manifest.push_str(&format!("request-id:{r};"));
    }
    manifest.push_str(&format!("ts:{ts};"));
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any size");
    mac.update(manifest.as_bytes());
    format!("ts={ts},v1={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn every_vector_gives_its_expected_answer() {
        let text = include_str!("../../fixtures/signatures.json");
        let doc: Value = serde_json::from_str(text).unwrap();
        let secret = doc["secret"].as_str().unwrap().as_bytes();
        let tolerance = Duration::from_secs(doc["tolerance_seconds"].as_u64().unwrap());
        let vectors = doc["vectors"].as_array().unwrap();
        assert!(vectors.len() >= 15);
        for v in vectors {
            let name = v["name"].as_str().unwrap();
            let parts = SignedParts {
                data_id: v["query_data_id"].as_str(),
                request_id: v["x_request_id"].as_str().map(str::as_bytes),
                signature: v["x_signature"].as_str().map(str::as_bytes),
            };
            let result = verify(
                secret,
                parts,
                at(v["now_unix"].as_u64().unwrap()),
                tolerance,
            );
            assert_eq!(
                result.is_ok(),
                v["valid"].as_bool().unwrap(),
                "vector {name}: {result:?}"
            );
            if name == "alnum_id_lowercased" {
                assert_eq!(result, Ok(IdForm::Lowercased));
            }
            if name == "basic" {
                assert_eq!(result, Ok(IdForm::AsReceived));
            }
            if name == "stale_ts" {
                assert_eq!(result, Err(SignatureError::Stale(300)));
            }
        }
    }

    #[test]
    fn sign_matches_the_vectors() {
        let secret = b"your_secret_key_here_0123456789abcdef";
        assert_eq!(
            sign(
                secret,
                Some("123456789"),
                Some("bb56a2f1-6aae-46ac-982e-9dcd3581d08e"),
                1763632800
            ),
            "ts=1763632800,v1=9d146eff6073c8ccebbb3d6760c29376104fb89fe85de5ca66a5c81be5630f4a"
        );
    }

    #[test]
    fn odd_header_values_never_panic() {
        let secret = b"k";
        for header in [
            &b""[..],
            b",,,",
            b"=",
            b"ts=,v1=",
            b"ts=99999999999999999999999,v1=00",
            b"\xff\xfe",
            b"ts=1\x00,v1=aa",
            b"v1=zz,ts=1",
        ] {
            let parts = SignedParts {
                data_id: Some("1"),
                request_id: Some(b"\xff"),
                signature: Some(header),
            };
            assert!(verify(secret, parts, at(1), DEFAULT_TOLERANCE).is_err());
        }
        let parts = SignedParts {
            data_id: None,
            request_id: None,
            signature: None,
        };
        assert_eq!(
            verify(secret, parts, at(1), DEFAULT_TOLERANCE),
            Err(SignatureError::Missing)
        );
    }

    #[test]
    fn future_timestamps_beyond_tolerance_are_stale() {
        let secret = b"k";
        let header = sign(secret, Some("1"), None, 1000);
        let parts = SignedParts {
            data_id: Some("1"),
            request_id: None,
            signature: Some(header.as_bytes()),
        };
        assert!(verify(secret, parts, at(1000 - 301), DEFAULT_TOLERANCE).is_err());
        assert!(verify(secret, parts, at(1000 - 299), DEFAULT_TOLERANCE).is_ok());
    }
}
