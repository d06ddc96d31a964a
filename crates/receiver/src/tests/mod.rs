//! The rules' unit tests, a file per rule; resources are read from the
//! JSON the API would send, through `api::wire`, as the worker reads them.

use pointhook_common::money::Money;
use serde_json::json;

use crate::api::wire;
use crate::domain::platform::{MerchantOrder, Payment, PaymentIntent, PlatformOrder};

mod alerts;
mod fraud;
mod intent;
mod kernel;
mod platform_order;
mod release;

pub fn m(s: &str) -> Money {
    Money::parse(s).unwrap()
}

/// A merchant order of `total`; payments are (amount, status, refunded).
pub fn order_refunded(
    total: &str,
    payments: &[(&str, &str, &str)],
    shipments: &[&str],
) -> MerchantOrder {
    let payments: Vec<_> = payments
        .iter()
        .enumerate()
        .map(|(i, (amount, status, refunded))| {
            json!({"id": 100 + i, "transaction_amount": m(amount), "status": status,
                   "transaction_amount_refunded": m(refunded)})
        })
        .collect();
    let shipments: Vec<_> = shipments
        .iter()
        .map(|s| json!({"id": 1, "status": s}))
        .collect();
    merchant_order(json!({
        "id": 1, "total_amount": m(total), "payments": payments, "shipments": shipments,
    }))
}

pub fn order(total: &str, payments: &[(&str, &str)], shipments: &[&str]) -> MerchantOrder {
    let with: Vec<(&str, &str, &str)> = payments.iter().map(|(a, s)| (*a, *s, "0")).collect();
    order_refunded(total, &with, shipments)
}

pub fn merchant_order(v: serde_json::Value) -> MerchantOrder {
    serde_json::from_value::<wire::MerchantOrder>(v)
        .unwrap()
        .into()
}

pub fn pay(v: serde_json::Value) -> Payment {
    serde_json::from_value::<wire::Payment>(v).unwrap().into()
}

pub fn intent_of(amount: i64, reference: Option<&str>) -> PaymentIntent {
    serde_json::from_value::<wire::PaymentIntent>(json!({
        "id": "i-1", "state": "FINISHED", "amount": amount, "payment": {"id": 5},
        "additional_info": {"external_reference": reference, "ticket_number": "T1"},
    }))
    .unwrap()
    .into()
}

pub fn platform_order(v: serde_json::Value) -> PlatformOrder {
    let mut base = json!({"id": "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3", "type": "point",
                          "total_amount": "100.00", "total_paid_amount": "100.00"});
    for (k, x) in v.as_object().unwrap() {
        base[k] = x.clone();
    }
    serde_json::from_value::<wire::PlatformOrder>(base)
        .unwrap()
        .into()
}
