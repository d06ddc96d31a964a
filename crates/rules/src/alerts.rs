//! When a person is told: which facts need a person
//! (`attention`, with the thresholds of `[alert_rules]`), and, against the
//! incidents told of already, what to open, send and resolve (`plan`):
//! once per incident, at once for what puts money or goods at stake, dead
//! jobs of a burst grouped in one message per digest, and a resolution for
//! each incident that was told.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::domain::attention::{AlertKind, Attention, Incident, Message, Severity};

/// The thresholds of `[alert_rules]`, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub digest_ms: i64,
    pub destination_failing_ms: i64,
    pub events_waiting_ms: i64,
    pub storage_not_ready_ms: i64,
}

/// A destination as the store sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationFacts {
    pub name: String,
    /// Disabled, and why.
    pub disabled: Option<String>,
    /// Every attempt has failed since (unix ms).
    pub failing_since: Option<i64>,
    /// Its oldest event still to deliver (unix ms).
    pub oldest_waiting_at: Option<i64>,
}

/// An account that expects to hear from the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountFacts {
    pub name: String,
    pub last_heard_at: Option<i64>,
    /// `expect_notifications_within_secs`, in ms.
    pub expect_within_ms: i64,
}

/// Everything the alerter read, at `now`.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub now: i64,
    /// Items that need a person as they are (held reviews, orders released
    /// before a fraud alert or at risk, dead jobs).
    pub items: Vec<Attention>,
    pub destinations: Vec<DestinationFacts>,
    /// Changes reconciliation found missed in the last hour.
    pub missed_last_hour: u64,
    pub accounts: Vec<AccountFacts>,
    /// No commit has succeeded since the first that failed (unix ms).
    pub storage_failing_since: Option<i64>,
    /// Whether those failures are for a full disk.
    pub storage_disk_full: bool,
}

/// Everything that needs a person now, thresholds applied.
pub fn attention(f: &Facts, t: &Thresholds) -> Vec<Attention> {
    let mut out = f.items.clone();
    let since = |at: i64| format_age(f.now - at);
    for d in &f.destinations {
        let path = format!("/destinations/{}", d.name);
        match (&d.disabled, d.failing_since) {
            (Some(why), _) => out.push(Attention {
                kind: AlertKind::DestinationFailing,
                key: format!("destination:{}", d.name),
                text: format!("destination {} is disabled: {why}", d.name),
                path: path.clone(),
            }),
            (None, Some(at)) if f.now - at >= t.destination_failing_ms => out.push(Attention {
                kind: AlertKind::DestinationFailing,
                key: format!("destination:{}", d.name),
                text: format!(
                    "destination {} has failed every attempt for {}",
                    d.name,
                    since(at)
                ),
                path: path.clone(),
            }),
            _ => {}
        }
        if let Some(at) = d.oldest_waiting_at
            && f.now - at >= t.events_waiting_ms
        {
            out.push(Attention {
                kind: AlertKind::EventsWaiting,
                key: format!("waiting:{}", d.name),
                text: format!(
                    "destination {}'s oldest event has waited {}",
                    d.name,
                    since(at)
                ),
                path,
            });
        }
    }
    if f.missed_last_hour > 0 {
        out.push(Attention {
            kind: AlertKind::MissedNotifications,
            key: "missed".into(),
            text: format!(
                "reconciliation found {} in the last hour that no notification announced",
                counted(f.missed_last_hour as usize, "change", "changes")
            ),
            path: "/?missed".into(),
        });
    }
    for a in &f.accounts {
        let quiet = match a.last_heard_at {
            Some(at) => f.now - at >= a.expect_within_ms,
            None => false,
        };
        if quiet {
            out.push(Attention {
                kind: AlertKind::PlatformSilent,
                key: format!("silent:{}", a.name),
                text: format!(
                    "account {} has heard nothing from the platform for {}",
                    a.name,
                    since(a.last_heard_at.unwrap_or(f.now))
                ),
                path: "/health".into(),
            });
        }
    }
    if let Some(at) = f.storage_failing_since
        && f.now - at >= t.storage_not_ready_ms
    {
        out.push(Attention {
            kind: AlertKind::StorageNotReady,
            key: "storage".into(),
            text: format!(
                "{}storage has taken no write for {}: notifications are answered 503",
                if f.storage_disk_full {
                    "disk full: "
                } else {
                    ""
                },
                since(at)
            ),
            path: "/health".into(),
        });
    }
    out
}

