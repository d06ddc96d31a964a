//! `deliveries`, `jobs`, `orders` and `events`: what an operator reads and
//! replays, straight from the database file (safe while the server runs);
//! each action recorded in the audit as the OS user.
//! Tables by default, JSON with `--json`.

use anyhow::Context;
use clap::{Args, Subcommand};
use serde::Serialize;

use pointhook::domain::{EventState, JobState};
use pointhook::operators::Actor;
use pointhook::store::{self, DeliveryFilter, Store};

use super::operators::{acting, finished};

#[derive(Debug, Subcommand)]
pub enum Deliveries {
    /// Newest first.
    List {
        #[arg(long)]
        account: Option<String>,
        /// ipn, webhook or intent_webhook.
        #[arg(long)]
        kind: Option<String>,
        #[arg(long)]
        topic: Option<String>,
        /// RFC 3339 time or unix seconds.
        #[arg(long)]
        since: Option<String>,
        /// Only deliveries older than this id (the next page).
        #[arg(long)]
        before: Option<i64>,
        #[command(flatten)]
        out: Output,
    },
    /// One delivery: the body exactly as received, headers, the job it fed.
    Show {
        id: i64,
        #[command(flatten)]
        out: Output,
    },
}

#[derive(Debug, Subcommand)]
pub enum Jobs {
    /// Dead first.
    List {
        /// pending, running, done or dead.
        #[arg(long)]
        state: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    /// Attempts, last error, next run, the deliveries and API calls.
    Show {
        id: i64,
        #[command(flatten)]
        out: Output,
    },
    /// Run a dead job again (or every dead job with --all-dead).
    Retry {
        #[arg(required_unless_present = "all_dead", conflicts_with = "all_dead")]
        id: Option<i64>,
        #[arg(long)]
        all_dead: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum Orders {
    /// Paid amount, decision, blocked, and the history of deliveries,
    /// API calls and events.
    Show {
        id: String,
        /// Needed when there are several accounts.
        #[arg(long, default_value = "default")]
        account: String,
        #[command(flatten)]
        out: Output,
    },
    /// The order as a sandbox fixture that replays what pointhook saw:
    /// the API's answers seeded, each notification as it came, the events
    /// decided as the expectation (`pointhook sandbox trigger FILE`).
    ExportScenario(super::scenario::ExportArgs),
}

#[derive(Debug, Subcommand)]
pub enum Events {
    /// Newest first.
    List {
        #[arg(long = "type")]
        event_type: Option<String>,
        /// pending, delivered, dead or stored.
        #[arg(long)]
        state: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    Show {
        id: String,
        #[command(flatten)]
        out: Output,
    },
    /// Send an event again, with the same id.
    Redeliver { id: String },
}

#[derive(Debug, Subcommand)]
pub enum Fraud {
    /// Alerts held for a person (every state with --all), newest first.
    List {
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        out: Output,
    },
    /// The alert is real: cancel or refund its payment.
    Confirm { id: i64 },
    /// The alert is not real: unblock its order and decide it again.
    Dismiss { id: i64 },
}

#[derive(Debug, Clone, Args)]
pub struct Output {
    /// JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// At most this many rows.
    #[arg(long, default_value_t = store::DEFAULT_LIMIT)]
    limit: usize,
}

pub async fn deliveries(store: &Store, cmd: Deliveries) -> anyhow::Result<()> {
    match cmd {
        Deliveries::List {
            account,
            kind,
            topic,
            since,
            before,
            out,
        } => {
            let since = since.map(|s| parse_time(&s)).transpose()?;
            let filter = DeliveryFilter {
                account,
                kind,
                topic,
                since,
                before,
                limit: out.limit,
            };
            let rows = store.list_deliveries(filter).await?;
            print(&out, &rows, |rows| {
                table(
                    &[
                        "ID",
                        "RECEIVED",
                        "ACCOUNT",
                        "KIND",
                        "TOPIC",
                        "RESOURCE",
                        "DUP OF",
                        "SIGNATURE",
                        "JOB",
                    ],
                    rows.iter()
                        .map(|d| {
                            vec![
                                d.id.to_string(),
                                d.received_at.clone(),
                                d.account.clone(),
                                d.kind.into(),
                                d.topic.clone(),
                                d.resource_id.clone(),
                                opt(d.duplicate_of),
                                d.signature.into(),
                                d.job_key.clone().unwrap_or_else(|| "(ignored)".into()),
                            ]
                        })
                        .collect(),
                )
            })
        }
        Deliveries::Show { id, out } => {
            let d = store
                .get_delivery(id)
                .await?
                .with_context(|| format!("no delivery {id}"))?;
            print(&out, &d, |d| {
                let mut s = fields(&[
                    ("id", d.summary.id.to_string()),
                    ("received", d.summary.received_at.clone()),
                    ("account", d.summary.account.clone()),
                    ("kind", d.summary.kind.into()),
                    ("topic", d.summary.topic.clone()),
                    ("resource", d.summary.resource_id.clone()),
                    ("duplicate of", opt(d.summary.duplicate_of)),
                    ("signature", d.summary.signature.into()),
                    ("remote address", d.remote_addr.clone()),
                    ("query", d.query.clone()),
                    ("headers", d.headers.to_string()),
                    (
                        "job",
                        d.job.as_ref().map_or("(none: ignored)".into(), |j| {
                            format!("{} {} ({}, {} attempts)", j.id, j.key, j.state, j.attempts)
                        }),
                    ),
                ]);
                match (d.body_size, &d.body_sha256) {
                    (Some(size), Some(sha)) => s.push_str(&format!(
                        "\nbody (kept short: {size} bytes received, SHA-256 {sha}):\n"
                    )),
                    (Some(size), None) => {
                        s.push_str(&format!("\nbody (kept short: {size} bytes received):\n"))
                    }
                    _ => s.push_str("\nbody:\n"),
                }
                match (&d.body, &d.body_base64) {
                    (Some(text), _) => s.push_str(text),
                    (None, Some(b64)) => s.push_str(&format!("(not UTF-8; base64) {b64}")),
                    (None, None) => s.push_str("(empty)"),
                }
                s.push('\n');
                s
            })
        }
    }
}

pub async fn jobs(store: &Store, cmd: Jobs) -> anyhow::Result<()> {
    match cmd {
        Jobs::List { state, out } => {
            let state = state
                .map(|s| {
                    JobState::parse(&s).with_context(|| {
                        format!("--state must be pending, running, done or dead, not {s:?}")
                    })
                })
                .transpose()?;
            let rows = store.list_jobs(state, out.limit).await?;
            print(&out, &rows, |rows| {
                table(
                    &[
                        "ID",
                        "STATE",
                        "KEY",
                        "ACCOUNT",
                        "ATTEMPTS",
                        "NEXT RUN",
                        "LAST ERROR",
                    ],
                    rows.iter()
                        .map(|j| {
                            vec![
                                j.id.to_string(),
                                j.state.into(),
                                j.key.clone(),
                                j.account.clone(),
                                j.attempts.to_string(),
                                j.next_run.clone().unwrap_or_default(),
                                clip(j.last_error.as_deref().unwrap_or(""), 60),
                            ]
                        })
                        .collect(),
                )
            })
        }
        Jobs::Show { id, out } => {
            let j = store
                .get_job(id)
                .await?
                .with_context(|| format!("no job {id}"))?;
            print(&out, &j, |j| {
                let mut s = fields(&[
                    ("id", j.summary.id.to_string()),
                    ("key", j.summary.key.clone()),
                    ("account", j.summary.account.clone()),
                    ("kind", j.summary.kind.into()),
                    ("state", j.summary.state.into()),
                    ("attempts", j.summary.attempts.to_string()),
                    ("next run", j.summary.next_run.clone().unwrap_or_default()),
                    (
                        "last error",
                        j.summary.last_error.clone().unwrap_or_default(),
                    ),
                    ("re-run requested", j.rerun_requested.to_string()),
                    ("created", j.created_at.clone()),
                    ("updated", j.summary.updated_at.clone()),
                    (
                        "deliveries",
                        j.deliveries
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                ]);
                s.push_str("\nAPI calls:\n");
                s.push_str(&fetch_table(&j.fetches));
                s
            })
        }
        Jobs::Retry { id, all_dead } => {
            let (acts, me) = (acting(store, false), Actor::cli());
            if all_dead {
                let n = finished(acts.retry_dead_jobs(&me).await?)?;
                println!("{n} dead job(s) will run again");
            } else if let Some(id) = id {
                finished(acts.retry_job(&me, id).await?)?;
                println!("job {id} will run again");
            }
            Ok(())
        }
    }
}

pub async fn orders(store: &Store, accounts: Vec<String>, cmd: Orders) -> anyhow::Result<()> {
    let (id, account, out) = match cmd {
        Orders::Show { id, account, out } => (id, account, out),
        Orders::ExportScenario(args) => return super::scenario::run(store, accounts, args).await,
    };
    let o = store
        .get_order(account.clone(), id.clone())
        .await?
        .with_context(|| {
            format!(
                "nothing known of {} {} (account {})",
                store::views::order_kind(&id).replace('_', " "),
                pointhook::text::for_terminal(&id),
                pointhook::text::for_terminal(&account)
            )
        })?;
    print(&out, &o, |o| {
        let mut s = fields(&[
            (
                if o.kind == "platform_order" {
                    "order (Orders API)"
                } else {
                    "merchant order"
                },
                o.merchant_order_id.clone(),
            ),
            ("account", o.account.clone()),
            ("total", o.total_amount.clone().unwrap_or_default()),
            ("paid", o.paid_amount.clone().unwrap_or_default()),
            (
                "decision",
                o.decision.clone().unwrap_or_else(|| "(none yet)".into()),
            ),
            ("released", o.released_at.clone().unwrap_or_default()),
            (
                "blocked",
                o.blocked_at.clone().unwrap_or_else(|| "no".into()),
            ),
            ("at risk", o.at_risk_at.clone().unwrap_or_default()),
        ]);
        s.push_str("\ndeliveries:\n");
        s.push_str(&table(
            &["ID", "RECEIVED", "KIND", "TOPIC", "RESOURCE"],
            o.deliveries
                .iter()
                .map(|d| {
                    vec![
                        d.id.to_string(),
                        d.received_at.clone(),
                        d.kind.into(),
                        d.topic.clone(),
                        d.resource_id.clone(),
                    ]
                })
                .collect(),
        ));
        s.push_str("\nAPI calls:\n");
        s.push_str(&fetch_table(&o.fetches));
        s.push_str("\nevents:\n");
        s.push_str(&event_table(&o.events));
        s
    })
}

pub async fn events(store: &Store, cmd: Events, delivers: bool) -> anyhow::Result<()> {
    match cmd {
        Events::List {
            event_type,
            state,
            out,
        } => {
            let state = state
                .map(|s| {
                    EventState::parse(&s).with_context(|| {
                        format!("--state must be pending, delivered, dead or stored, not {s:?}")
                    })
                })
                .transpose()?;
            let rows = store.list_events(event_type, state, out.limit).await?;
            print(&out, &rows, |rows| event_table(rows))
        }
        Events::Show { id, out } => {
            let e = store
                .get_event(id.clone())
                .await?
                .with_context(|| format!("no event {id}"))?;
            print(&out, &e, |e| {
                let mut s = fields(&[
                    ("id", e.summary.id.clone()),
                    ("type", e.summary.event_type.clone()),
                    ("account", e.summary.account.clone()),
                    ("subject", e.summary.subject.clone()),
                    ("state", e.summary.state.into()),
                    ("attempts", e.summary.attempts.to_string()),
                    ("created", e.summary.created_at.clone()),
                    (
                        "delivered",
                        e.summary.delivered_at.clone().unwrap_or_default(),
                    ),
                    (
                        "next attempt",
                        e.next_attempt_at.clone().unwrap_or_default(),
                    ),
                    (
                        "last error",
                        e.summary.last_error.clone().unwrap_or_default(),
                    ),
                    ("job", opt(e.job_id)),
                ]);
                s.push_str("\nbody:\n");
                s.push_str(&serde_json::to_string_pretty(&e.body).unwrap_or_default());
                s.push('\n');
                s
            })
        }
        Events::Redeliver { id } => {
            finished(
                acting(store, delivers)
                    .redeliver(&Actor::cli(), &id)
                    .await?,
            )?;
            println!("event {id} will be delivered again, with the same id");
            Ok(())
        }
    }
}

pub async fn fraud(store: &Store, cmd: Fraud, delivers: bool) -> anyhow::Result<()> {
    use pointhook::domain::Review;
    let (acts, me) = (acting(store, delivers), Actor::cli());
    let (id, acted, what) = match cmd {
        Fraud::List { all, out } => {
            let state = (!all).then_some(Review::Held);
            let rows = store.reviews(state, out.limit).await?;
            return print(&out, &rows, |rows| {
                table(
                    &[
                        "ID", "STATE", "ACCOUNT", "ORDER", "PAYMENT", "SINCE", "REASON",
                    ],
                    rows.iter()
                        .map(|r| {
                            vec![
                                r.id.to_string(),
                                r.state.into(),
                                r.account.clone(),
                                r.merchant_order_id.clone().unwrap_or_default(),
                                r.payment_id.clone().unwrap_or_default(),
                                r.created_at.clone(),
                                clip(&r.reason, 60),
                            ]
                        })
                        .collect(),
                )
            });
        }
        Fraud::Confirm { id } => (
            id,
            acts.confirm_review(&me, id).await?,
            "confirmed: its payment will be cancelled or refunded",
        ),
        Fraud::Dismiss { id } => (
            id,
            acts.dismiss_review(&me, id).await?,
            "dismissed: its block is lifted and its order decided again",
        ),
    };
    finished(acted)?;
    println!("fraud review {id} {what}");
    Ok(())
}

pub(super) fn print<T: Serialize>(
    out: &Output,
    value: &T,
    human: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    // What a notification held never reaches the terminal raw.
    if out.json {
        let json = serde_json::to_string_pretty(value)?;
        println!("{}", pointhook::text::json_for_terminal(&json));
    } else {
        print!("{}", pointhook::text::for_terminal(&human(value)));
    }
    Ok(())
}

fn event_table(rows: &[store::EventSummary]) -> String {
    table(
        &[
            "ID",
            "TYPE",
            "SUBJECT",
            "STATE",
            "ATTEMPTS",
            "CREATED",
            "LAST ERROR",
        ],
        rows.iter()
            .map(|e| {
                vec![
                    e.id.clone(),
                    e.event_type.clone(),
                    e.subject.clone(),
                    e.state.into(),
                    e.attempts.to_string(),
                    e.created_at.clone(),
                    clip(e.last_error.as_deref().unwrap_or(""), 50),
                ]
            })
            .collect(),
    )
}

fn fetch_table(rows: &[store::views::FetchView]) -> String {
    table(
        &["AT", "JOB", "ENDPOINT", "RESOURCE", "STATUS", "MS"],
        rows.iter()
            .map(|f| {
                vec![
                    f.at.clone(),
                    f.job_id.to_string(),
                    f.endpoint.clone(),
                    f.resource_id.clone(),
                    if f.status == 0 {
                        "no answer".into()
                    } else {
                        f.status.to_string()
                    },
                    f.elapsed_ms.to_string(),
                ]
            })
            .collect(),
    )
}

/// Left-aligned columns, two spaces apart.
pub(super) fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    if rows.is_empty() {
        return "(none)\n".into();
    }
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.iter().map(|h| h.to_string()).collect());
    for row in rows {
        // A cell stays on its line.
        let row = row
            .into_iter()
            .map(|c| pointhook::text::printable(&c).into_owned())
            .collect();
        out.push_str(&line(row));
    }
    out
}

pub(super) fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    pairs
        .iter()
        .map(|(k, v)| format!("{k:<width$}  {}\n", pointhook::text::printable(v)))
        .collect()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max - 1).collect::<String>() + "…"
    }
}

fn parse_time(s: &str) -> anyhow::Result<i64> {
    if let Ok(secs) = s.parse::<i64>() {
        return secs
            .checked_mul(1000)
            .filter(|ms| *ms >= 0)
            .with_context(|| format!("--since {s} is not a time pointhook can store"));
    }
    humantime::parse_rfc3339_weak(s)
        .map(store::unix_ms)
        .with_context(|| format!("--since must be RFC 3339 or unix seconds, not {s:?}"))
}
