//! The platform's quirks, on demand: each off by default, set for every
//! account or for one (`POST /sandbox/quirks`, `--quirk NAME[=VALUE]`).
//! This module owns the settings (a table, cleared at each start: they are
//! about this run) and what each quirk does to a notification as it is
//! queued (`apply`). The 404s of eventual consistency are answered where
//! resources are read (`hidden`); the IPN/webhook twins are made where a
//! change is announced (`changes::announce`).

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::db::DispatchState;
use super::dispatch::Form;
use super::shapes::{self, Outgoing};

/// How long an out-of-order notification is held (sandbox time, not
/// scaled: a sandbox choice, not a platform timing).
pub const HOLD_MS: i64 = 1_000;
/// Eventual consistency longer than this is refused (one hour).
pub const MAX_EVENTUAL_MS: u64 = 3_600_000;

/// Quirk settings as given: `None` leaves a field to the global setting
/// (for an account) or off (globally).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuirkSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eventual_consistency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twins: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsigned: Option<bool>,
}

impl QuirkSet {
    /// `self` with the fields `patch` sets replaced.
    pub fn patched(self, patch: QuirkSet) -> QuirkSet {
        QuirkSet {
            eventual_consistency_ms: patch
                .eventual_consistency_ms
                .or(self.eventual_consistency_ms),
            twins: patch.twins.or(self.twins),
            out_of_order: patch.out_of_order.or(self.out_of_order),
            duplicates: patch.duplicates.or(self.duplicates),
            unsigned: patch.unsigned.or(self.unsigned),
        }
    }

    /// Sets one quirk from `--quirk NAME[=VALUE]`.
    pub fn parse_flag(self, flag: &str) -> Result<QuirkSet, String> {
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (flag.trim(), None),
        };
        let name = name.replace('-', "_");
        let boolean = |v: Option<&str>| match v {
            None | Some("true" | "on" | "1") => Ok(true),
            Some("false" | "off" | "0") => Ok(false),
            Some(other) => Err(format!("--quirk {name}={other}: expected true or false")),
        };
        let mut patch = QuirkSet::default();
        match name.as_str() {
            "eventual_consistency_ms" | "eventual_consistency" => {
                let ms = value
                    .and_then(|v| v.parse::<u64>().ok())
                    .filter(|ms| *ms <= MAX_EVENTUAL_MS)
                    .ok_or_else(|| {
                        format!(
                            "--quirk {name}=MS: expected milliseconds, at most {MAX_EVENTUAL_MS}"
                        )
                    })?;
                patch.eventual_consistency_ms = Some(ms);
            }
            "twins" => patch.twins = Some(boolean(value)?),
            "out_of_order" => patch.out_of_order = Some(boolean(value)?),
            "duplicates" => patch.duplicates = Some(boolean(value)?),
            "unsigned" => patch.unsigned = Some(boolean(value)?),
            other => {
                return Err(format!(
                    "unknown quirk {other:?} (known: eventual_consistency_ms=MS, twins, out_of_order, duplicates, unsigned)"
                ));
            }
        }
        Ok(self.patched(patch))
    }

    /// Checks what the control API was given.
    pub fn check(&self) -> Result<(), String> {
        match self.eventual_consistency_ms {
            Some(ms) if ms > MAX_EVENTUAL_MS => Err(format!(
                "eventual_consistency_ms must be at most {MAX_EVENTUAL_MS} (an hour)"
            )),
            _ => Ok(()),
        }
    }
}

/// The quirks in force for one account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Quirks {
    pub eventual_consistency_ms: u64,
    pub twins: bool,
    pub out_of_order: bool,
    pub duplicates: bool,
    pub unsigned: bool,
}

impl Quirks {
    fn from_sets(global: QuirkSet, account: QuirkSet) -> Quirks {
        let s = global.patched(account);
        Quirks {
            eventual_consistency_ms: s.eventual_consistency_ms.unwrap_or(0),
            twins: s.twins.unwrap_or(false),
            out_of_order: s.out_of_order.unwrap_or(false),
            duplicates: s.duplicates.unwrap_or(false),
            unsigned: s.unsigned.unwrap_or(false),
        }
    }
}

/// The scope of the settings that hold for every account.
const GLOBAL: &str = "";

fn stored(conn: &Connection, scope: &str) -> rusqlite::Result<QuirkSet> {
    let text: Option<String> = conn
        .query_row(
            "SELECT settings FROM quirks WHERE scope = ?1",
            [scope],
            |r| r.get(0),
        )
        .optional()?;
    Ok(text
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default())
}

/// Adds `patch` to the settings of `account` (every account: `None`).
pub fn set(conn: &Connection, account: Option<&str>, patch: QuirkSet) -> rusqlite::Result<()> {
    let scope = account.unwrap_or(GLOBAL);
    let merged = stored(conn, scope)?.patched(patch);
    let text = serde_json::to_string(&merged).unwrap_or_else(|_| "{}".into());
    conn.execute(
        "INSERT INTO quirks (scope, settings) VALUES (?1, ?2)
         ON CONFLICT (scope) DO UPDATE SET settings = excluded.settings",
        params![scope, text],
    )?;
    Ok(())
}

/// Every quirk off, everywhere.
pub fn clear(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM quirks", [])?;
    Ok(())
}