/// What the alerter does in one round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// New incidents to record (not yet told).
    pub open: Vec<Incident>,
    /// Messages to send now; their opening keys are then marked told.
    pub send: Vec<Message>,
    /// Incidents that no longer stand, to close (told or not).
    pub resolve: Vec<(AlertKind, String)>,
}

/// Against `open` incidents, what `now`'s attention means. `last_sent`: when
/// a message of each kind was last sent (the dead jobs' digest window).
pub fn plan(
    now: i64,
    current: &[Attention],
    open: &[Incident],
    last_sent: &HashMap<AlertKind, i64>,
    t: &Thresholds,
) -> Plan {
    let mut plan = Plan::default();
    let standing: HashSet<(AlertKind, &str)> =
        current.iter().map(|a| (a.kind, a.key.as_str())).collect();
    let known: HashSet<(AlertKind, &str)> = open.iter().map(|i| (i.kind, i.key.as_str())).collect();
    let mut waiting: Vec<Incident> = Vec::new();
    for a in current {
        if !known.contains(&(a.kind, a.key.as_str())) {
            let incident = Incident {
                kind: a.kind,
                key: a.key.clone(),
                text: a.text.clone(),
                path: a.path.clone(),
                opened_at: now,
                notified_at: None,
            };
            plan.open.push(incident.clone());
            waiting.push(incident);
        }
    }
    let mut resolved: BTreeMap<AlertKind, Vec<&Incident>> = BTreeMap::new();
    for i in open {
        if standing.contains(&(i.kind, i.key.as_str())) {
            if i.notified_at.is_none() {
                waiting.push(i.clone());
            }
        } else {
            plan.resolve.push((i.kind, i.key.clone()));
            if i.notified_at.is_some() {
                resolved.entry(i.kind).or_default().push(i);
            }
        }
    }
    // Openings: at once, one message each; dead jobs grouped per digest;
    // held reviews: the first of a burst at once, the rest of it in one
    // digest once the window since the last message has passed (a storm of
    // forged alerts is one message, then one digest).
    let mut dead: Vec<Incident> = Vec::new();
    let mut held: Vec<Incident> = Vec::new();
    for i in waiting {
        match i.kind {
            AlertKind::DeadJobs => dead.push(i),
            AlertKind::FraudReviewHeld => held.push(i),
            _ => plan.send.push(opening(std::slice::from_ref(&i))),
        }
    }
    let window_open = |kind| {
        last_sent
            .get(&kind)
            .is_none_or(|at| now - at >= t.digest_ms)
    };
    if !dead.is_empty() && window_open(AlertKind::DeadJobs) {
        plan.send.push(opening(&dead));
    }
    if !held.is_empty() {
        held.sort_by_key(|i| i.opened_at);
        let since_told = last_sent
            .get(&AlertKind::FraudReviewHeld)
            .map(|at| now - at);
        match since_told {
            _ if t.digest_ms == 0 => {
                for i in &held {
                    plan.send.push(opening(std::slice::from_ref(i)));
                }
            }
            // Told lately: the rest of the burst waits for the digest.
            Some(ms) if ms < t.digest_ms => {}
            // The burst goes on: what waited, in one digest.
            Some(ms) if ms < 2 * t.digest_ms && held.len() > 1 => plan.send.push(opening(&held)),
            // Calm before: the first at once.
            _ => plan.send.push(opening(&held[..1])),
        }
    }
    for (_, incidents) in resolved {
        plan.send.push(resolution(&incidents));
    }
    plan
}

/// "1 change", "3 changes".
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The kind's title, for `n` items of it.
fn title(kind: AlertKind, n: usize) -> &'static str {
    match kind {
        AlertKind::DeadJobs if n == 1 => "job gave up",
        AlertKind::DeadJobs => "jobs gave up",
        AlertKind::FraudReviewHeld => "fraud alert held for you",
        AlertKind::ReleasedBeforeFraudAlert => "order released before a fraud alert",
        AlertKind::OrderAtRisk => "order at risk (chargeback after release)",
        AlertKind::DestinationFailing => "destination failing",
        AlertKind::EventsWaiting => "events waiting",
        AlertKind::MissedNotifications => "notifications missed",
        AlertKind::PlatformSilent => "platform silent",
        AlertKind::StorageNotReady => "storage not ready",
        AlertKind::Held if n == 1 => "decision held for you",
        AlertKind::Held => "decisions held for you",
    }
}

