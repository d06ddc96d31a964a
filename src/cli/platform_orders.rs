//! `pointhook platform-orders cancel|refund ORD…`: for the person who must
//! give money back on an order of the Orders API. Each call carries an
//! `X-Idempotency-Key` made from what is asked, so running the same command
//! again (after a timeout, say) never refunds twice. Money moves only after
//! the person saw the order as the platform has it and said yes (or gave
//! `--yes`).

use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;
use sha2::{Digest, Sha256};

use pointhook::api::ApiClient;
use pointhook::api::calls::CallLog;
use pointhook::config::Config;
use pointhook::domain::PlatformOrderId;
use pointhook::domain::platform::PlatformOrder;
use pointhook_common::money::Money;

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

pub async fn run(config: Config, cmd: PlatformOrders) -> anyhow::Result<()> {
    let (id, account, yes) = match &cmd {
        PlatformOrders::Cancel { id, account, yes }
        | PlatformOrders::Refund {
            id, account, yes, ..
        } => (id, account, *yes),
    };
    let order = PlatformOrderId::parse(id).map_err(|e| {
        anyhow::anyhow!(
            "{:?} is not an order id: {e}",
            pointhook_common::text::printable(id)
        )
    })?;
    if !config.accounts.iter().any(|a| &a.name == account) {
        anyhow::bail!(
            "no account {:?} in the configuration",
            pointhook_common::text::printable(account)
        );
    }
    let api = ApiClient::new(
        &config.api,
        &config.resolve_accounts()?,
        Arc::new(pointhook::metrics::Metrics::new()),
    )
    .context("cannot build the API client")?;
    let partial = match &cmd {
        PlatformOrders::Refund {
            transaction: Some(t),
            amount: Some(a),
            ..
        } => {
            let amount = Money::parse(a)
                .filter(|m| *m > Money::ZERO)
                .with_context(|| format!("--amount {a:?} is not a positive amount"))?;
            Some((t.as_str(), amount))
        }
        _ => None,
    };
    if !yes {
        let what = match (&cmd, partial) {
            (PlatformOrders::Cancel { .. }, _) => "cancel it".to_string(),
            (_, Some((t, a))) => format!(
                "refund {a} of its payment {}",
                pointhook_common::text::printable(t)
            ),
            (_, None) => "refund it in full".to_string(),
        };
        let order = api
            .platform_order(&CallLog::default(), account, &order)
            .await
            .with_context(|| format!("cannot read order {order} to say what it holds"))?;
        super::ask::confirm(
            &format!(
                "Order {} of account {} ({}): {what}.",
                order.id,
                pointhook_common::text::printable(account),
                held(&order)
            ),
            &format!("order {} not changed (asked: {what})", order.id),
        )?;
    }
    let answer = match &cmd {
        PlatformOrders::Cancel { .. } => {
            let key = idempotency_key(&["cancel", account, order.as_str()]);
            api.cancel_platform_order(&CallLog::default(), account, &order, &key)
                .await
        }
        PlatformOrders::Refund { .. } => {
            let amount = partial.map(|(_, a)| a.to_string()).unwrap_or_default();
            let key = idempotency_key(&[
                "refund",
                account,
                order.as_str(),
                partial.map_or("", |(t, _)| t),
                &amount,
            ]);
            api.refund_platform_order(&CallLog::default(), account, &order, partial, &key)
                .await
        }
    }
    .with_context(|| format!("the platform refused it for order {order}"))?;
    println!(
        "{}",
        pointhook_common::text::json_for_terminal(&serde_json::to_string_pretty(&answer)?)
    );
    Ok(())
}

/// What the order holds, as the platform answered, in words.
fn held(o: &PlatformOrder) -> String {
    let money = |m: Option<Money>| m.map_or("?".to_string(), |m| m.to_string());
    format!(
        "{}, total {}, paid {}{}",
        pointhook_common::text::printable(&o.status),
        money(o.total),
        money(o.total_paid),
        match o.refunds.len() {
            0 => String::new(),
            n => format!(", {n} refund(s) already"),
        }
    )
}

/// The same request, the same key: what was asked, hashed.
fn idempotency_key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    format!("pointhook-{}", &hex::encode(h.finalize())[..32])
}
