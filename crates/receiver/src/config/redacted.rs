//! URLs as pointhook shows them (check-config, errors, logs): credentials
//! in the user part and the whole query are masked, since either can hold
//! a secret.

use serde::Serializer;
use url::Url;

/// `url` with its user, password and query masked.
pub fn text(url: &Url) -> String {
    let mut shown = url.clone();
    if !shown.username().is_empty() {
        let _ = shown.set_username("***");
    }
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    if shown.query().is_some() {
        shown.set_query(Some("***"));
    }
    shown.to_string()
}

pub fn url<S: Serializer>(url: &Url, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text(url))
}

pub fn optional_url<S: Serializer>(url: &Option<Url>, s: S) -> Result<S::Ok, S::Error> {
    match url {
        Some(u) => s.serialize_str(&text(u)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_and_queries_are_masked() {
        let u = url::Url::parse("https://user:pa55@api.example/v1?token=abc").unwrap();
        assert_eq!(super::text(&u), "https://***:***@api.example/v1?***");
        let u = url::Url::parse("http://127.0.0.1:9000/events").unwrap();
        assert_eq!(super::text(&u), "http://127.0.0.1:9000/events");
    }
}
