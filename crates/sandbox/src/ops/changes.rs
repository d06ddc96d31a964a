//! Changing resources the way the platform does, and announcing each change
//! with the notifications the platform would send.

use serde_json::{Value, json};

use super::sandbox::Sandbox;
use super::{payment_fields, queue, quirk_effects, shapes};
use crate::model::AccountRow;
use crate::state::{Result, StateError, Tx, resources};
use pointhook_common::clock::rfc3339;
use pointhook_common::money::Money;
use pointhook_common::query::Query;

/// Where a sequence of platform-like ids starts.
pub const PAYMENT_IDS: i64 = 1_300_000_001;
pub const MERCHANT_ORDER_IDS: i64 = 4_945_400_001;

/// A payment as the API serves it, collected by the account whose user
/// id is `collector`.
pub fn payment_body(
    id: i64,
    status: &str,
    amount: Money,
    description: Option<Value>,
    order: Option<&Value>,
    collector: i64,
    now: i64,
) -> Value {
    let mut p = json!({
        "id": id,
        "status": status,
        "status_detail": status_detail(status),
        "transaction_amount": amount_json(amount),
        "transaction_amount_refunded": 0,
        "currency_id": "ARS",
        "description": description,
        "date_created": rfc3339(now),
        "date_last_updated": rfc3339(now),
        "live_mode": false,
        "payment_method_id": "visa",
        "payment_type_id": "credit_card",
        "captured": status != "authorized",
        "refunds": [],
    });
    if let Some(o) = order {
        p["order"] = json!({"id": o, "type": "mercadopago"});
    }
    payment_fields::complete(&mut p, collector, now);
    p
}

pub fn status_detail(status: &str) -> &'static str {
    match status {
        "approved" => "accredited",
        "in_process" | "pending" => "pending_review_manual",
        "rejected" => "cc_rejected_other_reason",
        "cancelled" => "by_collector",
        "refunded" => "refunded",
        "authorized" => "pending_capture",
        _ => "",
    }
}

pub fn amount_json(m: Money) -> Value {
    serde_json::from_str(&m.to_string()).unwrap_or(Value::Null)
}

/// The resource if it exists, belongs to `account` and is a JSON object.
/// A resource a tester stored as anything else (`PUT /sandbox/resources`)
/// is served as it is but cannot be changed: it counts as absent here.
pub fn owned_in(tx: &Tx<'_>, account: &str, kind: &str, id: &str) -> Result<Option<Value>> {
    Ok(resources::get(tx, kind, id)?
        .filter(|(owner, body)| owner == account && body.is_object())
        .map(|(_, body)| body))
}

/// `owned_in`, in a transaction of its own.
pub async fn owned(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
) -> Result<Option<Value>> {
    let (name, id) = (account.name.clone(), id.to_string());
    sb.db.call(move |tx| owned_in(tx, &name, kind, &id)).await
}

/// Stores a resource as changed through the control API: a merchant
/// order's `last_updated` moves, an intent's state is an intent event.
pub async fn save(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
    body: &Value,
) -> Result<()> {
    let (name, id, mut body) = (account.name.clone(), id.to_string(), body.clone());
    let now = sb.now();
    if kind == "merchant_order" {
        body["last_updated"] = json!(rfc3339(now));
    }
    sb.db
        .call(move |tx| {
            resources::put(tx, kind, &id, &name, &body, None)?;
            if kind == "payment_intent"
                && let Some(state) = body["state"].as_str()
            {
                resources::intent_event(tx, &name, &id, state, now)?;
            }
            Ok::<_, StateError>(())
        })
        .await
}

/// Stores a changed payment, mirrors it into its merchant order, and
/// announces both.
pub async fn save_payment(sb: &Sandbox, account: &AccountRow, payment: &Value) -> Result<()> {
    let (name, p) = (account.name.clone(), payment.clone());
    let now = sb.now();
    let order_id = sb
        .db
        .call(move |tx| store_payment(tx, &name, &p, now))
        .await?;
    announce_payment(sb, account, payment, order_id).await
}

/// Announces a payment stored by `store_payment` (and its order's change).
pub async fn announce_payment(
    sb: &Sandbox,
    account: &AccountRow,
    payment: &Value,
    order_id: Option<String>,
) -> Result<()> {
    let id = shapes::json_id_text(&payment["id"]);
    announce(sb, account, "payment", &id, "payment.updated").await?;
    if let Some(oid) = order_id {
        announce(sb, account, "merchant_order", &oid, "update").await?;
    }
    Ok(())
}

