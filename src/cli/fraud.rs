//! `pointhook fraud list|show|confirm|dismiss`: the fraud alerts held for
//! a person. `show` gives the evidence (the alert, its notifications, the
//! payment and the order as last read) and what confirming will do;
//! `confirm` says that too and, since it may move money, asks on a
//! terminal (`--yes` for scripts; without a terminal and `--yes` it
//! refuses).

use anyhow::Context;
use clap::Subcommand;

use pointhook::actions::consequence;
use pointhook::domain::Review;
use pointhook::operators::Actor;
use pointhook::store::Store;
use pointhook::store::console_views::ReviewDetail;

use super::operators::{acting, finished};
use super::paging::{PageArgs, by_id, list};
use super::render::{Format, clip, fields, print, say, table};

#[derive(Debug, Subcommand)]
pub enum Fraud {
    /// Alerts held for a person (every state with --all), newest first.
    List {
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        format: Format,
    },
    /// One alert: its evidence, and what confirming it will do.
    Show {
        id: i64,
        #[command(flatten)]
        format: Format,
    },
    /// The alert is real: cancel or refund its payment (says which, and
    /// how much, and asks first).
    Confirm {
        id: i64,
        /// Do not ask (for scripts; needed when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// The alert is not real: unblock its order and decide it again.
    Dismiss { id: i64 },
}

pub async fn run(store: &Store, cmd: Fraud) -> anyhow::Result<()> {
    match cmd {
        Fraud::List { all, page, format } => {
            let state = (!all).then_some(Review::Held);
            if let Some(before) = &page.before {
                before.parse::<i64>().with_context(|| {
                    format!(
                        "--before takes a review id, not {:?}",
                        pointhook_common::text::printable(before)
                    )
                })?;
            }
            let listed = list(&page, |cursor, limit| async move {
                let before = cursor.and_then(|c| c.parse().ok());
                let rows = store.reviews(state, before, limit).await?;
                Ok(by_id(rows, limit, |r| r.id))
            })
            .await?;
            super::paging::print(&format, &listed, |rows| {
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
            })
        }
        Fraud::Show { id, format } => {
            let r = review(store, id).await?;
            let c = consequence(&r);
            let value = serde_json::json!({
                "review": r,
                "if_confirmed": {
                    "words": c.words,
                    "moves_money": c.moves_money,
                    "undo": c.undo,
                    "amount": c.amount,
                },
            });
            print(&format, &value, |_| show(&r))
        }
        Fraud::Confirm { id, yes } => {
            let r = review(store, id).await?;
            let held = r.review.state == Review::Held.as_str();
            if held && !yes {
                ask(&r)?;
            }
            let acts = acting(store);
            finished(acts.confirm_review(&Actor::cli(), id).await?)?;
            say(&format!(
                "fraud review {id} confirmed: {}\n",
                pointhook_common::text::printable(&consequence(&r).words)
            ))
        }
        Fraud::Dismiss { id } => {
            let acts = acting(store);
            finished(acts.dismiss_review(&Actor::cli(), id).await?)?;
            say(&format!(
                "fraud review {id} dismissed: its block is lifted and its order decided again\n"
            ))
        }
    }
}

async fn review(store: &Store, id: i64) -> anyhow::Result<ReviewDetail> {
    store
        .review(id)
        .await?
        .with_context(|| format!("no fraud review {id}"))
}

/// Says what confirming will do and asks.
fn ask(r: &ReviewDetail) -> anyhow::Result<()> {
    let words = pointhook_common::text::printable(&consequence(r).words).into_owned();
    let id = r.review.id;
    super::ask::confirm(
        &format!("If fraud review {id} is confirmed: {words}."),
        &format!("fraud review {id} not confirmed (if confirmed: {words})"),
    )
}

fn show(r: &ReviewDetail) -> String {
    let v = &r.review;
    let c = consequence(r);
    let mut s = fields(&[
        ("id", v.id.to_string()),
        ("state", v.state.into()),
        ("account", v.account.clone()),
        (
            "merchant order",
            v.merchant_order_id.clone().unwrap_or_default(),
        ),
        ("payment", v.payment_id.clone().unwrap_or_default()),
        ("alert", v.alert.clone()),
        ("reason", v.reason.clone()),
        ("held since", v.created_at.clone()),
        ("decided", v.decided_at.clone().unwrap_or_default()),
    ]);
    s.push_str("\nthe payment, as last read:\n");
    s.push_str(&match &r.payment {
        Some(p) => fields(&[
            ("status", p.status.clone()),
            (
                "amount",
                format!(
                    "{} {}",
                    p.amount.as_deref().unwrap_or("?"),
                    p.currency.as_deref().unwrap_or("")
                )
                .trim_end()
                .to_string(),
            ),
            ("read at", p.at.clone()),
        ]),
        None => "(not read yet)\n".into(),
    });
    s.push_str("\nthe order:\n");
    s.push_str(&match &r.order {
        Some(o) => fields(&[
            ("total", o.total_amount.clone().unwrap_or_default()),
            ("paid", o.paid_amount.clone().unwrap_or_default()),
            (
                "released",
                o.released_at.clone().unwrap_or_else(|| "no".into()),
            ),
            (
                "blocked",
                o.blocked_at.clone().unwrap_or_else(|| "no".into()),
            ),
            ("at risk", o.at_risk_at.clone().unwrap_or_default()),
        ]),
        None => "(nothing known of it)\n".into(),
    });
    s.push_str("\nthe alert's notifications:\n");
    s.push_str(&table(
        &["ID", "RECEIVED", "KIND", "TOPIC", "SIGNATURE"],
        r.notifications
            .iter()
            .map(|d| {
                vec![
                    d.id.to_string(),
                    d.received_at.clone(),
                    d.kind.into(),
                    d.topic.clone(),
                    d.signature.into(),
                ]
            })
            .collect(),
    ));
    if v.state == Review::Held.as_str() {
        s.push_str(&format!(
            "\nif confirmed: {}\n",
            pointhook_common::text::printable(&c.words)
        ));
    }
    s
}