/// The quirks in force for `account`.
pub fn effective(conn: &Connection, account: &str) -> rusqlite::Result<Quirks> {
    Ok(Quirks::from_sets(
        stored(conn, GLOBAL)?,
        stored(conn, account)?,
    ))
}

/// `GET /sandbox/quirks`: the global settings, each account's own, and
/// what is in force for each account.
pub fn describe(conn: &Connection) -> rusqlite::Result<serde_json::Value> {
    let global = stored(conn, GLOBAL)?;
    let names: Vec<String> = conn
        .prepare("SELECT name FROM accounts ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut accounts = serde_json::Map::new();
    let mut in_force = serde_json::Map::new();
    for name in names {
        let own = stored(conn, &name)?;
        if own != QuirkSet::default() {
            accounts.insert(name.clone(), serde_json::to_value(own).unwrap_or_default());
        }
        in_force.insert(
            name,
            serde_json::to_value(Quirks::from_sets(global, own)).unwrap_or_default(),
        );
    }
    Ok(serde_json::json!({
        "global": Quirks::from_sets(global, QuirkSet::default()),
        "accounts": accounts,
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
pub fn hidden(conn: &Connection, kind: &str, id: &str, now: i64) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) > 0 FROM unseen WHERE kind = ?1 AND id = ?2 AND until > ?3",
        params![kind, id, now],
        |r| r.get(0),
    )
}

/// What the quirks do to `out` before it is queued: the signature left off
/// (unsigned) and the resource hidden for a while (eventual consistency).
pub fn before_queue(
    conn: &Connection,
    q: &Quirks,
    out: &mut Outgoing,
    now: i64,
) -> rusqlite::Result<()> {
    if q.unsigned && matches!(out.form, Form::Webhook | Form::IntentWebhook) {
        out.headers.retain(|(k, _)| k != "x-signature");
    }
    if q.eventual_consistency_ms > 0
        && let Some(kind) = resource_kind(&out.topic)
    {
        let until = now.saturating_add(q.eventual_consistency_ms as i64);
        conn.execute(
            "INSERT INTO unseen (kind, id, until) VALUES (?1, ?2, ?3)
             ON CONFLICT (kind, id) DO UPDATE SET until = max(until, excluded.until)",
            params![kind, out.resource_id, until],
        )?;
    }
    Ok(())
}

/// What the quirks do once `out` is queued as dispatch `id`: the unsent
/// notifications of its resource to its URL held and released newest
/// first (out of order), and a second copy queued (duplicates).
pub fn after_queue(
    conn: &Connection,
    q: &Quirks,
    account: &str,
    id: i64,
    out: &Outgoing,
    now: i64,
) -> rusqlite::Result<()> {
    if q.out_of_order {
        let held: Vec<i64> = conn
            .prepare(
                "SELECT id FROM dispatches
                 WHERE account = ?1 AND url = ?2 AND topic = ?3 AND resource_id = ?4
                   AND state = ?5 AND attempts = 0
                 ORDER BY id DESC",
            )?
            .query_map(
                params![
                    account,
                    out.url,
                    out.topic,
                    out.resource_id,
                    DispatchState::Pending
                ],
                |r| r.get(0),
            )?
            .collect::<rusqlite::Result<_>>()?;
        // The newest goes first once the hold ends, each older one a
        // millisecond later: the reverse of the order of the changes.
        for (i, held_id) in held.iter().enumerate() {
            let at = now + HOLD_MS + i as i64;
            conn.execute(
                "UPDATE dispatches SET first_at = ?2, next_due_at = ?2 WHERE id = ?1",
                params![held_id, at],
            )?;
        }
    }
    if q.duplicates {
        let secret: Option<String> = conn
            .query_row(
                "SELECT webhook_secret FROM accounts WHERE name = ?1",
                [account],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        let mut headers = out.headers.clone();
        let signed = headers.iter().any(|(k, _)| k == "x-signature");
        match secret {
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
        conn.execute(
            "INSERT INTO dispatches (account, url, form, topic, resource_id, body, headers, first_at, next_due_at, state)
             SELECT account, url, form, topic, resource_id, body, ?2, first_at, next_due_at, state
             FROM dispatches WHERE id = ?1",
            params![id, super::dispatch::headers_json(&headers)],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_set_quirks_and_name_what_is_wrong() {
        let q = QuirkSet::default()
            .parse_flag("twins")
            .and_then(|q| q.parse_flag("eventual-consistency-ms=1500"))
            .and_then(|q| q.parse_flag("duplicates=false"))
            .unwrap();
        let q = Quirks::from_sets(q, QuirkSet::default());
        assert!(q.twins && !q.duplicates && !q.unsigned);
        assert_eq!(q.eventual_consistency_ms, 1500);
        for bad in [
            "bogus",
            "twins=maybe",
            "eventual_consistency_ms",
            "eventual_consistency_ms=-3",
            "eventual_consistency_ms=99999999999",
        ] {
            assert!(QuirkSet::default().parse_flag(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_account_setting_wins_over_the_global_one() {
        let global = QuirkSet {
            twins: Some(true),
            unsigned: Some(true),
            ..QuirkSet::default()
        };
        let own = QuirkSet {
            twins: Some(false),
            ..QuirkSet::default()
        };
        let q = Quirks::from_sets(global, own);
        assert!(!q.twins && q.unsigned);
    }
}
