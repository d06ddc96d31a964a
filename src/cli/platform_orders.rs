//! `pointhook platform-orders cancel|refund ORD…`: for the person who must
//! give money back on an order of the Orders API. The command reads the
//! order, says what it holds and what will happen, and asks (`--yes` for
//! scripts); the action itself, with its idempotency key and its audit
//! entry, is `actions::platform_orders`.

use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;

use pointhook::actions::Done;
use pointhook::actions::platform_orders::OrderChange;
use pointhook::api::ApiClient;
use pointhook::api::calls::CallLog;
use pointhook::config::{Account, Config};
use pointhook::domain::PlatformOrderId;
use pointhook::domain::platform::PlatformOrder;
use pointhook::operators::Actor;
use pointhook::store::Store;
use pointhook_common::money::Money;
use pointhook_common::text::printable;

use super::operators::acting;

#[derive(Debug, Subcommand)]
pub enum PlatformOrders {
    /// Cancel an order not yet paid (on a terminal: the terminal is asked).
    Cancel {
        id: String,
        #[arg(long, default_value = "default")]
        account: String,
        /// Do not ask (for scripts).
        #[arg(long)]
        yes: bool,
    },
    /// Refund an order in full, or `--amount` of one of its payments.
    Refund {
        id: String,
        #[arg(long, default_value = "default")]
        account: String,
        /// The payment of the order (`PAY…`) a partial refund takes from.
        #[arg(long, requires = "amount")]
        transaction: Option<String>,
        /// A partial refund: this much (a decimal amount).
        #[arg(long, requires = "transaction")]
        amount: Option<String>,
        /// Do not ask (for scripts).
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(
    config: &Config,
    accounts: Vec<Account>,
    store: &Store,
    cmd: PlatformOrders,
) -> anyhow::Result<()> {
    let (id, account, yes) = match &cmd {
        PlatformOrders::Cancel { id, account, yes }
        | PlatformOrders::Refund {
            id, account, yes, ..
        } => (id, account, *yes),
    };
    let order = PlatformOrderId::parse(id)
        .map_err(|e| anyhow::anyhow!("{:?} is not an order id: {e}", printable(id)))?;
    if !accounts.iter().any(|a| &a.name == account) {
        anyhow::bail!("no account {:?} in the configuration", printable(account));
    }
    let change = match &cmd {
        PlatformOrders::Cancel { .. } => OrderChange::Cancel,
        PlatformOrders::Refund {
            transaction: Some(t),
            amount: Some(a),
            ..
        } => {
            let amount = Money::parse(a)
                .filter(|m| *m > Money::ZERO)
                .with_context(|| format!("--amount {a:?} is not a positive amount"))?;
            OrderChange::Refund(Some((t.as_str(), amount)))
        }
        PlatformOrders::Refund { .. } => OrderChange::Refund(None),
    };
    let api = ApiClient::new(
        &config.api,
        &accounts,
        Arc::new(pointhook::metrics::Metrics::new()),
    )
    .context("cannot build the API client")?;
    if !yes {
        let what = change.words();
        // Nobody to ask: nothing is read either.
        if !super::ask::can_ask() {
            return Err(super::ask::unasked(&format!(
                "order {order} not changed (asked: {what})"
            )));
        }
        let read = api
            .platform_order(&CallLog::default(), account, &order)
            .await
            .with_context(|| format!("cannot read order {order} to say what it holds"))?;
        super::ask::confirm(
            &format!(
                "Order {} of account {} ({}): {what}.",
                read.id,
                printable(account),
                held(&read)
            ),
            &format!("order {} not changed (asked: {what})", read.id),
        )?;
    }
    let acted = acting(store)
        .change_platform_order(&Actor::cli(), &api, account, &order, change)
        .await?;
    let answer = match acted.done {
        Done::Done(answer) => answer,
        Done::Refused(why) => anyhow::bail!("order {order} not changed: {why}"),
        Done::Unknown(why) => anyhow::bail!("order {order}: {why}"),
    };
    super::render::say(&format!("{}\n", super::render::json(&answer)))
}

/// What the order holds, as the platform answered, in words.
fn held(o: &PlatformOrder) -> String {
    let money = |m: Option<Money>| m.map_or("?".to_string(), |m| m.to_string());
    format!(
        "{}, total {}, paid {}{}",
        printable(&o.status),
        money(o.total),
        money(o.total_paid),
        match o.refunds.len() {
            0 => String::new(),
            n => format!(", {n} refund(s) already"),
        }
    )
}
