//! What of a request is kept with its delivery, and the bounds that keep one
//! request's cost small whatever it sends: the query and
//! each kept header have a cap (past it the request is refused: nothing the
//! platform sends comes near), a body nothing reads again is kept only up to
//! a prefix with its full length and SHA-256, and the texts taken from a
//! body are kept up to a prefix. With the body limit (`max_body_bytes`) the
//! request itself is bound by, one request stores at most that limit plus
//! about 7 KiB.

use bytes::Bytes;
use http::HeaderMap;
use sha2::{Digest, Sha256};

use super::classify::Classified;
use crate::domain::Kind;

/// The headers kept with each delivery.
const KEPT_HEADERS: &[&str] = &[
    "content-type",
    "user-agent",
    "x-request-id",
    "x-signature",
    "x-retry",
    "x-forwarded-for",
];

/// The longest query kept (414 beyond): the platform's own parameters
/// (`topic`, `id`, `type`, `data.id`, `source_news`, an account name) take
/// about a hundred bytes.
pub const QUERY_CAP: usize = 1024;
/// The longest value of one kept header (431 beyond): a signature is about
/// 90 bytes, a forwarding chain of twenty addresses fits.
pub const HEADER_CAP: usize = 1024;
/// The most the kept headers take together as stored (JSON, escaped), 431
/// beyond: only a hostile request full of quotes or bytes that are not
/// UTF-8 comes near it.
pub const HEADERS_CAP: usize = 2048;
/// The most of a body kept when nothing reads it again: enough to see what
/// it was. Its full length and SHA-256 are kept beside it.
pub const UNREAD_BODY_CAP: usize = 4096;
/// The most kept of a text taken from the request (a topic nobody handles,
/// a webhook's own id, `source_news`).
pub const TEXT_CAP: usize = 128;

/// What is too large to keep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    #[error("the query is longer than {QUERY_CAP} bytes")]
    Query,
    #[error("header {0} is longer than {HEADER_CAP} bytes")]
    Header(&'static str),
    #[error("the headers pointhook keeps take more than {HEADERS_CAP} bytes")]
    Headers,
}

/// The query, if it is short enough to keep.
pub fn query(raw: &str) -> Result<&str, TooLarge> {
    if raw.len() > QUERY_CAP {
        return Err(TooLarge::Query);
    }
    Ok(raw)
}

/// The kept headers as a JSON object, sorted by name, lossy where a value
/// is not UTF-8; refused when one is too long.
pub fn kept_headers(headers: &HeaderMap) -> Result<String, TooLarge> {
    // Borrowed and written straight out: building a JSON value first and
    // printing it through `Display` cost 4 % of the runtime threads' time
    // on the ack path. Sorted by name, as before.
    let mut kept = std::collections::BTreeMap::new();
    for name in KEPT_HEADERS {
        let Some(value) = headers.get(*name) else {
            continue;
        };
        if value.len() > HEADER_CAP {
            return Err(TooLarge::Header(name));
        }
        kept.insert(*name, String::from_utf8_lossy(value.as_bytes()));
    }
    let json = serde_json::to_string(&kept).unwrap_or_else(|_| "{}".into());
    if json.len() > HEADERS_CAP {
        return Err(TooLarge::Headers);
    }
    Ok(json)
}

/// A body as kept, and when it was cut short, its full length and hash.
pub struct KeptBody {
    pub bytes: Bytes,
    pub cut: Option<(usize, [u8; 32])>,
}

/// The body to keep. Only fraud alerts and payment-intent bodies are read
/// for what they say (a person reads an alert's text; an intent body is
/// the notification), so they are kept whole; any other body, acted on or
/// not, only named what the query or its own fields already told, and is
/// kept up to `UNREAD_BODY_CAP`.
pub fn body(classified: &Classified, body: Bytes) -> KeptBody {
    let read = classified.is_fraud_alert() || classified.kind == Kind::IntentWebhook;
    if read || body.len() <= UNREAD_BODY_CAP {
        return KeptBody {
            bytes: body,
            cut: None,
        };
    }
    KeptBody {
        cut: Some((body.len(), Sha256::digest(&body).into())),
        bytes: body.slice(..UNREAD_BODY_CAP),
    }
}

/// `text` up to `TEXT_CAP` bytes, cut at a character boundary.
pub fn text(text: &str) -> String {
    let mut end = text.len().min(TEXT_CAP);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    use super::*;

    #[test]
    fn kept_headers_are_the_listed_ones_sorted_escaped_and_lossy() {
        let mut headers = HeaderMap::new();
        headers.insert("x-request-id", HeaderValue::from_static("r\"1\\"));
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert("authorization", HeaderValue::from_static("Bearer secret"));
        headers.insert(
            "user-agent",
            HeaderValue::from_bytes(b"feed \xff\tv").unwrap(),
        );
        assert_eq!(
            kept_headers(&headers).unwrap(),
            r#"{"content-type":"application/json","user-agent":"feed �\tv","x-request-id":"r\"1\\"}"#
        );
        assert_eq!(kept_headers(&HeaderMap::new()).unwrap(), "{}");
    }

    #[test]
    fn a_long_header_or_headers_that_grow_when_stored_are_refused() {
        let mut headers = HeaderMap::new();
        let long = "a".repeat(HEADER_CAP + 1);
        headers.insert("authorization", HeaderValue::from_str(&long).unwrap());
        assert!(kept_headers(&headers).is_ok(), "not a kept header");
        headers.insert("user-agent", HeaderValue::from_str(&long).unwrap());
        assert_eq!(kept_headers(&headers), Err(TooLarge::Header("user-agent")));
        let mut headers = HeaderMap::new();
        let bytes = vec![0xff; HEADER_CAP];
        headers.insert("user-agent", HeaderValue::from_bytes(&bytes).unwrap());
        assert_eq!(kept_headers(&headers), Err(TooLarge::Headers));
    }

    #[test]
    fn texts_are_cut_at_a_character_boundary() {
        assert_eq!(text("short"), "short");
        let long = "é".repeat(TEXT_CAP);
        let cut = text(&long);
        assert!(cut.len() <= TEXT_CAP && long.starts_with(&cut), "{cut}");
        assert_eq!(cut.chars().count(), TEXT_CAP / 2);
    }
}
