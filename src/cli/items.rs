//! `pointhook items list|act`: the inbox as the console shows it, one
//! typed item a line, and an action on one item by its key, through the
//! same `Actions::act` as the console and the admin API. What asks a
//! second time in the console asks on a terminal here (`--yes` for
//! scripts).

use clap::Subcommand;

use pointhook::domain::{ItemAction, ItemKey};
use pointhook::operators::Actor;
use pointhook::store::Store;
use pointhook_common::text::printable;

use super::operators::{acting, finished};
use super::render::{Format, clip, print, say, table};

/// Items of each kind listed at most.
const LISTED: usize = 100;

#[derive(Debug, Subcommand)]
pub enum Items {
    /// What needs a person, each kind in the inbox's order.
    List {
        #[command(flatten)]
        format: Format,
    },
    /// Act on one item: `pointhook items act at_risk:default:123 acknowledge`.
    Act {
        /// The item's key, as `items list` shows it.
        item: String,
        /// acknowledge, retry, redeliver, enable, confirm, dismiss, approve, reject.
        action: String,
        /// Do not ask (for scripts; needed when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(store: &Store, cmd: Items) -> anyhow::Result<()> {
    let acts = acting(store);
    match cmd {
        Items::List { format } => {
            let items = acts.items(LISTED).await?;
            print(&format, &items, |items| {
                table(
                    &["KIND", "KEY", "ACCOUNT", "TEXT", "ACTIONS"],
                    items
                        .iter()
                        .map(|i| {
                            vec![
                                i.kind.as_str().into(),
                                i.key.to_string(),
                                i.account.clone().unwrap_or_default(),
                                clip(&i.text, 80),
                                i.actions
                                    .iter()
                                    .map(|a| a.as_str())
                                    .collect::<Vec<_>>()
                                    .join(","),
                            ]
                        })
                        .collect(),
                )
            })
        }
        Items::Act { item, action, yes } => {
            let key = ItemKey::parse(&item)?;
            let action = ItemAction::parse(&action)
                .ok_or_else(|| anyhow::anyhow!("no action {:?}", printable(&action)))?;
            if action.asks_twice() && !yes {
                super::ask::confirm(
                    &format!("{} {key}?", action.as_str()),
                    &format!("{key} not acted on ({})", action.as_str()),
                )?;
            }
            let done = finished(acts.act(&Actor::cli(), &key, action).await?)?;
            say(&format!("{key}: {}\n", printable(&done)))
        }
    }
}
