//! `pointhook orders export-scenario ID`: what pointhook saw of one order in
//! production, as a sandbox fixture that replays it (docs/sandbox.md, "The
//! format"). The API's answers become seeded resources, each before the
//! notification that made pointhook read it; each notification is sent as
//! it came (query, content type, user agent, body), a signed one signed
//! anew by the sandbox; the time between notifications is waited; the
//! events pointhook decided are the `expect`.
//!
//! Secrets stay out: no header but the content type and the user agent is
//! kept (no signature, no token), and nothing of the configuration is read
//! but the accounts' names.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{Map, Value, json};

use pointhook::store::Store;
use pointhook::store::console_views::{Entry, Timeline};
use pointhook::store::views::DeliveryDetail;

/// The longest wait kept between two notifications, in platform seconds: a
/// replay of a day-long incident should not take a day.
const LONGEST_WAIT_SECS: i64 = 3600;

/// The data fields an expectation names, where the decision has them.
const MATCHED_FIELDS: &[&str] = &[
    "merchant_order_id",
    "order_id",
    "payment_id",
    "intent_id",
    "chargeback_id",
    "status",
];

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Any id the order is known by (merchant order, payment, intent,
    /// Orders API order, external reference).
    pub id: String,
    /// Write the fixture here instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub async fn run(store: &Store, accounts: Vec<String>, args: ExportArgs) -> anyhow::Result<()> {
    let found = store.search(accounts, args.id.clone()).await?;
    let Some(first) = found.first() else {
        anyhow::bail!(
            "nothing known by {:?}",
            pointhook_common::text::printable(&args.id).as_ref()
        );
    };
    let timeline = store
        .timeline(first.account.clone(), first.kind, first.id.clone())
        .await?
        .with_context(|| format!("nothing recorded of {} {}", first.kind, first.id))?;
    let mut deliveries = HashMap::new();
    for (_, entry) in &timeline.entries {
        if let Entry::Notification(d) = entry
            && let Some(detail) = store.get_delivery(d.id).await?
        {
            deliveries.insert(d.id, detail);
        }
    }
    let fixture = scenario(&timeline, &deliveries);
    let text = serde_json::to_string_pretty(&fixture)? + "\n";
    match args.out {
        Some(path) => {
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "wrote {}: run it with `pointhook sandbox trigger {}`",
                path.display(),
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// The fixture of `t`, with the full records of its notifications.
pub fn scenario(t: &Timeline, deliveries: &HashMap<i64, DeliveryDetail>) -> Value {
    let mut steps: Vec<Value> = Vec::new();
    let mut seeded: HashMap<(String, String), Value> = HashMap::new();
    let mut expect = Vec::new();
    // Notifications in the order they arrived.
    let mut notifications: Vec<(i64, &DeliveryDetail)> = t
        .entries
        .iter()
        .filter_map(|(at, e)| match e {
            Entry::Notification(d) if d.kind != "reconcile" => {
                deliveries.get(&d.id).map(|full| (*at, full))
            }
            _ => None,
        })
        .collect();
    notifications.sort_by_key(|(_, d)| d.summary.id);
    // A read is seeded before the notification that made pointhook do it:
    // the latest of its job's notifications that came before it (or its
    // job's first), else the latest notification before it.
    let before = |job: i64, at: i64| {
        let of_job = |n: &(i64, &DeliveryDetail)| n.1.job.as_ref().is_some_and(|j| j.id == job);
        notifications
            .iter()
            .rposition(|n| of_job(n) && n.0 <= at)
            .or_else(|| notifications.iter().position(of_job))
            .or_else(|| notifications.iter().rposition(|n| n.0 <= at))
            .unwrap_or(0)
    };
    let mut seeds: Vec<Vec<(String, String, Value)>> = vec![Vec::new(); notifications.len()];
    for (at, entry) in &t.entries {
        match entry {
            Entry::ApiCall(f) if f.status == 200 => {
                let (Some(kind), Some(body)) = (seed_kind(&f.endpoint), &f.body) else {
                    continue;
                };
                if let Some(window) = seeds.get_mut(before(f.job_id, *at)) {
                    window.retain(|(k, id, _)| (k.as_str(), id.as_str()) != (kind, &f.resource_id));
                    window.push((kind.to_string(), f.resource_id.clone(), body.clone()));
                }
            }
            Entry::Decision(d) if d.event_id.is_some() => {
                let data = d.data.as_ref().and_then(Value::as_object);
                let fields: Map<String, Value> = MATCHED_FIELDS
                    .iter()
                    .filter_map(|k| Some((k.to_string(), data?.get(*k)?.clone())))
                    .collect();
                expect.push(json!({"event": d.event_type, "where": fields}));
            }
            _ => {}
        }
    }
    let mut last_at: Option<i64> = None;
    for (i, (at, d)) in notifications.iter().enumerate() {
        if let Some(before) = last_at {
            let secs = ((at - before) / 1000).min(LONGEST_WAIT_SECS);
            if secs >= 1 {
                steps.push(json!({"wait": {"seconds": secs}}));
            }
        }
        last_at = Some(*at);
        for (kind, id, body) in &seeds[i] {
            let key = (kind.clone(), id.clone());
            if seeded.get(&key) == Some(body) {
                continue;
            }
            steps.push(json!({"seed": {"kind": kind, "id": id, "body": body}}));
            seeded.insert(key, body.clone());
        }
        steps.push(json!({
            "say": format!("notification #{} as it came ({} {})", d.summary.id, d.summary.topic, d.summary.resource_id),
            "notify": notify(d),
        }));
    }
    json!({
        "_meta": {"format": 1},
        "name": name_of(&t.id),
        "description": format!(
            "Recorded from {} {} of account {}: {} notification(s) and the API's answers, as pointhook saw them.",
            t.kind.replace('_', " "), t.id, t.account, notifications.len()
        ),
        "steps": steps,
        "expect": expect,
    })
}

/// The sandbox's resource kind of an API read.
fn seed_kind(endpoint: &str) -> Option<&'static str> {
    Some(match endpoint {
        "payment" => "payment",
        "merchant_order" => "merchant_order",
        "chargeback" => "chargeback",
        "payment_intent" => "payment_intent",
        "platform_order" => "order",
        _ => return None,
    })
}

/// A notification step: sent as recorded, to the URL it was sent to.
fn notify(d: &DeliveryDetail) -> Value {
    let mut headers = Map::new();
    for name in ["content-type", "user-agent"] {
        if let Some(v) = d.headers.get(name).and_then(Value::as_str) {
            headers.insert(name.into(), v.into());
        }
    }
    let mut n = json!({"query": d.query, "headers": headers});
    if d.summary.kind != "ipn" {
        n["to"] = "webhook_url".into();
    }
    if matches!(d.summary.signature, "valid" | "invalid" | "valid_unbound") {
        n["sign"] = true.into();
    }
    // A body cut short was never read again (an IPN is read from its
    // query); a webhook's is rebuilt from what it named.
    match (&d.body, d.body_size) {
        (Some(body), None) => n["body"] = body.clone().into(),
        _ if d.summary.kind == "webhook" => {
            n["body"] = json!({
                "action": "updated",
                "type": d.summary.topic,
                "data": {"id": d.summary.resource_id},
            })
        }
        _ => {}
    }
    n
}

/// A fixture's name: lower-case letters, digits and dashes.
fn name_of(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("incident-{}", clean.trim_matches('-'))
}
