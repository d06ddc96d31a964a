//! The checks a create body goes through, as the Orders API words them:
//! amounts as decimal strings, references, enumerations, descriptions and
//! ISO 8601 durations. Each problem found is added to the list (`Causes`)
//! the refusal names.

use std::time::Duration;

use serde_json::Value;

use pointhook_common::money::Money;

/// Every problem found in a body: (code, what is wrong).
pub(super) type Causes = Vec<(&'static str, String)>;

/// Point and QR orders left unpaid expire after this (platform time).
const DEFAULT_EXPIRY: Duration = Duration::from_secs(15 * 60);

/// A decimal string with at most two decimals, above zero (`"24"`,
/// `"24.9"`, `"24.90"`).
pub(super) fn decimal(text: &str) -> Option<Money> {
    let (units, cents) = text.split_once('.').unwrap_or((text, "0"));
    let shaped = !units.is_empty()
        && units.len() <= 13
        && units.bytes().all(|b| b.is_ascii_digit())
        && !cents.is_empty()
        && cents.len() <= 2
        && cents.bytes().all(|b| b.is_ascii_digit());
    Money::parse(text).filter(|m| shaped && m.is_positive())
}

/// A required amount, as `decimal` reads it.
pub(super) fn amount(v: &Value, name: &str, causes: &mut Causes) -> Option<Money> {
    let text = match v {
        Value::Null => {
            causes.push(("required_properties", format!("{name} is required")));
            return None;
        }
        Value::String(s) => s,
        _ => {
            causes.push((
                "property_type",
                format!("{name} must be a decimal string such as \"24.00\""),
            ));
            return None;
        }
    };
    match decimal(text) {
        Some(m) => Some(m),
        None => {
            causes.push((
                "property_value",
                format!("{name} must be above zero with at most two decimals"),
            ));
            None
        }
    }
}

/// The one payment of a Point or QR order (`transactions.payments`).
pub(super) fn single_payment(v: &Value, required: bool, causes: &mut Causes) -> Option<Money> {
    match &v["transactions"]["payments"] {
        Value::Null if !required => None,
        Value::Array(list) if list.len() == 1 => amount(
            &list[0]["amount"],
            "transactions.payments[0].amount",
            causes,
        ),
        Value::Array(list) if list.len() > 1 => {
            causes.push((
                "maximum_items",
                "transactions.payments takes one payment".into(),
            ));
            None
        }
        _ => {
            causes.push((
                "minimum_items",
                "transactions.payments must hold one payment".into(),
            ));
            None
        }
    }
}

pub(super) fn external_reference(
    v: &Value,
    required: bool,
    max: usize,
    causes: &mut Causes,
) -> Option<String> {
    match &v["external_reference"] {
        Value::Null if required => {
            causes.push((
                "required_properties",
                "external_reference is required".into(),
            ));
            None
        }
        Value::Null => None,
        Value::String(s)
            if !s.is_empty()
                && s.len() <= max
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Some(s.clone())
        }
        _ => {
            causes.push((
                "property_value",
                format!("external_reference takes 1 to {max} letters, digits, - and _"),
            ));
            None
        }
    }
}

/// An optional field that, when present, must be one of `allowed`.
pub(super) fn one_of<'a>(
    v: &'a Value,
    name: &str,
    allowed: &[&str],
    causes: &mut Causes,
) -> Option<&'a str> {
    match v {
        Value::Null => None,
        Value::String(s) if allowed.contains(&s.as_str()) => Some(s),
        _ => {
            causes.push((
                "property_value",
                format!("{name} must be one of {}", allowed.join(", ")),
            ));
            None
        }
    }
}

pub(super) fn check_description(v: &Value, causes: &mut Causes) {
    match &v["description"] {
        Value::Null => {}
        Value::String(s) if s.chars().count() <= 150 => {}
        _ => causes.push((
            "property_value",
            "description takes at most 150 characters".into(),
        )),
    }
}

/// `expiration_time` (an ISO 8601 duration) within `range`, else the
/// default of 15 minutes; the text as the order will show it.
pub(super) fn expiration(
    v: &Value,
    range: (Duration, Duration),
    causes: &mut Causes,
) -> (String, Duration) {
    let default = ("PT15M".to_string(), DEFAULT_EXPIRY);
    match &v["expiration_time"] {
        Value::Null => default,
        Value::String(s) => match iso_duration(s) {
            Some(d) if d >= range.0 && d <= range.1 => (s.clone(), d),
            _ => {
                causes.push((
                    "property_value",
                    format!(
                        "expiration_time must be an ISO 8601 duration from {} to {}",
                        humantime::format_duration(range.0),
                        humantime::format_duration(range.1)
                    ),
                ));
                default
            }
        },
        _ => {
            causes.push(("property_type", "expiration_time must be a string".into()));
            default
        }
    }
}

/// `PnWnD` and `TnHnMnS` parts, in whole numbers (`PT30S`, `PT3H`, `P3D`).
pub(super) fn iso_duration(text: &str) -> Option<Duration> {
    let rest = text.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return None,
        None => (rest, None),
    };
    let mut secs: u64 = 0;
    let mut any = false;
    let mut read = |part: &str, units: &[(char, u64)]| -> Option<()> {
        let mut digits = String::new();
        let mut next = 0;
        for c in part.chars() {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            // Units in their order, each once, each after a number.
            let at = next + units[next..].iter().position(|(u, _)| *u == c)?;
            let n: u64 = digits.parse().ok()?;
            secs = secs.checked_add(n.checked_mul(units[at].1)?)?;
            digits.clear();
            next = at + 1;
            any = true;
        }
        digits.is_empty().then_some(())
    };
    read(date, &[('W', 7 * 86_400), ('D', 86_400)])?;
    if let Some(t) = time {
        read(t, &[('H', 3600), ('M', 60), ('S', 1)])?;
    }
    any.then(|| Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn iso_durations_as_the_orders_api_writes_them() {
        assert_eq!(iso_duration("PT15M"), Some(Duration::from_secs(900)));
        assert_eq!(iso_duration("PT30S"), Some(Duration::from_secs(30)));
        assert_eq!(iso_duration("PT3H"), Some(Duration::from_secs(10_800)));
        assert_eq!(iso_duration("PT1H30M"), Some(Duration::from_secs(5400)));
        assert_eq!(iso_duration("P3D"), Some(Duration::from_secs(259_200)));
        assert_eq!(iso_duration("P1DT1S"), Some(Duration::from_secs(86_401)));
        for bad in [
            "", "P", "PT", "15M", "PT15", "PTM", "PT1S1M", "PT-1S", "P1H", "PT1.5S",
        ] {
            assert_eq!(iso_duration(bad), None, "{bad}");
        }
        assert_eq!(iso_duration("P99999999999999999999D"), None);
    }

    #[test]
    fn amounts_are_decimal_strings_with_two_decimals_at_most() {
        let mut causes = Causes::new();
        assert_eq!(
            amount(&json!("24.00"), "a", &mut causes),
            Money::parse("24")
        );
        assert_eq!(amount(&json!("120"), "a", &mut causes), Money::parse("120"));
        assert!(causes.is_empty());
        for bad in [
            json!(24),
            json!("24.001"),
            json!("-1"),
            json!("0.00"),
            json!("1e3"),
            json!(""),
            json!(".5"),
        ] {
            let mut causes = Causes::new();
            assert_eq!(amount(&bad, "a", &mut causes), None, "{bad}");
            assert_eq!(causes.len(), 1);
        }
    }
}
