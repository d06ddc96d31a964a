//! `pointhook destinations list|show|enable|disable|recover` on the store
//! the server uses (its outbox sees the change at its next round), and
//! `pointhook secret generate`.

use std::time::Duration;

use anyhow::bail;
use clap::Subcommand;
use pointhook::actions::Done;
use pointhook::operators::Actor;
use pointhook::store::{DestinationView, Store, unix_ms_now};

use super::operators::{acting, finished};
use super::render::{Format, fields, print, table};

#[derive(Debug, Subcommand)]
pub enum Destinations {
    /// Every configured destination: state, backlog, oldest event.
    List {
        #[command(flatten)]
        format: Format,
    },
    /// One destination, with why it is disabled and its last recovery.
    Show {
        name: String,
        #[command(flatten)]
        format: Format,
    },
    /// Send it events again (what was paused waits for `recover`).
    Enable { name: String },
    /// Stop sending it events: they wait, paused.
    Disable {
        name: String,
        #[arg(long, default_value = "disabled by a person (CLI)")]
        reason: String,
    },
    /// Send again every event for it that failed, was paused or gave up
    /// since a time (whenever it was decided), oldest first, and follow
    /// the progress.
    Recover {
        name: String,
        /// RFC 3339, e.g. 2026-11-20T00:00:00Z; without it, since the
        /// failure began (`show` prints it as "recover since").
        #[arg(long, value_parser = humantime::parse_rfc3339_weak)]
        since: Option<std::time::SystemTime>,
        /// Queue them and return, without following the progress.
        #[arg(long)]
        no_wait: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Print a new Standard Webhooks secret (`whsec_` and 32 random bytes).
    Generate,
}

pub fn secret(cmd: SecretCommand) {
    match cmd {
        SecretCommand::Generate => println!("{}", pointhook::config::SigningKey::generate()),
    }
}

pub async fn run(store: &Store, cmd: Destinations) -> anyhow::Result<()> {
    let now = unix_ms_now();
    match cmd {
        Destinations::List { format } => {
            let rows = store.destinations(now).await?;
            print(&format, &rows, |rows| list_table(rows))
        }
        Destinations::Show { name, format } => {
            let Some(d) = store.destination(&name, now).await? else {
                bail!("no destination {name:?} is configured");
            };
            print(&format, &d, show)
        }
        Destinations::Enable { name } => {
            known(store, &name, now).await?;
            finished(
                acting(store)
                    .enable_destination(&Actor::cli(), &name)
                    .await?,
            )?;
            let from = store
                .destination(&name, now)
                .await?
                .and_then(|d| d.recover_since)
                .map(|t| format!(" (since {t}, when the failure began)"))
                .unwrap_or_default();
            println!(
                "{name} is enabled; events paused meanwhile wait for `pointhook destinations recover {name}`{from}"
            );
            Ok(())
        }
        Destinations::Disable { name, reason } => {
            known(store, &name, now).await?;
            finished(
                acting(store)
                    .disable_destination(&Actor::cli(), &name, &reason)
                    .await?,
            )?;
            println!("{name} is disabled; its events wait, paused");
            Ok(())
        }
        Destinations::Recover {
            name,
            since,
            no_wait,
        } => {
            let since = since.map(pointhook::store::unix_ms);
            known(store, &name, now).await?;
            let acted = acting(store)
                .recover_destination(&Actor::cli(), &name, since)
                .await?;
            match acted.done {
                Done::Refused(_) => {
                    bail!("{name} is disabled: `pointhook destinations enable {name}` first")
                }
                Done::Unknown(why) => bail!("{why}"),
                Done::Done((from, n)) => {
                    let from = from.map(|t| format!(" (since {t})")).unwrap_or_default();
                    println!("{n} events for {name} queued again{from}, oldest first");
                    if n > 0 && !no_wait {
                        follow(store, &name).await?;
                    }
                    Ok(())
                }
            }
        }
    }
}

/// Prints the recovery's progress each second until nothing it queued
/// waits (the server's outbox sends them).
async fn follow(store: &Store, name: &str) -> anyhow::Result<()> {
    let mut last = None;
    loop {
        let Some(r) = store
            .destination(name, unix_ms_now())
            .await?
            .and_then(|d| d.recovery)
        else {
            return Ok(());
        };
        let line = format!(
            "{name}: {} of {} sent, {} waiting, {} given up",
            r.delivered, r.queued, r.waiting, r.gave_up
        );
        if last.as_ref() != Some(&line) {
            println!("{line}");
            last = Some(line);
        }
        if r.waiting == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn list_table(rows: &[DestinationView]) -> String {
    table(
        &[
            "NAME", "STATE", "BACKLOG", "PAUSED", "GAVE UP", "OLDEST", "URL", "REASON",
        ],
        rows.iter()
            .map(|d| {
                vec![
                    d.name.clone(),
                    d.state.into(),
                    d.backlog.to_string(),
                    d.paused.to_string(),
                    d.gave_up.to_string(),
                    d.oldest_event.clone().unwrap_or_default(),
                    d.url.clone().unwrap_or_default(),
                    d.disabled_reason.clone().unwrap_or_default(),
                ]
            })
            .collect(),
    )
}

fn show(d: &DestinationView) -> String {
    let or_none = |v: &Option<String>| v.clone().unwrap_or_default();
    let mut pairs = vec![
        ("name", d.name.clone()),
        ("url", or_none(&d.url)),
        ("state", d.state.into()),
        ("disabled reason", or_none(&d.disabled_reason)),
        ("disabled at", or_none(&d.disabled_at)),
        ("backlog", d.backlog.to_string()),
        ("paused", d.paused.to_string()),
        ("gave up", d.gave_up.to_string()),
        ("oldest event", or_none(&d.oldest_event)),
        ("failing since", or_none(&d.failing_since)),
        ("failure began", or_none(&d.outage_since)),
        ("recover since", or_none(&d.recover_since)),
        ("last success", or_none(&d.last_success_at)),
    ];
    if let Some(r) = &d.recovery {
        pairs.push(("recovery since", r.since.clone()));
        pairs.push((
            "recovery",
            format!(
                "asked {}: {} of {} sent, {} waiting, {} given up",
                r.asked_at, r.delivered, r.queued, r.waiting, r.gave_up
            ),
        ));
    }
    fields(&pairs)
}

/// Refuses, in one line, a name no destination has.
async fn known(store: &Store, name: &str, now: i64) -> anyhow::Result<()> {
    if store.destination(name, now).await?.is_none() {
        bail!("no destination {name:?} is configured");
    }
    Ok(())
}
