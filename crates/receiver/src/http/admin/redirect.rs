//! Where a page sends the browser next (`next` after sign-in, `back` after
//! an action): every such target goes through [`local`], so none can lead
//! off this listener. A target is joined to a fixed base and kept only when
//! it stays on that base's origin; anything with a control character, a
//! backslash, or that would read as another host to some browser
//! (`//host`, `/\t/host`, an absolute URL) gives the page's own default.

use axum::response::{IntoResponse, Redirect, Response};

use super::html::protected;

/// The origin targets are resolved against; never shown.
const BASE: &str = "http://console.invalid/";

/// `target` as a path (and query) of this listener, or `default`.
/// `default` is one of the console's own paths.
pub fn local(target: Option<&str>, default: &str) -> String {
    target
        .and_then(resolve)
        .unwrap_or_else(|| default.to_string())
}

/// A redirect to `to` (303: the next request is a GET), not cached; `to`
/// comes from [`local`] or the console's own paths.
pub fn see_other(to: &str) -> Response {
    let to = resolve(to).unwrap_or_else(|| "/".to_string());
    protected(Redirect::to(&to).into_response())
}

fn resolve(target: &str) -> Option<String> {
    // Browsers drop tabs and line breaks from URLs and read `\` as `/`:
    // `/\t/evil.example` is `//evil.example` to them. Such a target is
    // refused whole rather than cleaned.
    if !target.starts_with('/')
        || target.starts_with("//")
        || target
            .chars()
            .any(|c| c.is_control() || c == '\\' || c.is_whitespace())
    {
        return None;
    }
    let base = url::Url::parse(BASE).ok()?;
    let joined = base.join(target).ok()?;
    if joined.origin() != base.origin() {
        return None;
    }
    let mut out = joined.path().to_string();
    if let Some(q) = joined.query() {
        out.push('?');
        out.push_str(q);
    }
    // What `url` wrote is percent-encoded ASCII; checked again all the same.
    (out.starts_with('/') && !out.starts_with("//") && out.bytes().all(|b| b.is_ascii_graphic()))
        .then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_of_this_listener_are_followed() {
        assert_eq!(local(Some("/jobs?state=dead"), "/"), "/jobs?state=dead");
        assert_eq!(local(Some("/orders/o%201"), "/"), "/orders/o%201");
        assert_eq!(local(Some("/a/../b"), "/"), "/b");
        assert_eq!(local(Some("/é"), "/"), "/%C3%A9");
        for bad in [
            "//evil.example/",
            "https://evil.example/",
            "/\\evil",
            "/\t/evil.example/",
            "/\r\nSet-Cookie: x=1",
            "/\n/evil.example",
            "\\\\evil.example",
            "/ /evil.example",
            "http:/evil.example",
            "javascript:alert(1)",
            "",
            "jobs",
            "/\u{85}x",
        ] {
            assert_eq!(local(Some(bad), "/x"), "/x", "{bad:?}");
        }
        assert_eq!(local(None, "/x"), "/x");
    }
}
