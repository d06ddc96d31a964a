//! Holds: a rule's decision that waits for a person. A kind of hold is one
//! `Kind` value listed in `KINDS`; from it alone pointhook places the hold
//! (`place`, over what every rule decided), shows it (the console's inbox,
//! the CLI's `holds`, the admin API's `/api/holds`), tells it (an alert of
//! kind `held`), counts it (`pointhook_attention_items{kind="hold_<name>"}`),
//! audits its answer and records what the answer decides (`decided`).
//!
//! How: a decision a kind holds becomes two. The first records the kind's
//! `held` event with `Mark::Hold` (the hold, placed once); the second is
//! the decision itself with `Guard::HoldApproved` added, so it is skipped
//! until a person approves. Approving runs the holding job again and the
//! decision is then recorded under its usual key; rejecting records what
//! the kind's `rejected` says (and the waiting decision never passes its
//! guard). A kind's setting is per account: `<name> = "…"` in the
//! account's TOML, off when absent (`docs/extending.md`).

mod fraud_review;
mod review_above;

pub use fraud_review::FRAUD_REVIEW;

use std::collections::BTreeMap;

use crate::domain::{
    Decision, Effects, EventType, Guard, HoldMark, HoldSeen, HoldState, Mark, Slot,
};

/// A kind of hold.
#[derive(Debug)]
pub struct Kind {
    /// Stored with each hold; the account's setting's key; the gauge's
    /// `hold_<name>`.
    pub name: &'static str,
    /// What is held, for a person ("orders above the review amount").
    pub title: &'static str,
    /// Checks the account's setting (`Err`: why it is refused).
    pub check: fn(&str) -> Result<(), String>,
    /// Whether `setting` holds `d`, and why (`None`: it goes ahead).
    pub holds: fn(d: &Decision, setting: &str) -> Option<Held>,
    /// What approving and rejecting do, in words for the buttons and the
    /// second confirmation.
    pub approve: &'static str,
    pub reject: &'static str,
    /// Decided when a person rejects the hold (recorded in the same
    /// transaction as the answer).
    pub rejected: fn(&HoldSeen) -> Vec<Decision>,
}

/// A hold a kind places on a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// The event told when the hold is placed (`order.held`).
    pub event: EventType,
    /// The held event's `data`.
    pub data: serde_json::Value,
    pub reason: String,
}

/// Every kind of hold.
pub static KINDS: &[&Kind] = &[&review_above::REVIEW_ABOVE];

/// A kind by its name: one of `KINDS`, or `FRAUD_REVIEW`.
pub fn kind(name: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .copied()
        .chain([&FRAUD_REVIEW])
        .find(|k| k.name == name)
}

/// An account's settings of the kinds it turned on, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings(BTreeMap<&'static str, String>);

impl Settings {
    /// No kind turned on (a static needs a `const`).
    pub const NONE: Settings = Settings(BTreeMap::new());

    /// The settings as written in the account's TOML (key, value); `Err`
    /// names the key and says why.
    pub fn parse<'a>(
        raw: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Settings, (String, String)> {
        let mut on = BTreeMap::new();
        for (key, value) in raw {
            let Some(k) = kind(key) else {
                return Err((key.to_string(), "unknown key".to_string()));
            };
            (k.check)(value).map_err(|why| (key.to_string(), why))?;
            on.insert(k.name, value.to_string());
        }
        Ok(Settings(on))
    }

    pub fn get(&self, kind: &str) -> Option<&str> {
        self.0.get(kind).map(String::as_str)
    }
}

/// What every rule decided, with the account's holds placed: each
/// decision a kind it turned on holds is preceded by the hold's own
/// decision and waits for its approval.
pub fn place(settings: &Settings, mut effects: Effects) -> Effects {
    if settings.0.is_empty() {
        return effects;
    }
    let mut out = Vec::with_capacity(effects.decisions.len());
    for mut d in effects.decisions {
        for k in KINDS {
            let Some(setting) = settings.get(k.name) else {
                continue;
            };
            let Some(held) = (k.holds)(&d, setting) else {
                continue;
            };
            out.push(Decision {
                subject: d.subject.clone(),
                key: held.event.as_str().into(),
                event: held.event,
                guards: d.guards.clone(),
                marks: vec![Mark::Hold(HoldMark {
                    kind: k.name,
                    subject: d.subject.clone(),
                    reason: held.reason.clone(),
                    evidence: d.data.to_string(),
                })],
                data: held.data,
                slot: Slot::Once,
                reason: held.reason,
            });
            d.guards.push(Guard::HoldApproved {
                kind: k.name,
                subject: d.subject.clone(),
            });
        }
        out.push(d);
    }
    effects.decisions = out;
    effects
}

/// What a hold's answer decides (`DecisionRules::holds`): an approval
/// decides nothing here (the job that placed the hold runs again and its
/// waiting decision now passes); a rejection, what its kind says.
pub fn decided(h: &HoldSeen) -> Vec<Decision> {
    match (h.state, kind(&h.kind)) {
        (HoldState::Rejected, Some(k)) => (k.rejected)(h),
        _ => Vec::new(),
    }
}

/// The evidence of a hold as the rule read it (`{}` when unreadable).
pub fn evidence(h: &HoldSeen) -> serde_json::Value {
    serde_json::from_str(&h.evidence).unwrap_or_else(|_| serde_json::json!({}))
}
