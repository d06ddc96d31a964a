//! The decision kernel: what recording one decision means, given what the
//! deciding transaction sees. Both stores call it (they are opened with
//! it, as `domain::verdict::Kernel`) and write what it answers; finality,
//! the final slot's key, the event id, the envelope, the event's state and
//! the destinations it is queued for (`routing`) are decided here and
//! nowhere else.

use serde_json::json;

use super::routing;
use crate::domain::verdict::{Context, EventPolicy, NewEvent, Record, Verdict};
use crate::domain::{Decision, EventState, EventType, Slot, event_id};

/// The key a subject's one final outcome is recorded under.
pub const FINAL_KEY: &str = "final";

/// What to write for `d`.
pub fn decide(d: &Decision, ctx: &Context<'_>, policy: &EventPolicy) -> Verdict {
    if !d.guards.iter().all(|g| g.holds(ctx.facts)) {
        return Verdict::Skip;
    }
    let key = match d.slot {
        Slot::Once => d.key.clone(),
        Slot::Final => match ctx.recorded_final {
            None => FINAL_KEY.to_string(),
            Some(recorded) if recorded == d.event => return Verdict::Same,
            Some(recorded) => {
                return Verdict::Conflict {
                    key: format!("conflict:{}", d.event),
                    reason: format!(
                        "{recorded} was recorded as final; {} now ({}): nothing changed",
                        d.event, d.reason
                    ),
                };
            }
        },
    };
    let event = told(d.event).then(|| {
        let id = event_id(ctx.account, &d.subject, &key);
        let destinations = routing::destinations(policy, ctx.account, d.event);
        NewEvent {
            body: json!({
                "id": id,
                "type": d.event.as_str(),
                "created_at": pointhook_common::clock::rfc3339(ctx.now),
                "account": ctx.account,
                "data": d.data,
            })
            .to_string(),
            id,
            state: if destinations.is_empty() {
                EventState::Stored
            } else {
                EventState::Pending
            },
            destinations,
        }
    });
    Verdict::Record(Record {
        key,
        event_type: d.event,
        event,
        marks: d.marks.clone(),
        reason: d.reason.clone(),
    })
}

/// Whether a decision of this type is told to the merchant. A rejected
/// fraud alert is recorded for a person only: what an unconfirmed sender
/// wrote never becomes an event.
pub fn told(event: EventType) -> bool {
    event != EventType::FraudAlertRejected
}
