//! Input, one field per line (a missing line is an absent value):
//!   0: the account's secrets, separated by `|`
//!   1: `data.id` from the query
//!   2: `x-request-id`
//!   3: `x-signature`
//!   4: now, Unix seconds (`-N`: before the epoch; default 1763632800)
//!   5: tolerance seconds (default 300)
//! `verify` runs with no tolerance and with the tolerance and must never
//! panic. Then an oracle: a header that `sign` makes from the same secret,
//! id and request id (reduced to what a platform sends: printable ASCII
//! without spaces) must verify.
#![no_main]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use pointhook_common::signature::{IdForm, SignatureError, SignedParts, sign, verify};

const DEFAULT_NOW: u64 = 1_763_632_800;

fn at(secs: u64) -> Option<SystemTime> {
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// What a platform can put in a header or a query id: printable ASCII, no
/// spaces (verify trims the id and refuses spaces in the request id).
fn printable(text: &str) -> String {
    text.chars().filter(char::is_ascii_graphic).collect()
}

fuzz_target!(|data: &[u8]| {
    let mut lines = data.split(|&b| b == b'\n');
    let secrets_line = lines.next().unwrap_or_default();
    let data_id = lines.next().map(String::from_utf8_lossy);
    let request_id = lines.next();
    let signature = lines.next();
    let now_line = lines.next().map(String::from_utf8_lossy);
    let tolerance_line = lines.next().map(String::from_utf8_lossy);

    let secrets: Vec<&[u8]> = secrets_line.split(|&b| b == b'|').take(4).collect();
    let now = match now_line.as_deref().map(str::trim) {
        None => at(DEFAULT_NOW),
        Some(t) => match t.strip_prefix('-') {
            Some(before) => before
                .parse::<u64>()
                .ok()
                .and_then(|s| UNIX_EPOCH.checked_sub(Duration::from_secs(s))),
            None => t.parse::<u64>().ok().and_then(at),
        },
    }
    .unwrap_or(UNIX_EPOCH);
    let tolerance = tolerance_line
        .as_deref()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(300);

    let parts = SignedParts {
        data_id: data_id.as_deref().unwrap_or_default(),
        request_id,
        signature,
    };
    let unchecked = verify(&secrets, parts, now, None);
    let checked = verify(&secrets, parts, now, Some(Duration::from_secs(tolerance)));
    // The tolerance only ever takes away.
    if checked.is_ok() {
        assert_eq!(checked, unchecked, "tolerance changed which secret or form matched");
    }
    if let Err(e) = &unchecked {
        let _ = e.to_string();
    }

    // The oracle: what `sign` makes verifies.
    let secret = secrets[0];
    let id = data_id.as_deref().map(printable).filter(|i| !i.is_empty());
    let req = request_id.map(|r| printable(&String::from_utf8_lossy(r)));
    let ts = now
        .duration_since(UNIX_EPOCH)
        .map_or(DEFAULT_NOW, |d| d.as_secs());
    let header = sign(secret, id.as_deref(), req.as_deref(), ts);
    // A header over no id binds nothing: it never verifies.
    let Some(id) = id else {
        let unbound = SignedParts {
            data_id: "",
            request_id: req.as_deref().map(str::as_bytes),
            signature: Some(header.as_bytes()),
        };
        assert_eq!(verify(&[secret], unbound, now, None), Err(SignatureError::Unbound));
        return;
    };
    let signed = SignedParts {
        data_id: &id,
        request_id: req.as_deref().map(str::as_bytes),
        signature: Some(header.as_bytes()),
    };
    let v = verify(&[secret], signed, now, None)
        .unwrap_or_else(|e| panic!("sign's own header {header:?} for {id:?}/{req:?}: {e}"));
    assert_eq!(v.id_form, IdForm::AsReceived);
    assert_eq!(v.secret, 0);
    // At its own time, within any tolerance (a ts of 10^12 and over is
    // read as milliseconds, by design).
    let ts_secs = if ts >= 1_000_000_000_000 { ts / 1000 } else { ts };
    if let Some(then) = at(ts_secs) {
        let v = verify(&[secret], signed, then, Some(Duration::from_secs(tolerance)));
        assert!(v.is_ok(), "sign's own header {header:?} at its ts: {v:?}");
    }
    // Found among several secrets, by position.
    let mut decoy = secret.to_vec();
    decoy.push(b'x');
    let v = verify(&[&decoy, secret], signed, now, None);
    assert_eq!(v.map(|v| v.secret), Ok(1), "{header:?} with a decoy secret first");
    // Read the way the SDKs read it: keys in any case, parts padded.
    let (ts_part, v1_part) = header.split_once(',').expect("sign writes ts=…,v1=…");
    for variant in [
        format!(" {} , {} ", ts_part.to_uppercase(), v1_part.replace("v1=", "V1=")),
        format!("{v1_part},x,{ts_part},v2=00"),
    ] {
        let parts = SignedParts {
            signature: Some(variant.as_bytes()),
            ..signed
        };
        let v = verify(&[secret], parts, now, None);
        assert!(v.is_ok(), "{variant:?} (from {header:?}): {v:?}");
    }
    // An id the platform signed lowercased verifies against the id as
    // received.
    {
        let lower = id.to_ascii_lowercase();
        let header = sign(secret, Some(&lower), req.as_deref(), ts);
        let parts = SignedParts {
            signature: Some(header.as_bytes()),
            ..signed
        };
        let v = verify(&[secret], parts, now, None)
            .unwrap_or_else(|e| panic!("{header:?} signed over {lower:?}, received {id:?}: {e}"));
        let expected = if lower == *id {
            IdForm::AsReceived
        } else {
            IdForm::Lowercased
        };
        assert_eq!(v.id_form, expected);
    }
});