/// Items a message lists at most; the rest are counted ("and 480 more").
pub const MAX_ITEMS: usize = 20;

/// Where several items of a kind are listed: the inbox, whose dead jobs
/// are grouped by cause with a retry-all per group.
fn list_path(kind: AlertKind, items: &[&Incident]) -> String {
    match (kind, items) {
        (_, [one]) => one.path.clone(),
        (AlertKind::DeadJobs, _) => "/#dead-jobs".into(),
        (AlertKind::FraudReviewHeld, _) => "/#reviews".into(),
        (AlertKind::Held, _) => "/#holds".into(),
        (AlertKind::DestinationFailing | AlertKind::EventsWaiting, _) => "/destinations".into(),
        _ => "/".into(),
    }
}

/// The incidents' texts, at most `MAX_ITEMS` of them.
fn items(incidents: &[&Incident]) -> Vec<String> {
    let mut out: Vec<String> = incidents
        .iter()
        .take(MAX_ITEMS)
        .map(|i| i.text.clone())
        .collect();
    if incidents.len() > MAX_ITEMS {
        out.push(format!("and {} more", incidents.len() - MAX_ITEMS));
    }
    out
}

fn opening(incidents: &[Incident]) -> Message {
    let refs: Vec<&Incident> = incidents.iter().collect();
    let kind = incidents[0].kind;
    let text = match incidents {
        [one] => format!("{}: {}", title(kind, 1), one.text),
        many => format!(
            "{} {}: {} (and {} more)",
            many.len(),
            title(kind, many.len()),
            many[0].text,
            many.len() - 1
        ),
    };
    Message {
        kind,
        severity: kind.severity(),
        text,
        path: list_path(kind, &refs),
        items: items(&refs),
        keys: incidents.iter().map(|i| i.key.clone()).collect(),
        resolved: false,
    }
}

fn resolution(incidents: &[&Incident]) -> Message {
    let kind = incidents[0].kind;
    let text = match incidents {
        [one] => format!("resolved, {}: {}", title(kind, 1), one.text),
        many => format!("resolved, {} {}", many.len(), title(kind, many.len())),
    };
    Message {
        kind,
        severity: Severity::Info,
        text,
        path: list_path(kind, incidents),
        items: items(incidents),
        keys: incidents.iter().map(|i| i.key.clone()).collect(),
        resolved: true,
    }
}

/// A resolution of one incident that a person's action resolved: says
/// what was done and by whom (`how`), not the question it was.
pub fn resolved_by(m: &mut Message, how: &str) {
    if m.resolved && m.keys.len() == 1 {
        m.text = format!("resolved, {}: {how}", title(m.kind, 1));
        m.items = vec![how.to_string()];
    }
}

/// What a read cut short did not list still stands: an open incident of
/// a kind in `cut_short` (its list reached the read's bound) that is not
/// in `current` is kept, not resolved, so that a thousand dead jobs do
/// not resolve and open again as the bound slides over them.
pub fn carry_unlisted(current: &mut Vec<Attention>, open: &[Incident], cut_short: &[AlertKind]) {
    let listed: HashSet<(AlertKind, String)> =
        current.iter().map(|a| (a.kind, a.key.clone())).collect();
    for i in open {
        if cut_short.contains(&i.kind) && !listed.contains(&(i.kind, i.key.clone())) {
            current.push(Attention {
                kind: i.kind,
                key: i.key.clone(),
                text: i.text.clone(),
                path: i.path.clone(),
            });
        }
    }
}

/// "12 minutes", "3 hours", "45 seconds".
fn format_age(ms: i64) -> String {
    let secs = (ms / 1000).max(0);
    match secs {
        s if s < 120 => format!("{s} seconds"),
        s if s < 2 * 3600 => format!("{} minutes", s / 60),
        s => format!("{} hours", s / 3600),
    }
}
