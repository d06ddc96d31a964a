//! `pointhook orders show|list`: one order's state and history, and the
//! orders in a state a person looks at (the console's `/orders` lists,
//! read the same way).

use anyhow::Context;
use clap::Subcommand;

use pointhook::store::console_views::OrderList;
use pointhook::store::{self, Store};

use super::paging::{PageArgs, list};
use super::render::{Format, event_table, fetch_table, fields, print, table};

#[derive(Debug, Subcommand)]
pub enum Orders {
    /// Paid amount, decision, blocked, and the history of deliveries,
    /// API calls and events.
    Show {
        /// A merchant order id, or an Orders API id (ORD…).
        id: String,
        /// Needed when there are several accounts.
        #[arg(long, default_value = "default")]
        account: String,
        #[command(flatten)]
        format: Format,
    },
    /// The orders in one state, the latest to enter it first; without
    /// --state every order, the latest changed first.
    List {
        #[arg(long, value_enum)]
        state: Option<State>,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        format: Format,
    },
    /// The order as a sandbox fixture that replays what pointhook saw:
    /// the API's answers seeded, each notification as it came, the events
    /// decided as the expectation (`pointhook sandbox trigger FILE`).
    ExportScenario(super::scenario::ExportArgs),
}

/// The states an order list is filtered by.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum State {
    /// Released for shipment.
    Released,
    /// Paid, waiting to be released (no shipment yet, not blocked).
    AwaitingShipment,
    /// Blocked by a fraud alert.
    Blocked,
    /// Released, then charged back: the goods may be gone.
    AtRisk,
    /// Released before a fraud alert came: a person must stop the goods.
    #[value(alias = "fraud_after_release")]
    ReleasedBeforeFraudAlert,
}

impl State {
    fn list(self) -> OrderList {
        match self {
            State::Released => OrderList::Released,
            State::AwaitingShipment => OrderList::AwaitingShipment,
            State::Blocked => OrderList::Blocked,
            State::AtRisk => OrderList::AtRisk,
            State::ReleasedBeforeFraudAlert => OrderList::FraudAfterRelease,
        }
    }
}

pub async fn run(store: &Store, accounts: Vec<String>, cmd: Orders) -> anyhow::Result<()> {
    match cmd {
        Orders::ExportScenario(args) => super::scenario::run(store, accounts, args).await,
        Orders::Show {
            id,
            account,
            format,
        } => show(store, id, account, format).await,
        Orders::List {
            state,
            page,
            format,
        } => {
            let listed = list(&page, |cursor, limit| {
                store.order_list(state.map_or(OrderList::Any, State::list), cursor, limit)
            })
            .await?;
            super::paging::print(&format, &listed, |rows| {
                table(
                    &[
                        "ORDER",
                        "ACCOUNT",
                        if state.is_some() { "SINCE" } else { "CHANGED" },
                        "TOTAL",
                        "PAID",
                    ],
                    rows.iter()
                        .map(|o| {
                            vec![
                                o.order_id.clone(),
                                o.account.clone(),
                                o.at.clone(),
                                o.total_amount.clone().unwrap_or_default(),
                                o.paid_amount.clone().unwrap_or_default(),
                            ]
                        })
                        .collect(),
                )
            })
        }
    }
}

async fn show(store: &Store, id: String, account: String, format: Format) -> anyhow::Result<()> {
    let o = store
        .get_order(account.clone(), id.clone())
        .await?
        .with_context(|| {
            format!(
                "nothing known of {} {} (account {})",
                store::views::order_kind(&id).replace('_', " "),
                pointhook_common::text::printable(&id),
                pointhook_common::text::printable(&account)
            )
        })?;
    print(&format, &o, |o| {
        let mut s = fields(&[
            (
                match o.kind {
                    "platform_order" => "order (Orders API)",
                    "payment_intent" => "payment intent",
                    _ => "merchant order",
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
        s.push_str("\ndecisions (why):\n");
        for d in &o.decisions {
            s.push_str(&format!(
                "  {}  {}: {}\n",
                d.created_at,
                d.event_type,
                pointhook_common::text::printable(
                    d.reason.as_deref().unwrap_or("no reason recorded")
                )
            ));
        }
        s.push_str("\nevents:\n");
        s.push_str(&event_table(&o.events));
        s
    })
}
