//! An event as `pointhook events` prints it at each destination, and
//! "deliver again" (where it gave up or failed, or everywhere) saying
//! where it went.

use pointhook::operators::Actor;
use pointhook::store::console_views::AttemptView;
use pointhook::store::{Again, Store};

use super::operators::{acting, finished};
use super::render::say;

/// "Deliver again", where it gave up or failed or everywhere; says where.
pub async fn again(store: &Store, id: &str, again: Again) -> anyhow::Result<()> {
    let to = finished(acting(store).redeliver(&Actor::cli(), id, again).await?)?;
    say(&format!(
        "event {} will be delivered again, with the same id, at {}\n",
        pointhook_common::text::printable(id),
        to.join(", ")
    ))
}

/// Each destination's state and attempts, as `events show` prints them.
pub fn at_each(e: &pointhook::store::EventDetail, attempts: &[AttemptView]) -> String {
    let mut s = String::new();
    for d in &e.destinations {
        let made: Vec<&AttemptView> = attempts
            .iter()
            .filter(|a| a.destination == d.destination)
            .collect();
        s.push_str(&format!(
            "\nat {}: {}, {} attempt(s){}{}\n",
            d.destination,
            d.state,
            d.attempts,
            d.delivered_at
                .as_ref()
                .map(|t| format!(", delivered {t}"))
                .unwrap_or_default(),
            d.next_attempt_at
                .as_ref()
                .map(|t| format!(", next {t}"))
                .unwrap_or_default(),
        ));
        for a in made {
            s.push_str(&format!(
                "  attempt {} at {}: {}{}\n",
                a.attempt,
                a.at,
                a.state,
                a.error
                    .as_ref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ));
        }
    }
    s
}
