//! How long a job waits for the platform to catch up before it decides
//! from what it has (or ends without a decision): each case asks again for
//! a bounded number of attempts, within the job's own `max_attempts`.

/// Why a job would ask the API again rather than decide now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// An approved payment its merchant order does not list as approved
    /// yet: the two are not updated at once (about four minutes).
    OrderBehind,
    /// An intent or an order still moving (about a minute); a later
    /// notification brings the change.
    NotFinal,
    /// The API does not know the resource (404): a notification can come
    /// before its resource reads.
    NotFound,
    /// The same, for what a notification anybody could have sent named (an
    /// IPN, an unsigned webhook): two reads at most, then the job ends
    /// without a decision and reconciliation finds the resource if it is
    /// real. A flood of made-up ids costs the account's quota that much.
    NotFoundUnauthenticated,
}

impl Wait {
    /// The attempts a job may spend on this wait.
    pub fn attempts(self) -> u32 {
        match self {
            Wait::OrderBehind => 8,
            Wait::NotFinal => 6,
            Wait::NotFound => 5,
            Wait::NotFoundUnauthenticated => 2,
        }
    }
}

/// Whether a run numbered `attempt` (from 1) may wait once more.
pub fn again(why: Wait, attempt: u32, max_attempts: u32) -> bool {
    attempt < why.attempts().min(max_attempts)
}
