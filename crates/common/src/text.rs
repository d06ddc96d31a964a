//! Text from outside (a notification's topic, an API's error message, a
//! body) on its way to a log line or a terminal: control characters are
//! shown escaped, never sent as they are, so nobody can move a cursor,
//! recolour a terminal or forge a log line by sending them. "Control" here
//! is wider than `char::is_control` (C0, DEL, C1): it also takes Unicode's
//! bidirectional controls, which make a viewer show text in another order
//! than it was written, and its line and paragraph separators, which some
//! viewers break lines at.

use std::borrow::Cow;
use std::fmt::Write;

/// `s` with every control character escaped (`\u{1b}`): for a log field or
/// a table cell, which must stay on one line.
pub fn printable(s: &str) -> Cow<'_, str> {
    escape(
        s,
        |_| false,
        |c, out| {
            let _ = write!(out, "{}", c.escape_unicode());
        },
    )
}

/// `s` with the control characters escaped, except line feeds and tabs: for
/// text a command prints whole.
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    escape(
        s,
        |c| matches!(c, '\n' | '\t'),
        |c, out| {
            let _ = write!(out, "{}", c.escape_unicode());
        },
    )
}

/// JSON text with the control characters JSON leaves raw (DEL, the C1
/// range, the bidirectional controls and separators) written as `\uXXXX`
/// escapes: still the same JSON.
pub fn json_for_terminal(s: &str) -> Cow<'_, str> {
    escape(
        s,
        |c| matches!(c, '\n' | '\t'),
        |c, out| {
            let _ = write!(out, "\\u{:04x}", c as u32);
        },
    )
}

/// Whether `c` is shown escaped (see the module doc).
fn is_control(c: char) -> bool {
    c.is_control()
        // Unicode's Bidi_Control characters, then the line and paragraph separators.
        || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

fn escape(s: &str, keep: impl Fn(char) -> bool, write: impl Fn(char, &mut String)) -> Cow<'_, str> {
    if !s.chars().any(|c| is_control(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_control(c) && !keep(c) {
            write(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("plain"), "plain");
        assert_eq!(printable("a\x1b[31mb\nc"), "a\\u{1b}[31mb\\u{a}c");
        assert_eq!(printable("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(
            printable("a\u{202e}b\u{2066}c\u{2028}d\u{200b}"),
            "a\\u{202e}b\\u{2066}c\\u{2028}d\u{200b}",
            "bidirectional controls and line separators; not every format character"
        );
        assert_eq!(for_terminal("a\nb\x07\x7f"), "a\nb\\u{7}\\u{7f}");
        let json = serde_json::to_string(&"x\u{9b}\u{7f}\x1b\u{202e}").unwrap();
        let safe = json_for_terminal(&json);
        assert_eq!(safe, "\"x\\u009b\\u007f\\u001b\\u202e\"");
        assert_eq!(
            serde_json::from_str::<String>(&safe).unwrap(),
            "x\u{9b}\u{7f}\x1b\u{202e}"
        );
    }
}