/// Stores a changed payment and mirrors its status and refunds into its
/// merchant order, inside the caller's transaction; returns the order's
/// id when it has one.
pub fn store_payment(
    tx: &Tx<'_>,
    account: &str,
    payment: &Value,
    now: i64,
) -> Result<Option<String>> {
    let mut p = payment.clone();
    if let Some(fields) = p.as_object_mut() {
        fields.insert("date_last_updated".into(), json!(rfc3339(now)));
    }
    payment_fields::settle(&mut p, now);
    let id = shapes::json_id_text(&p["id"]);
    resources::put(tx, "payment", &id, account, &p, None)?;
    let order_id = p.pointer("/order/id").map(shapes::json_id_text);
    if let Some(oid) = &order_id
        && let Some((_, mut order)) = resources::get(tx, "merchant_order", oid)?
        && order.is_object()
    {
        if let Some(list) = order["payments"].as_array_mut() {
            let entries = list
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .filter(|e| e.get("id") == Some(&p["id"]));
            for entry in entries {
                for (to, from) in [
                    ("status", "status"),
                    ("status_detail", "status_detail"),
                    ("amount_refunded", "transaction_amount_refunded"),
                    ("transaction_amount", "transaction_amount"),
                ] {
                    entry.insert(to.into(), p[from].clone());
                }
            }
        }
        refresh_order(&mut order);
        order["last_updated"] = json!(rfc3339(now));
        resources::put(tx, "merchant_order", oid, account, &order, None)?;
    }
    Ok(order_id)
}

/// Paid amount and order status from the payments.
pub fn refresh_order(order: &mut Value) {
    if !order.is_object() {
        return;
    }
    let paid = Money::checked_sum(
        order["payments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["status"] == "approved")
            .filter_map(|p| Money::parse(&p["transaction_amount"].to_string())),
    )
    .unwrap_or(Money::ZERO);
    let refunded = Money::checked_sum(
        order["payments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Money::parse(&p["amount_refunded"].to_string())),
    )
    .unwrap_or(Money::ZERO);
    let total = Money::parse(&order["total_amount"].to_string()).unwrap_or(Money::ZERO);
    order["paid_amount"] = amount_json(paid);
    order["refunded_amount"] = amount_json(refunded);
    order["order_status"] = json!(if paid >= total {
        "paid"
    } else {
        "payment_required"
    });
    order["status"] = json!(if paid >= total { "closed" } else { "opened" });
}

/// The notifications the platform sends for a change of `topic`/`id`: an
/// IPN to the account URL (when the account selected that event group), and
/// to the object's own `notification_url` the IPN and/or webhook forms by
/// its `source_news` (both, and the webhook to the account URL too, under
/// the twins quirk).
pub async fn announce(
    sb: &Sandbox,
    account: &AccountRow,
    topic: &'static str,
    id: &str,
    action: &str,
) -> Result<()> {
    let (group, path, kind) = match topic {
        "payment" => ("payment", format!("/v1/payments/{id}"), "payment"),
        "merchant_order" => (
            "merchant_orders",
            format!("/merchant_orders/{id}"),
            "merchant_order",
        ),
        "chargebacks" => ("chargebacks", format!("/v1/chargebacks/{id}"), "chargeback"),
        _ => (
            "point_integration_ipn",
            format!("/point/integration-api/payment-intents/{id}"),
            "payment_intent",
        ),
    };
    let resource_url = format!("{}{path}", sb.base_url);
    let (account, id, action) = (account.clone(), id.to_string(), action.to_string());
    let now = sb.now();
    let now_secs = (now / 1000).max(0) as u64;
    sb.db
        .call(move |tx| {
            // The twins quirk sends both forms wherever one would go.
            let twins = quirk_effects::effective(tx, &account.name)?.twins;
            let webhook = |tx: &Tx<'_>, url: &str| -> Result<()> {
                let n = resources::next_id(tx, "notification", 5_000_000_001)?;
                let w = shapes::webhook(
                    url,
                    topic,
                    &id,
                    n,
                    account.user_id(),
                    &action,
                    &rfc3339(now),
                    account.webhook_secret.as_deref(),
                    now_secs,
                );
                queue::enqueue(tx, &account.name, &w, now).map(|_| ())
            };
            if let Some(url) = &account.notification_url
                && account.wants(group)
            {
                queue::enqueue(
                    tx,
                    &account.name,
                    &shapes::ipn(url, topic, &id, &resource_url),
                    now,
                )?;
                if twins {
                    webhook(tx, url)?;
                }
            }
            if let Some(url) = resources::url(tx, kind, &id)? {
                let source = Query::parse(
                    url::Url::parse(&url)
                        .ok()
                        .and_then(|u| u.query().map(str::to_string))
                        .as_deref()
                        .unwrap_or(""),
                )
                .get("source_news")
                .map(str::to_string);
                if twins || source.as_deref() != Some("webhooks") {
                    queue::enqueue(
                        tx,
                        &account.name,
                        &shapes::ipn(&url, topic, &id, &resource_url),
                        now,
                    )?;
                }
                if twins || source.as_deref() != Some("ipn") {
                    webhook(tx, &url)?;
                }
            }
            Ok::<_, StateError>(())
        })
        .await?;
    sb.queued();
    Ok(())
}
