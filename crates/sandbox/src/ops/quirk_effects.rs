//! What the quirks in force do: their settings read and changed for an
//! account or for all, and what each does to a notification as it is
//! queued (`before_queue`, `after_queue`). The 404s of eventual
//! consistency are answered where resources are read (`hidden`); the
//! IPN/webhook twins are made where a change is announced
//! (`changes::announce`).

use serde_json::{Map, Value, json};

use super::shapes;
use crate::model::{Form, Outgoing};
use crate::quirks::{HOLD_MS, QuirkSet, Quirks};
use crate::state::{Result, Tx, accounts, dispatches, quirks, resources};

/// The scope of the settings that hold for every account.
const GLOBAL: &str = "";

fn stored(tx: &Tx<'_>, scope: &str) -> Result<QuirkSet> {
    Ok(quirks::get(tx, scope)?
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default())
}

/// Adds `patch` to the settings of `account` (every account: `None`).
pub fn set(tx: &Tx<'_>, account: Option<&str>, patch: QuirkSet) -> Result<()> {
    let scope = account.unwrap_or(GLOBAL);
    let merged = stored(tx, scope)?.patched(patch);
    let text = serde_json::to_string(&merged).unwrap_or_else(|_| "{}".into());
    quirks::put(tx, scope, &text)
}

/// The quirks in force for `account`.
pub fn effective(tx: &Tx<'_>, account: &str) -> Result<Quirks> {
    Ok(Quirks::from_sets(stored(tx, GLOBAL)?, stored(tx, account)?))
}

/// `GET /sandbox/quirks`: the global settings, each account's own, and
/// what is in force for each account.
pub fn describe(tx: &Tx<'_>) -> Result<Value> {
    let global = stored(tx, GLOBAL)?;
    let mut own_settings = Map::new();
    let mut in_force = Map::new();
    for name in accounts::names(tx)? {
        let own = stored(tx, &name)?;
        if own != QuirkSet::default() {
            own_settings.insert(name.clone(), serde_json::to_value(own).unwrap_or_default());
        }
        in_force.insert(
            name,
            serde_json::to_value(Quirks::from_sets(global, own)).unwrap_or_default(),
        );
    }
    Ok(json!({
        "global": Quirks::from_sets(global, QuirkSet::default()),
        "accounts": own_settings,
        "effective": in_force,
    }))
}

/// The resource a notification's topic names, as `hidden` keys it.
fn resource_kind(topic: &str) -> Option<&'static str> {
    match topic {
        "payment" => Some("payment"),
        "merchant_order" | "topic_merchant_order_wh" => Some("merchant_order"),
        "chargebacks" | "topic_chargebacks_wh" => Some("chargeback"),
        "point_integration_ipn" | "point_integration_wh" | "payment_intent" => {
            Some("payment_intent")
        }
        "order" => Some("order"),
        // A fraud alert changes nothing it names.
        _ => None,
    }
}

/// Whether eventual consistency hides the resource at `now`.
pub fn hidden(tx: &Tx<'_>, kind: &str, id: &str, now: i64) -> Result<bool> {
    resources::hidden(tx, kind, id, now)
}

/// What the quirks do to `out` before it is queued: the signature left off
/// (unsigned) and the resource hidden for a while (eventual consistency).
pub fn before_queue(tx: &Tx<'_>, q: &Quirks, out: &mut Outgoing, now: i64) -> Result<()> {
    if q.unsigned && matches!(out.form, Form::Webhook | Form::IntentWebhook) {
        out.headers.retain(|(k, _)| k != "x-signature");
    }
    if q.eventual_consistency_ms > 0
        && let Some(kind) = resource_kind(&out.topic)
    {
        let until = now.saturating_add(q.eventual_consistency_ms as i64);
        resources::hide(tx, kind, &out.resource_id, until)?;
    }
    Ok(())
}

/// What the quirks do once `out` is queued as dispatch `id`: the unsent
/// notifications of its resource to its URL held and released newest
/// first (out of order), and a second copy queued (duplicates).
pub fn after_queue(
    tx: &Tx<'_>,
    q: &Quirks,
    account: &str,
    id: i64,
    out: &Outgoing,
    now: i64,
) -> Result<()> {
    if q.out_of_order {
        let held = dispatches::unsent(tx, account, &out.url, &out.topic, &out.resource_id)?;
        // The newest goes first once the hold ends, each older one a
        // millisecond later: the reverse of the order of the changes.
        for (i, held_id) in held.iter().enumerate() {
            dispatches::reschedule(tx, *held_id, now + HOLD_MS + i as i64)?;
        }
    }
    if q.duplicates {
        let mut headers = out.headers.clone();
        let signed = headers.iter().any(|(k, _)| k == "x-signature");
        match accounts::secret(tx, account)? {
            Some(secret) if signed => {
                let data_id = url::Url::parse(&out.url).ok().and_then(|u| {
                    u.query_pairs()
                        .find(|(k, _)| k == "data.id")
                        .map(|(_, v)| v.into_owned())
                });
                shapes::resign(
                    &mut headers,
                    &secret,
                    data_id.as_deref(),
                    (now / 1000).max(0) as u64,
                );
            }
            _ => {
                for (k, v) in headers.iter_mut() {
                    if k == "x-request-id" {
                        *v = shapes::random_hex(16);
                    }
                }
            }
        }
        // The copy goes with the original, whenever that is due.
        dispatches::duplicate(tx, id, &headers)?;
    }
    Ok(())
}
