//! JSON as the platform writes it. Its own docs print bodies that strict
//! JSON refuses: a payment-intent body with `"caller_id": 09876543`, a
//! chargeback body with a trailing comma, a delivery body with unquoted
//! keys. When the strict parse fails, the text is relaxed and read again:
//! a number with a leading zero becomes the string of its digits (it is an
//! id, and the zero is part of it), a bare key is quoted, a trailing comma
//! is dropped. The exact bytes are stored anyway: this only decides what a
//! body names.

use serde_json::Value;

/// Parses `bytes` as JSON, relaxed as the module says when strict fails.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(strict) => match relax(bytes) {
            Some(relaxed) => serde_json::from_slice(&relaxed).map_err(|_| strict),
            None => Err(strict),
        },
    }
}

/// `bytes` with leading-zero numbers quoted, bare keys quoted and trailing
/// commas dropped; `None` when nothing changed.
fn relax(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                let end = string_end(bytes, i);
                out.extend_from_slice(&bytes[i..end]);
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                let token = &bytes[start..i];
                let digits = token.strip_prefix(b"-").unwrap_or(token);
                if digits.len() > 1 && digits[0] == b'0' && digits[1].is_ascii_digit() {
                    quote(&mut out, token);
                    changed = true;
                } else {
                    out.extend_from_slice(token);
                }
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'_' | b'$' => {
                let start = i;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'$'))
                {
                    i += 1;
                }
                let word = &bytes[start..i];
                if next_significant(bytes, i) == Some(b':') {
                    quote(&mut out, word);
                    changed = true;
                } else {
                    out.extend_from_slice(word);
                }
            }
            b',' if matches!(next_significant(bytes, i + 1), Some(b']' | b'}')) => {
                changed = true;
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    changed.then_some(out)
}

/// The index just past the string that starts at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn next_significant(bytes: &[u8], from: usize) -> Option<u8> {
    bytes
        .get(from..)?
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

fn quote(out: &mut Vec<u8>, token: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(token);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_zeros_become_strings() {
        let v = parse(br#"{"caller_id": 09876543, "amount": 1500, "s": "09 \" 01"}"#).unwrap();
        assert_eq!(v["caller_id"], "09876543");
        assert_eq!(v["amount"], 1500);
        assert_eq!(v["s"], "09 \" 01");
        let v = parse(b"[-007, 0, 0.5, 10]").unwrap();
        assert_eq!(v[0], "-007");
        assert_eq!(v[1], 0);
    }

    #[test]
    fn bare_keys_and_trailing_commas_are_read() {
        let v =
            parse(b"{ _id: \"x\", topic: \"delivery\", actions: [1, 2, ], ok: true, n: null, }")
                .unwrap();
        assert_eq!(v["_id"], "x");
        assert_eq!(v["topic"], "delivery");
        assert_eq!(v["actions"][1], 2);
        assert_eq!(v["ok"], true);
        assert!(v["n"].is_null());
    }

    #[test]
    fn other_errors_stay_errors() {
        assert!(parse(b"{\"a\": 01,").is_err());
        assert!(parse(b"not json").is_err());
        assert!(parse(b"{'a': 1}").is_err());
        assert!(parse(b"\"unterminated").is_err());
    }
}
