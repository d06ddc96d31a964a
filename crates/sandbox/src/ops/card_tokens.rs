//! Card tokens (`POST /v1/card_tokens`, `GET /v1/card_tokens/{id}`) as
//! the SDKs' card-token calls make them, for the platform's test cards:
//! the cardholder's name decides what a payment made with the token comes
//! to, as the platform documents its test names (`APRO` approved, `CONT`
//! in process, `OTHE`, `CALL`, `FUND`, `SECU`, `EXPI`, `FORM` … rejected,
//! each with its `status_detail`; sources in docs/sandbox.md). The token
//! keeps the card's first six and last four digits, never the number or
//! the security code.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::sandbox::Sandbox;
use super::shapes;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{StateError, Tx, resources};
use pointhook_common::clock::rfc3339;

/// How long a token may be used (a sandbox choice).
const VALID_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

/// The documented test cardholder names and the payment each makes:
/// (name, status, status_detail).
pub const TEST_NAMES: [(&str, &str, &str); 14] = [
    ("APRO", "approved", "accredited"),
    ("CONT", "in_process", "pending_contingency"),
    ("OTHE", "rejected", "cc_rejected_other_reason"),
    ("CALL", "rejected", "cc_rejected_call_for_authorize"),
    ("FUND", "rejected", "cc_rejected_insufficient_amount"),
    ("SECU", "rejected", "cc_rejected_bad_filled_security_code"),
    ("EXPI", "rejected", "cc_rejected_bad_filled_date"),
    ("FORM", "rejected", "cc_rejected_bad_filled_other"),
    ("CARD", "rejected", "cc_rejected_bad_filled_card_number"),
    ("INST", "rejected", "cc_rejected_invalid_installments"),
    ("DUPL", "rejected", "cc_rejected_duplicated_payment"),
    ("LOCK", "rejected", "cc_rejected_card_disabled"),
    ("ATTE", "rejected", "cc_rejected_max_attempts"),
    ("BLAC", "rejected", "cc_rejected_blacklist"),
];

/// What a payment with a token of this cardholder comes to; `None` for a
/// name that is not a test name (the payment is approved).
pub fn outcome(cardholder: &str) -> Option<(&'static str, &'static str)> {
    let name = cardholder.trim();
    TEST_NAMES
        .iter()
        .find(|(test, _, _)| name.eq_ignore_ascii_case(test))
        .map(|(_, status, detail)| (*status, *detail))
}

fn refused(field: &str, what: &str) -> HttpError {
    HttpError::bad_request(1, &format!("{field} {what}"))
}

/// Digits, as text, of a field sent as text or as a number.
fn digits(v: &Map<String, Value>, field: &str) -> Option<String> {
    match v.get(field)? {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `number` passes the Luhn check.
fn luhn(number: &str) -> bool {
    let sum: u32 = number
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let d = d * 2;
                if d > 9 { d - 9 } else { d }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// `POST /v1/card_tokens`: 201 with the token.
pub async fn create(sb: &Sandbox, account: &AccountRow, body: &[u8]) -> Result<Value, HttpError> {
    let v = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => m,
        _ => return Err(HttpError::bad_request(1, "body is not a JSON object")),
    };
    if v.contains_key("card_id") {
        return Err(refused(
            "card_id",
            "names a saved card: the sandbox keeps no customers' cards; send card_number",
        ));
    }
    let number = digits(&v, "card_number")
        .filter(|n| (13..=19).contains(&n.len()))
        .ok_or_else(|| refused("card_number", "is required: 13 to 19 digits"))?;
    let month = digits(&v, "expiration_month")
        .and_then(|m| m.parse::<u8>().ok())
        .filter(|m| (1..=12).contains(m))
        .ok_or_else(|| refused("expiration_month", "is required: 1 to 12"))?;
    let year = digits(&v, "expiration_year")
        .and_then(|y| y.parse::<u16>().ok())
        .map(|y| if y < 100 { 2000 + y } else { y })
        .filter(|y| (2000..=2099).contains(y))
        .ok_or_else(|| refused("expiration_year", "is required: the year, as 2030 or 30"))?;
    let code = digits(&v, "security_code")
        .filter(|c| (3..=4).contains(&c.len()))
        .ok_or_else(|| refused("security_code", "is required: 3 or 4 digits"))?;
    let cardholder = v.get("cardholder").and_then(Value::as_object);
    let name = cardholder
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| refused("cardholder.name", "is required"))?;
    let identification = cardholder
        .and_then(|c| c.get("identification"))
        .cloned()
        .unwrap_or(Value::Null);
    let now = sb.now();
    let due = now.saturating_add(VALID_FOR.as_millis() as i64);
    let id = shapes::random_hex(16);
    let token = json!({
        "id": id,
        "card_id": null,
        "first_six_digits": &number[..6],
        "last_four_digits": &number[number.len() - 4..],
        "expiration_month": month,
        "expiration_year": year,
        "card_number_length": number.len(),
        "security_code_length": code.len(),
        "cardholder": {"name": name, "identification": identification},
        "status": "active",
        "luhn_validation": luhn(&number),
        "live_mode": false,
        "require_esc": false,
        "date_created": rfc3339(now),
        "date_last_updated": rfc3339(now),
        "date_due": rfc3339(due),
    });
    let (owner, stored) = (account.name.clone(), token.clone());
    sb.db
        .call(move |tx| resources::put(tx, "card_token", &id, &owner, &stored, None))
        .await?;
    Ok(token)
}

/// The token `token` of the account, when it issued one.
pub fn issued(tx: &Tx<'_>, account: &str, token: &str) -> Result<Option<Value>, StateError> {
    Ok(resources::get(tx, "card_token", token)?
        .filter(|(owner, _)| owner == account)
        .map(|(_, body)| body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_names_decide_in_any_case_and_others_do_not() {
        assert_eq!(outcome("APRO"), Some(("approved", "accredited")));
        assert_eq!(
            outcome(" fund "),
            Some(("rejected", "cc_rejected_insufficient_amount"))
        );
        assert_eq!(outcome("CONT"), Some(("in_process", "pending_contingency")));
        assert_eq!(outcome("Ana Souza"), None);
    }

    #[test]
    fn the_documented_test_cards_pass_luhn() {
        for n in ["5031433215406351", "4235647728025682", "375365153556885"] {
            assert!(luhn(n), "{n}");
        }
        assert!(!luhn("4235647728025683"));
    }
}
