//! Holds: something a rule would decide waits for a person. A hold is
//! (account, kind, subject) with a state, the rule's reason and what it
//! read (evidence), and who decided and when. The kernel sees a hold as a
//! mark (`Mark::Hold`, written when the holding decision is recorded) and
//! an approval as a guard (`Guard::HoldApproved` on the decision that
//! waits), so what waited is recorded once, under its usual key. The kinds
//! are listed in `rules::holds`.

use super::decision::Decision;
use super::states::HoldState;

/// A hold to place, as a decision's mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldMark {
    /// Its kind's name (`rules::holds::Kind::name`).
    pub kind: &'static str,
    pub subject: String,
    pub reason: String,
    /// What the rule read, as JSON text: shown to the person, and read
    /// again by the kind when it is decided.
    pub evidence: String,
}

/// A hold as recorded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HoldSeen {
    pub id: i64,
    pub account: String,
    pub kind: String,
    pub subject: String,
    #[serde(serialize_with = "state_name")]
    pub state: HoldState,
    pub reason: String,
    /// JSON text.
    pub evidence: String,
    /// The job that placed it: it runs again when the hold is approved.
    pub job_id: Option<i64>,
    pub decided_by: Option<String>,
    /// Unix ms.
    pub decided_at: Option<i64>,
    pub created_at: i64,
}

fn state_name<S: serde::Serializer>(s: &HoldState, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.as_str())
}

/// What a person answers to a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldAnswer {
    Approve,
    Reject,
}

impl HoldAnswer {
    pub fn parse(s: &str) -> Option<HoldAnswer> {
        match s {
            "approve" => Some(HoldAnswer::Approve),
            "reject" => Some(HoldAnswer::Reject),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HoldAnswer::Approve => "approve",
            HoldAnswer::Reject => "reject",
        }
    }

    /// The state it leaves the hold in.
    pub fn state(self) -> HoldState {
        match self {
            HoldAnswer::Approve => HoldState::Approved,
            HoldAnswer::Reject => HoldState::Rejected,
        }
    }
}

/// What the store decides with when a person answers a hold: the
/// decisions its kind records then (`rules::holds::decided`).
pub type OnDecided = fn(&HoldSeen) -> Vec<Decision>;
