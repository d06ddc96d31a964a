//! `pointhook platform-orders cancel|refund ORD…`: for the person who must
//! give money back on an order of the Orders API. Each call carries an
//! `X-Idempotency-Key` made from what is asked, so running the same command
//! again (after a timeout, say) never refunds twice.

use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;
use sha2::{Digest, Sha256};

use pointhook::api::ApiClient;
use pointhook::api::calls::CallLog;
use pointhook::config::Config;
use pointhook::domain::PlatformOrderId;
use pointhook_common::money::Money;

#[derive(Debug, Subcommand)]
pub enum PlatformOrders {
    /// Cancel an order not yet paid (on a terminal: the terminal is asked).
    Cancel {
        id: String,
        #[arg(long, default_value = "default")]
        account: String,
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
    },
}

pub async fn run(config: Config, cmd: PlatformOrders) -> anyhow::Result<()> {
    let (id, account) = match &cmd {
        PlatformOrders::Cancel { id, account } | PlatformOrders::Refund { id, account, .. } => {
            (id, account)
        }
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
    let answer = match &cmd {
        PlatformOrders::Cancel { .. } => {
            let key = idempotency_key(&["cancel", account, order.as_str()]);
            api.cancel_platform_order(&CallLog::default(), account, &order, &key)
                .await
        }
        PlatformOrders::Refund {
            transaction,
            amount,
            ..
        } => {
            let partial = match (transaction, amount) {
                (Some(t), Some(a)) => {
                    let amount = Money::parse(a)
                        .filter(|m| *m > Money::ZERO)
                        .with_context(|| format!("--amount {a:?} is not a positive amount"))?;
                    Some((t.as_str(), amount))
                }
                _ => None,
            };
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

/// The same request, the same key: what was asked, hashed.
fn idempotency_key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    format!("pointhook-{}", &hex::encode(h.finalize())[..32])
}
