//! `pointhook holds list|show|approve|reject`: the decisions held for a
//! person, of every kind. `show` gives the rule's reason and what it read;
//! `approve` and `reject` say what they do, in the kind's words, and ask on
//! a terminal (`--yes` for scripts).

use anyhow::Context;
use clap::Subcommand;

use pointhook::actions::hold_does;
use pointhook::domain::{HoldAnswer, HoldSeen, HoldState};
use pointhook::operators::Actor;
use pointhook::store::Store;
use pointhook_common::clock::rfc3339;
use pointhook_common::text::printable;

use super::operators::{acting, finished};
use super::paging::{PageArgs, by_id, list};
use super::render::{Format, clip, fields, print, say, table};

#[derive(Debug, Subcommand)]
pub enum Holds {
    /// Held for a person (every state with --all), newest first.
    List {
        #[arg(long)]
        all: bool,
        /// Only this kind (`review_above`, …).
        #[arg(long)]
        kind: Option<String>,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        format: Format,
    },
    /// One hold: why, what the rule read, what each answer does.
    Show {
        id: i64,
        #[command(flatten)]
        format: Format,
    },
    /// What waited goes ahead (says what, and asks first).
    Approve {
        id: i64,
        /// Do not ask (for scripts; needed when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// What waited does not happen (says what, and asks first).
    Reject {
        id: i64,
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(store: &Store, cmd: Holds) -> anyhow::Result<()> {
    match cmd {
        Holds::List {
            all,
            kind,
            page,
            format,
        } => {
            let state = (!all).then_some(HoldState::Held);
            let listed = list(&page, |cursor, limit| {
                let kind = kind.clone();
                async move {
                    let before = cursor.and_then(|c| c.parse().ok());
                    let rows = store.holds(state, kind, before, limit).await?;
                    Ok(by_id(rows, limit, |h| h.id))
                }
            })
            .await?;
            super::paging::print(&format, &listed, |rows| {
                table(
                    &[
                        "ID", "KIND", "STATE", "ACCOUNT", "SUBJECT", "SINCE", "REASON",
                    ],
                    rows.iter()
                        .map(|h| {
                            vec![
                                h.id.to_string(),
                                h.kind.clone(),
                                h.state.as_str().into(),
                                h.account.clone(),
                                h.subject.clone(),
                                rfc3339(h.created_at),
                                clip(&h.reason, 60),
                            ]
                        })
                        .collect(),
                )
            })
        }
        Holds::Show { id, format } => {
            let h = hold(store, id).await?;
            let value = serde_json::json!({
                "hold": h,
                "evidence": pointhook::rules::holds::evidence(&h),
                "approving": hold_does(&h, HoldAnswer::Approve),
                "rejecting": hold_does(&h, HoldAnswer::Reject),
            });
            print(&format, &value, |_| show(&h))
        }
        Holds::Approve { id, yes } => answer(store, id, HoldAnswer::Approve, yes).await,
        Holds::Reject { id, yes } => answer(store, id, HoldAnswer::Reject, yes).await,
    }
}

async fn answer(store: &Store, id: i64, answer: HoldAnswer, yes: bool) -> anyhow::Result<()> {
    let h = hold(store, id).await?;
    let acts = acting(store);
    let does = printable(&acts.hold_words(&h, answer).await?).into_owned();
    let verb = answer.as_str();
    if h.state == HoldState::Held && !yes {
        super::ask::confirm(
            &format!(
                "If hold {id} ({} on {}) is {verb}d: {does}.",
                h.kind, h.subject
            ),
            &format!("hold {id} not {verb}d (if {verb}d: {does})"),
        )?;
    }
    let h = finished(acts.answer_hold(&Actor::cli(), id, answer).await?)?;
    say(&format!("hold {id} {}: {does}\n", h.state.as_str()))
}

async fn hold(store: &Store, id: i64) -> anyhow::Result<HoldSeen> {
    store
        .hold(id)
        .await?
        .with_context(|| format!("no hold {id}"))
}

fn show(h: &HoldSeen) -> String {
    let mut s = fields(&[
        ("id", h.id.to_string()),
        ("kind", h.kind.clone()),
        ("state", h.state.as_str().into()),
        ("account", h.account.clone()),
        ("subject", h.subject.clone()),
        ("reason", h.reason.clone()),
        ("held since", rfc3339(h.created_at)),
        ("decided by", h.decided_by.clone().unwrap_or_default()),
        ("decided", h.decided_at.map(rfc3339).unwrap_or_default()),
    ]);
    s.push_str("\nwhat the rule read:\n");
    if let serde_json::Value::Object(m) = pointhook::rules::holds::evidence(h) {
        let rows: Vec<(String, String)> = m
            .into_iter()
            .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_string)))
            .collect();
        let refs: Vec<(&str, String)> = rows.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        s.push_str(&fields(&refs));
    }
    if h.state == HoldState::Held {
        s.push_str(&format!(
            "\nif approved: {}\nif rejected: {}\n",
            printable(&hold_does(h, HoldAnswer::Approve)),
            printable(&hold_does(h, HoldAnswer::Reject))
        ));
    }
    s
}
