//! Input: amounts, one per line. Each line goes through `Money::parse`, the
//! whole input through the JSON deserialiser; what parses is added,
//! subtracted and summed. Nothing may panic, and every parsed amount must
//! print (Display, and so Serialize) as text that parses back to the same
//! amount.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pointhook_common::money::Money;

fn round_trips(m: Money, from: &str) {
    let shown = m.to_string();
    assert_eq!(
        Money::parse(&shown),
        Some(m),
        "{from:?} parsed as {m:?}, displayed as {shown:?}, which does not parse back"
    );
    let json = serde_json::to_string(&m).expect("Money serialises");
    let back: Money = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("{from:?} serialised as {json}, which does not read back: {e}"));
    assert_eq!(back, m, "{from:?} serialised as {json}");
}

fuzz_target!(|data: &[u8]| {
    let mut parsed = Vec::new();

    // The deserialiser: numbers (exact text, arbitrary_precision), strings,
    // anything else refused; and a list of amounts as bodies carry them.
    if let Ok(m) = serde_json::from_slice::<Money>(data) {
        round_trips(m, &String::from_utf8_lossy(data));
        parsed.push(m);
    }
    if let Ok(list) = serde_json::from_slice::<Vec<Money>>(data) {
        for &m in &list {
            round_trips(m, &String::from_utf8_lossy(data));
        }
        let _ = Money::checked_sum(list);
    }

    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        if let Some(m) = Money::parse(line) {
            round_trips(m, line);
            parsed.push(m);
        }
        // A line as a JSON value too (`"1.5"`, `1e3`).
        if let Ok(m) = serde_json::from_str::<Money>(line) {
            round_trips(m, line);
        }
    }

    for (i, &a) in parsed.iter().enumerate().take(16) {
        let _ = a.is_positive();
        for &b in parsed.iter().skip(i).take(16) {
            let sum = a.checked_add(b);
            assert_eq!(sum, b.checked_add(a), "{a:?} + {b:?} is not commutative");
            if let Ok(s) = sum {
                round_trips(s, "a sum");
            }
            if let Ok(d) = a.checked_sub(b) {
                round_trips(d, "a difference");
            }
            let _ = b.checked_sub(a);
        }
    }
    if let Ok(total) = Money::checked_sum(parsed.iter().copied()) {
        round_trips(total, "the sum of all");
    }
});
