//! `pointhook reconcile`: a one-off backfill. The same pass as the
//! sweeper's over a window given (after an outage, on first install),
//! written into the database a running server uses; its worker picks the
//! jobs up.

use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use jiff::Timestamp;

use pointhook::api::ApiClient;
use pointhook::config::{Account, Config};
use pointhook::reconcile::{Mode, Pass, Report};
use pointhook::store::Store;

use super::progress::Progress;

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Start of the window: an RFC 3339 time (2026-11-20T00:00:00Z).
    #[arg(long)]
    since: Timestamp,
    /// End of the window [default: now].
    #[arg(long)]
    until: Option<Timestamp>,
    /// Only this account [default: every account].
    #[arg(long)]
    account: Option<String>,
    /// Count what would be enqueued; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(
    config: Config,
    resolved: Vec<Account>,
    args: ReconcileArgs,
) -> anyhow::Result<()> {
    let until = args.until.unwrap_or_else(Timestamp::now);
    if args.since >= until {
        anyhow::bail!("--since ({}) must be before --until ({until})", args.since);
    }
    let accounts: Vec<String> = match &args.account {
        Some(a) if config.accounts.iter().any(|c| &c.name == a) => vec![a.clone()],
        Some(a) => anyhow::bail!(
            "no account {:?} in the configuration",
            pointhook_common::text::printable(a)
        ),
        None => config.accounts.iter().map(|a| a.name.clone()).collect(),
    };
    let rules = pointhook::rules::decision_rules(config.event_policy());
    let store = Store::open_client(&config.location()?, rules)
        .await
        .context("cannot open the database")?;
    let api = Arc::new(
        ApiClient::new(
            &config.api,
            &resolved,
            Arc::new(pointhook::metrics::Metrics::new()),
        )
        .context("cannot build the API client")?,
    );
    let mut out = serde_json::Map::new();
    for account in &accounts {
        let bar = Progress::new("reconciling", "changes")?;
        let progress = |r: &Report| {
            let note = format!("{account}: {} to enqueue", r.missed());
            bar.set(r.found, r.listed, &note);
        };
        let pass = Pass {
            store: &store,
            api: &api,
            clock: &pointhook_common::clock::SystemClock,
            account,
            mode: Mode::Backfill {
                dry_run: args.dry_run,
            },
            on_missed: &|_, _| {},
            progress: Some(&progress),
            intents_first_seen: None,
        };
        let report = pass
            .run(args.since, until)
            .await
            .with_context(|| format!("reconciliation of account {account:?} failed"))?;
        bar.finish();
        if args.json {
            out.insert(account.clone(), serde_json::to_value(&report)?);
        } else {
            println!(
                "{account}: {} changes found, {} already known, {} {}{}",
                report.found,
                report.known,
                report.missed(),
                if args.dry_run {
                    "would be enqueued"
                } else {
                    "enqueued"
                },
                by_topic(&report)
            );
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "since": args.since.to_string(),
                "until": until.to_string(),
                "dry_run": args.dry_run,
                "accounts": out,
            })
        );
    }
    store.close().await;
    Ok(())
}

fn by_topic(r: &Report) -> String {
    if r.enqueued.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = r.enqueued.iter().map(|(t, n)| format!("{t} {n}")).collect();
    format!(" ({})", parts.join(", "))
}
