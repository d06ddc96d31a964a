//! What the inbox and the pages of one review or hold show of an item:
//! the review with what confirming it would do, the hold with its kind's
//! words. Shared by `inbox.rs`, `act.rs`, `items.rs` and `holds.rs`.

use crate::actions::{Consequence, hold_does};
use crate::domain::{HoldAnswer, HoldSeen, HoldState};
use crate::rules::holds::{evidence, kind};
use crate::store::console_views::ReviewDetail;

/// A fraud review with what confirming it would do.
pub struct ReviewItem {
    pub d: ReviewDetail,
    pub c: Consequence,
}

/// A hold as the console shows it, with its kind's words.
pub struct HoldItem {
    pub h: HoldSeen,
    pub title: String,
    pub since: String,
    pub decided: Option<String>,
    pub held: bool,
    pub approve: String,
    pub reject: String,
    /// What the rule read, one line per field.
    pub evidence: Vec<(String, String)>,
}

impl HoldItem {
    pub fn of(h: HoldSeen) -> HoldItem {
        let evidence = match evidence(&h) {
            serde_json::Value::Object(m) => m
                .into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (k, v)
                })
                .collect(),
            _ => Vec::new(),
        };
        HoldItem {
            title: kind(&h.kind).map_or_else(|| h.kind.clone(), |k| k.title.to_string()),
            since: pointhook_common::clock::rfc3339(h.created_at),
            decided: h.decided_at.map(pointhook_common::clock::rfc3339),
            held: h.state == HoldState::Held,
            approve: hold_does(&h, HoldAnswer::Approve),
            reject: hold_does(&h, HoldAnswer::Reject),
            evidence,
            h,
        }
    }
}
