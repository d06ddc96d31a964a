//! `pointhook explain ID`: why an order is where it is. Finds the order by
//! any id it is known by (as the console's search box does), then tells its
//! story oldest first: each notification, each API answer, each decision
//! with the rule's reason, each event with its state and attempts at each
//! destination, each review and each person's action.

use anyhow::Context;
use clap::Args;
use pointhook::store::EventSummary;
use pointhook::store::Store;
use pointhook::store::console_views::{AttemptView, Entry, Timeline};
use pointhook_common::text::printable;

use super::render::{Format, print, say};

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Any id the order is known by: merchant order, payment, payment
    /// intent, Orders API order, external reference.
    pub id: String,
    /// The whole timeline as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(store: &Store, accounts: Vec<String>, args: ExplainArgs) -> anyhow::Result<()> {
    let found = store.search(accounts, args.id.clone()).await?;
    let Some(first) = found.first() else {
        anyhow::bail!("nothing known by {:?}", printable(&args.id).as_ref());
    };
    let timeline = store
        .timeline(first.account.clone(), first.kind, first.id.clone())
        .await?
        .with_context(|| format!("nothing recorded of {} {}", first.kind, first.id))?;
    if args.json {
        return print(&Format { json: true }, &timeline, |_| String::new());
    }
    if found.len() > 1 {
        say(&format!(
            "{} orders match; the first of them (others: {})\n",
            found.len(),
            found[1..]
                .iter()
                .map(|f| format!("{} {}", f.kind, printable(&f.id)))
                .collect::<Vec<_>>()
                .join(", ")
        ))?;
    }
    say(&story(&timeline, first.matched))
}

/// The timeline as lines for a person: one line per entry, whatever its
/// texts hold (each is escaped whole, line breaks included, so no text from
/// outside can print a line that looks like an entry of its own).
pub fn story(t: &Timeline, matched: &str) -> String {
    let mut out = format!(
        "{} {} (account {}; found by its {matched})\n",
        t.kind.replace('_', " "),
        printable(&t.id),
        printable(&t.account)
    );
    if let Some(s) = &t.state {
        let mut facts = Vec::new();
        if let (Some(paid), Some(total)) = (&s.paid_amount, &s.total_amount) {
            facts.push(format!("paid {paid} of {total}"));
        }
        for (what, at) in [
            ("released", &s.released_at),
            ("blocked", &s.blocked_at),
            ("at risk", &s.at_risk_at),
        ] {
            if let Some(at) = at {
                facts.push(format!("{what} {at}"));
            }
        }
        if !facts.is_empty() {
            out.push_str(&format!("now: {}\n", printable(&facts.join("; "))));
        }
    }
    out.push('\n');
    for (_, entry) in &t.entries {
        let (at, what, line) = describe(entry);
        out.push_str(&format!(
            "{}  {what:<12}  {}\n",
            printable(&at),
            printable(&line)
        ));
    }
    out
}

fn describe(entry: &Entry) -> (String, &'static str, String) {
    match entry {
        Entry::Notification(d) => (
            d.received_at.clone(),
            "notification",
            format!(
                "#{} {} {} {} (signature: {}){}",
                d.id,
                d.kind,
                d.topic,
                d.resource_id,
                d.signature,
                d.duplicate_of
                    .map(|o| format!(", a repeat of #{o}"))
                    .unwrap_or_default()
            ),
        ),
        Entry::ApiCall(f) => (
            f.at.clone(),
            "API answer",
            format!(
                "{} {}: {} in {} ms",
                f.endpoint,
                f.resource_id,
                match f.status {
                    0 => "no answer".to_string(),
                    s => s.to_string(),
                },
                f.elapsed_ms
            ),
        ),
        Entry::Decision(d) => (
            d.created_at.clone(),
            "decision",
            format!(
                "{} ({}): {}",
                d.event_type,
                d.key,
                d.reason.as_deref().unwrap_or("no reason recorded")
            ),
        ),
        Entry::Event { event, attempts } => (
            event.created_at.clone(),
            "event",
            format!(
                "{} {} {}{}",
                event.event_type,
                event.id,
                at_each(event, attempts),
                event
                    .last_error
                    .as_ref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ),
        ),
        Entry::Review(r) => (
            r.created_at.clone(),
            "fraud review",
            format!("review {} {}: {}", r.id, r.state, r.reason),
        ),
        Entry::Action(a) => (
            a.at.clone(),
            "action",
            format!(
                "{} by {} ({}): {}",
                a.action,
                a.actor,
                a.via,
                a.result.as_deref().unwrap_or(a.outcome)
            ),
        ),
    }
}

/// An event's state at each destination with the attempts made there
/// ("delivered to shop after 1 attempt, gave up at erp after 3
/// attempts"); each destination counts its own.
fn at_each(event: &EventSummary, attempts: &[AttemptView]) -> String {
    if event.destinations.is_empty() {
        return format!("{} after {} attempt(s)", event.state, event.attempts);
    }
    event
        .destinations
        .iter()
        .map(|d| {
            let made = attempts
                .iter()
                .filter(|a| a.destination == d.destination)
                .count()
                .max(d.attempts as usize);
            match made {
                0 => d.words(),
                1 => format!("{} after 1 attempt", d.words()),
                n => format!("{} after {n} attempts", d.words()),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
