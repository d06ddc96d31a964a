//! `deliveries`, `jobs` and `events`: what an operator reads and replays,
//! straight from the store (safe while the server runs), a page at a time;
//! each action recorded in the audit as the OS user. Tables by default,
//! JSON with `--json`.

use anyhow::Context;
use clap::Subcommand;
use clap::builder::{PossibleValuesParser, TypedValueParser};

use pointhook::domain::{EventState, JobKind, JobState, Kind};
use pointhook::operators::Actor;
use pointhook::store::console_views::{EventFilter, JobFilter, Page};
use pointhook::store::{self, Again, DeliveryFilter, JobSummary, Store, StoreError};

use super::event_lines::{again, at_each};
use super::operators::{acting, finished};
use super::paging::{PageArgs, list};
use super::render::{
    Format, clip, event_table, fetch_table, fields, json, opt, print, say, table, verbatim,
};

#[derive(Debug, Subcommand)]
pub enum Deliveries {
    /// The notifications received (and the changes reconciliation found
    /// with none), newest first.
    List {
        /// Only this account's.
        #[arg(long)]
        account: Option<String>,
        /// Only this kind (reconcile: changes found with no notification).
        #[arg(long, value_parser = one_of(Kind::all().map(Kind::as_str), Kind::parse))]
        kind: Option<Kind>,
        /// A topic or type, as the platform sent it (payment, merchant_order …).
        #[arg(long)]
        topic: Option<String>,
        /// Only those received since: RFC 3339 or unix seconds.
        #[arg(long)]
        since: Option<String>,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        format: Format,
    },
    /// One delivery: the body exactly as received, headers, the job it fed.
    Show {
        id: i64,
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum Jobs {
    /// Dead first, then running, pending and done; newest first in each.
    List {
        /// Only jobs in this state.
        #[arg(long, value_parser = one_of(JobState::all().map(JobState::as_str), JobState::parse))]
        state: Option<JobState>,
        /// Only jobs of this kind.
        #[arg(long, value_parser = one_of(JobKind::all().map(JobKind::as_str), JobKind::parse))]
        kind: Option<JobKind>,
        /// Only this account's.
        #[arg(long)]
        account: Option<String>,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        format: Format,
    },
    /// Attempts, last error, next run, the deliveries and API calls.
    Show {
        id: i64,
        #[command(flatten)]
        format: Format,
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
pub enum Events {
    /// The events decided for the merchant's systems, newest first.
    List {
        /// Only events of this type (order.released …; docs/events/ lists
        /// them).
        #[arg(long = "type")]
        event_type: Option<String>,
        /// Only events in this state: an entry per destination where it is
        /// (dead: given up at one, whatever the others did).
        #[arg(long, value_parser = one_of(EventState::all().map(EventState::as_str), EventState::parse))]
        state: Option<EventState>,
        /// With --state: only what is in it at this destination.
        #[arg(long, requires = "state")]
        destination: Option<String>,
        /// Only this account's.
        #[arg(long)]
        account: Option<String>,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        format: Format,
    },
    /// One event: its state and attempts at each destination, its body
    /// and job.
    Show {
        id: String,
        #[command(flatten)]
        format: Format,
    },
    /// Send an event again, with the same id, to the destinations that
    /// gave it up or failed it (not to one that took it).
    Redeliver { id: String },
    /// Send an event again, with the same id, to every destination, those
    /// that took it too.
    RedeliverAll { id: String },
}

/// A flag's value: one of `names`, turned into its type by `parse`; the
/// help lists the names.
pub fn one_of<T: Clone + Send + Sync + 'static>(
    names: impl Iterator<Item = &'static str>,
    parse: fn(&str) -> Option<T>,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(names.collect::<Vec<_>>())
        .try_map(move |s| parse(&s).ok_or("not one of the values listed"))
}

/// The states `jobs list` shows, in order, with none asked for.
const JOB_STATES: [JobState; 4] = [
    JobState::Dead,
    JobState::Running,
    JobState::Pending,
    JobState::Done,
];

pub async fn deliveries(store: &Store, cmd: Deliveries) -> anyhow::Result<()> {
    match cmd {
        Deliveries::List {
            account,
            kind,
            topic,
            since,
            page,
            format,
        } => {
            let since = since.map(|s| parse_time(&s)).transpose()?;
            if let Some(before) = &page.before {
                before.parse::<i64>().with_context(|| {
                    format!(
                        "--before takes a delivery id, not {:?}",
                        pointhook_common::text::printable(before)
                    )
                })?;
            }
            let listed = list(&page, |cursor, limit| {
                let filter = DeliveryFilter {
                    account: account.clone(),
                    kind: kind.map(|k| k.as_str().to_string()),
                    topic: topic.clone(),
                    since,
                    before: cursor.and_then(|c| c.parse().ok()),
                    limit,
                };
                store.delivery_page(filter)
            })
            .await?;
            super::paging::print(&format, &listed, |rows| {
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
        Deliveries::Show { id, format } => {
            let d = store
                .get_delivery(id)
                .await?
                .with_context(|| format!("no delivery {id}"))?;
            print(&format, &d, |d| {
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
                        "\nbody (kept short: {size} bytes received, SHA-256 {}):\n",
                        verbatim(sha)
                    )),
                    (Some(size), None) => {
                        s.push_str(&format!("\nbody (kept short: {size} bytes received):\n"))
                    }
                    _ => s.push_str("\nbody:\n"),
                }
                match (&d.body, &d.body_base64) {
                    (Some(text), _) => s.push_str(&verbatim(text)),
                    (None, Some(b64)) => {
                        s.push_str(&format!("(not UTF-8; base64) {}", verbatim(b64)))
                    }
                    (None, None) => s.push_str("(empty)"),
                }
                s.push('\n');
                s
            })
        }
    }
}

/// One page of jobs across `states` in order; the cursor names the state
/// it is in (`dead:TIME.ID`).
async fn job_page(
    store: &Store,
    states: &[JobState],
    filter: JobFilter,
) -> Result<Page<JobSummary>, StoreError> {
    let (mut at, mut cursor) = match filter.cursor.as_deref().and_then(|c| c.split_once(':')) {
        Some((state, rest)) => (
            states
                .iter()
                .position(|s| s.as_str() == state)
                .unwrap_or(states.len()),
            Some(rest.to_string()).filter(|r| !r.is_empty()),
        ),
        None => (0, None),
    };
    let mut rows = Vec::new();
    while let Some(&state) = states.get(at) {
        let page = store
            .job_page(JobFilter {
                state: Some(state),
                cursor: cursor.take(),
                limit: filter.limit - rows.len(),
                ..filter.clone()
            })
            .await?;
        rows.extend(page.rows);
        if let Some(next) = page.next {
            let next = format!("{}:{next}", state.as_str());
            return Ok(Page {
                rows,
                next: Some(next),
            });
        }
        at += 1;
        if rows.len() >= filter.limit {
            let next = states.get(at).map(|s| format!("{}:", s.as_str()));
            return Ok(Page { rows, next });
        }
    }
    Ok(Page { rows, next: None })
}

pub async fn jobs(store: &Store, cmd: Jobs) -> anyhow::Result<()> {
    match cmd {
        Jobs::List {
            state,
            kind,
            account,
            page,
            format,
        } => {
            let states = state.map_or(JOB_STATES.to_vec(), |s| vec![s]);
            let listed = list(&page, |cursor, limit| {
                let filter = JobFilter {
                    state: None,
                    kind,
                    account: account.clone(),
                    cursor,
                    limit,
                };
                let states = states.clone();
                async move { job_page(store, &states, filter).await }
            })
            .await?;
            super::paging::print(&format, &listed, |rows| {
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
        Jobs::Show { id, format } => {
            let j = store
                .get_job(id)
                .await?
                .with_context(|| format!("no job {id}"))?;
            print(&format, &j, |j| {
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
            let (acts, me) = (acting(store), Actor::cli());
            if all_dead {
                let n = finished(acts.retry_dead_jobs(&me).await?)?;
                say(&format!("{n} dead job(s) will run again\n"))?;
            } else if let Some(id) = id {
                finished(acts.retry_job(&me, id).await?)?;
                say(&format!("job {id} will run again\n"))?;
            }
            Ok(())
        }
    }
}

pub async fn events(store: &Store, cmd: Events) -> anyhow::Result<()> {
    match cmd {
        Events::List {
            event_type,
            state,
            destination,
            account,
            page,
            format,
        } => {
            let listed = list(&page, |cursor, limit| {
                store.event_page(EventFilter {
                    state,
                    destination: destination.clone(),
                    event_type: event_type.clone(),
                    account: account.clone(),
                    cursor,
                    limit,
                })
            })
            .await?;
            super::paging::print(&format, &listed, |rows| event_table(rows))
        }
        Events::Show { id, format } => {
            let e = store
                .get_event(id.clone())
                .await?
                .with_context(|| format!("no event {}", pointhook_common::text::printable(&id)))?;
            let attempts = store.event_attempts(id.clone()).await?;
            print(&format, &e, |e| {
                let mut s = fields(&[
                    ("id", e.summary.id.clone()),
                    ("type", e.summary.event_type.clone()),
                    ("account", e.summary.account.clone()),
                    ("subject", e.summary.subject.clone()),
                    ("state", e.summary.where_()),
                    ("attempts", e.summary.attempts_at()),
                    ("created", e.summary.created_at.clone()),
                    (
                        "delivered",
                        e.summary.delivered_at.clone().unwrap_or_default(),
                    ),
                    (
                        "last error",
                        e.summary.last_error.clone().unwrap_or_default(),
                    ),
                    ("job", opt(e.job_id)),
                ]);
                s.push_str(&at_each(e, &attempts));
                s.push_str("\nbody:\n");
                s.push_str(&json(&e.body));
                s.push('\n');
                s
            })
        }
        Events::Redeliver { id } => again(store, &id, Again::Unfinished).await,
        Events::RedeliverAll { id } => again(store, &id, Again::Everywhere).await,
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
