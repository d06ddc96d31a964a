//! The fields of a payment the official SDKs map and their own test
//! answers hold, beyond status and amount: who collects (`collector_id`),
//! who paid (`payer`, as sent, with an id), what the seller receives
//! (`transaction_details`, `fee_details`), when it was approved and when
//! the money is released (`date_approved` on every approval,
//! `money_release_date`), and the merchant order it belongs to (`order`).
//!
//! `complete` gives a new payment every field; `settle` brings the
//! amounts and dates up to date after a change (an approval, a capture).
//! The fee and the release delay are the sandbox's own choice.

use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::{Map, Value, json};

use pointhook_common::clock::rfc3339;

/// The platform's processing fee the sandbox charges an approved payment:
/// 4.99 % of the amount, in cents rounded half up (a sandbox choice).
const FEE_RATE: Decimal = Decimal::from_parts(499, 0, 0, false, 4);

/// Days from approval until the money is released (as the SDKs' test
/// answers have it: fourteen).
const RELEASE_DAYS: i64 = 14;

/// Fields every payment carries, with the value a payment without them
/// has (`null`, empty, or the platform's default).
fn defaults() -> Value {
    json!({
        "date_approved": null,
        "date_of_expiration": null,
        "money_release_date": null,
        "money_release_status": null,
        "operation_type": "regular_payment",
        "issuer_id": null,
        "currency_id": "ARS",
        "installments": 1,
        "statement_descriptor": "SANDBOX",
        "processing_mode": "aggregator",
        "merchant_account_id": null,
        "external_reference": null,
        "notification_url": null,
        "binary_mode": false,
        "coupon_amount": 0,
        "taxes_amount": 0,
        "shipping_amount": 0,
        "differential_pricing_id": null,
        "sponsor_id": null,
        "pos_id": null,
        "store_id": null,
        "integrator_id": null,
        "platform_id": null,
        "corporation_id": null,
        "authorization_code": null,
        "metadata": {},
        "additional_info": {},
        "order": {},
        "payer": {"id": null, "email": null, "identification": {"type": null, "number": null},
                  "type": null, "first_name": null, "last_name": null, "entity_type": null,
                  "phone": {"area_code": null, "number": null, "extension": null}},
        "fee_details": [],
        "charges_details": [],
        "point_of_interaction": {},
    })
}

/// Gives `payment` every field it lacks, `collector_id` the account's
/// user id, and its amounts and dates as of `now`.
pub fn complete(payment: &mut Value, collector: i64, now: i64) {
    let Some(fields) = payment.as_object_mut() else {
        return;
    };
    if let Value::Object(d) = defaults() {
        for (k, v) in d {
            fields.entry(k).or_insert(v);
        }
    }
    fields.insert("collector_id".into(), json!(collector));
    settle(payment, now);
}

/// The payer as the buyer sent it, with a stable platform-like id (the
/// same e-mail has the same id) and `type` `guest`.
pub fn payer(sent: Option<&Value>) -> Value {
    let mut payer = match sent {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let email = payer
        .get("email")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let id = 100_000_000
        + email
            .bytes()
            .fold(7u64, |h, b| (h * 31 + b as u64) % 900_000_000);
    payer.entry("id").or_insert(json!(id.to_string()));
    payer.entry("type").or_insert(json!("guest"));
    payer
        .entry("identification")
        .or_insert(json!({"type": null, "number": null}));
    for field in ["first_name", "last_name", "entity_type", "operator_id"] {
        payer.entry(field).or_insert(Value::Null);
    }
    payer
        .entry("phone")
        .or_insert(json!({"area_code": null, "number": null, "extension": null}));
    Value::Object(payer)
}

/// Brings the derived fields up to date: `date_approved` set the first
/// time the payment is approved, the release date from it, what the
/// seller receives (the fee only on an approved payment).
pub fn settle(payment: &mut Value, now: i64) {
    let Some(fields) = payment.as_object_mut() else {
        return;
    };
    let approved = fields.get("status").and_then(Value::as_str) == Some("approved");
    if approved && fields.get("date_approved").is_none_or(Value::is_null) {
        fields.insert("date_approved".into(), json!(rfc3339(now)));
        let release = now.saturating_add(RELEASE_DAYS * 86_400_000);
        fields.insert("money_release_date".into(), json!(rfc3339(release)));
        fields.insert("money_release_status".into(), json!("pending"));
    }
    let amount = fields
        .get("transaction_amount")
        .and_then(|a| Decimal::from_str(&a.to_string()).ok())
        .unwrap_or(Decimal::ZERO);
    let installments = fields
        .get("installments")
        .and_then(Value::as_u64)
        .filter(|i| *i >= 1)
        .unwrap_or(1);
    let fee = if approved {
        cents(amount.checked_mul(FEE_RATE).unwrap_or(Decimal::ZERO))
    } else {
        Decimal::ZERO
    };
    let net = if approved {
        amount.checked_sub(fee).unwrap_or(Decimal::ZERO)
    } else {
        Decimal::ZERO
    };
    let per_installment = cents(
        amount
            .checked_div(Decimal::from(installments))
            .unwrap_or(amount),
    );
    fields.insert(
        "transaction_details".into(),
        json!({
            "net_received_amount": number(net),
            "total_paid_amount": number(amount),
            "overpaid_amount": 0,
            "installment_amount": number(per_installment),
            "external_resource_url": null,
            "financial_institution": null,
            "payment_method_reference_id": null,
            "acquirer_reference": null,
            "payable_deferral_period": null,
        }),
    );
    let fees = if approved && fee > Decimal::ZERO {
        json!([{"type": "mercadopago_fee", "amount": number(fee), "fee_payer": "collector"}])
    } else {
        json!([])
    };
    fields.insert("fee_details".into(), fees);
}

fn cents(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
}

/// A decimal as a JSON number, from its exact text.
fn number(d: Decimal) -> Value {
    serde_json::from_str(&d.normalize().to_string()).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_is_dated_once_and_charged_its_fee() {
        let mut p = json!({"status": "approved", "transaction_amount": 58.8, "installments": 3});
        complete(&mut p, 42, 1_700_000_000_000);
        assert_eq!(p["collector_id"], 42);
        assert_eq!(p["fee_details"][0]["amount"].to_string(), "2.93");
        assert_eq!(
            p["transaction_details"]["net_received_amount"].to_string(),
            "55.87"
        );
        assert_eq!(
            p["transaction_details"]["installment_amount"].to_string(),
            "19.6"
        );
        let first = p["date_approved"].clone();
        assert!(first.is_string());
        settle(&mut p, 1_800_000_000_000);
        assert_eq!(p["date_approved"], first, "approved once");
    }

    #[test]
    fn a_rejection_has_no_fee_nor_approval() {
        let mut p = json!({"status": "rejected", "transaction_amount": 10});
        complete(&mut p, 1, 0);
        assert!(p["date_approved"].is_null());
        assert_eq!(p["fee_details"], json!([]));
        assert_eq!(p["transaction_details"]["net_received_amount"], 0);
    }

    #[test]
    fn a_payer_keeps_what_was_sent_and_gets_a_stable_id() {
        let sent = json!({"email": "Buyer@example.com", "first_name": "Ana"});
        let a = payer(Some(&sent));
        assert_eq!(a["first_name"], "Ana");
        assert_eq!(a["email"], "Buyer@example.com");
        assert!(a["id"].as_str().is_some_and(|i| i.len() == 9));
        assert_eq!(
            payer(Some(&json!({"email": "buyer@example.com"})))["id"],
            a["id"]
        );
    }
}
