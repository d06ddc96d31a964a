//! What the store takes and gives back: new deliveries and jobs, a leased
//! job and how it ended, a leased event. Backend-neutral: no database type
//! appears here.

use sha2::{Digest, Sha256};

use crate::domain::{Effects, Failure, JobKind, Kind, Lane, SignatureStatus, Work};

/// A request accepted at the notification endpoint, ready to store.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub received_at: i64,
    pub account: String,
    pub kind: Kind,
    pub topic: String,
    /// Empty when the notification names nothing (a topic not acted on).
    pub resource_id: String,
    pub notification_id: Option<String>,
    pub source_news: Option<String>,
    pub query: String,
    /// JSON object of the headers we keep.
    pub headers: String,
    pub body: bytes::Bytes,
    /// Set when `body` was cut short: the size received.
    pub body_size: Option<usize>,
    /// Set with `body_size`: the SHA-256 of the whole body received.
    pub body_sha256: Option<[u8; 32]>,
    pub remote_addr: String,
    pub fingerprint: [u8; 32],
    pub signature: SignatureStatus,
    /// `{ts}:{v1}` of a valid signature, looked up to refuse a replay.
    pub signature_key: Option<String>,
    /// `None`: a topic we do not handle (recorded, no job).
    pub job: Option<NewJob>,
}

#[derive(Debug, Clone)]
pub struct NewJob {
    pub key: String,
    pub kind: JobKind,
    pub resource_id: String,
    /// `domain::Work` as JSON: what the job runs.
    pub work: String,
    /// `Work::rank`: coalescing keeps the work of the higher rank.
    pub rank: i64,
    /// Where it waits: `Live` but for what reconciliation finds.
    pub lane: Lane,
}

impl NewJob {
    /// The job that runs `work`, in the live lane.
    pub fn for_work(work: &Work) -> NewJob {
        NewJob {
            key: work.job_key(),
            kind: work.job_kind(),
            resource_id: work.resource_id(),
            work: work.to_json(),
            rank: work.rank(),
            lane: Lane::Live,
        }
    }

    /// The same job, waiting in the backlog (work nobody is waiting for).
    pub fn in_backlog(self) -> NewJob {
        NewJob {
            lane: Lane::Backlog,
            ..self
        }
    }
}

/// Of every `BACKLOG_TURN` jobs a worker leases, one is the backlog's
/// oldest due job, when it has one: enough that retries and a backfill
/// always move, little enough that a live sale waits behind at most a
/// quarter of the slots.
pub const BACKLOG_TURN: u64 = 4;

/// What one lease takes: up to `limit` jobs, the first `backlog` of them
/// (when due) the oldest of all, then the newest live ones, then the
/// oldest again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    pub limit: usize,
    pub backlog: usize,
}

impl Take {
    /// The lease of `limit` jobs whose first slot is the `turn`-th a worker
    /// leases (from 0): the slots numbered `BACKLOG_TURN - 1` modulo
    /// `BACKLOG_TURN` are the backlog's.
    pub fn at(turn: u64, limit: usize) -> Take {
        let end = turn.saturating_add(limit as u64);
        Take {
            limit,
            backlog: (end / BACKLOG_TURN - turn / BACKLOG_TURN) as usize,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ingested {
    pub delivery_id: i64,
    pub duplicate: bool,
    pub job_id: Option<i64>,
}

/// What makes two deliveries "the same notification": account, kind, topic,
/// resource and the exact body. Headers are left out on purpose: a retry
/// carries a new `x-request-id` and signature.
pub fn fingerprint(
    account: &str,
    kind: Kind,
    topic: &str,
    resource_id: &str,
    body: &[u8],
) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [
        account.as_bytes(),
        kind.as_str().as_bytes(),
        topic.as_bytes(),
        resource_id.as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update(body);
    h.finalize().into()
}

/// What one lease took, and when the next one falls due: the caller that
/// took fewer than it asked has nothing else due now and sleeps until then,
/// without a query of its own.
#[derive(Debug)]
pub struct Lease<T> {
    pub taken: Vec<T>,
    /// When fewer than asked were taken: the earliest time (unix ms) one
    /// not taken falls due, if any is waiting (for events, a lease taken
    /// here that runs out counts too). `None` when the lease was full.
    pub next_due: Option<i64>,
}

/// A job the worker holds.
#[derive(Debug, Clone)]
pub struct LeasedJob {
    pub id: i64,
    pub account: String,
    pub key: String,
    pub kind: JobKind,
    pub resource_id: String,
    /// The delivery its work came from (`None`: made by a person or pointhook).
    pub input_delivery_id: Option<i64>,
    /// What to run; `Err` holds why the stored work cannot be read.
    pub work: Result<Work, String>,
    /// This run's number, from 1.
    pub attempt: u32,
    /// Its latest notification is one anybody could have sent (an IPN, a
    /// webhook with no valid signature over its id): when the API does not
    /// know what it names, the job gives up sooner (`rules::wait`).
    pub unauthenticated: bool,
}

impl LeasedJob {
    /// The stored work, read back (`Err`: why it cannot be).
    pub fn read_work(text: Option<String>) -> Result<Work, String> {
        let text = text.ok_or("the job has no work recorded")?;
        serde_json::from_str(&text).map_err(|e| format!("the job's work cannot be read: {e}"))
    }
}

/// What became of a run's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// Recorded; these events were queued.
    Recorded(Vec<String>),
    /// The lease was lost: nothing was recorded.
    LeaseLost,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub enum JobOutcome {
    /// Decided: the effects are applied, then the job is done, or pending
    /// again at once when a notification asked for a re-run while it ran.
    Done(Effects),
    /// Failed for now: pending again at `run_at` (sooner if re-run was asked).
    Retry {
        run_at: i64,
        error: String,
        failure: Failure,
    },
    /// Failed for good, or out of attempts.
    Dead { error: String, failure: Failure },
}

/// An API call made by a run, kept for the operator.
#[derive(Debug, Clone)]
pub struct FetchRow {
    pub endpoint: &'static str,
    pub resource_id: String,
    pub status: u16,
    pub elapsed_ms: u64,
    pub at: i64,
    /// What the answer said of the resource's version (`api::calls::Fetch::seen`).
    pub seen: Option<String>,
    /// The resource as read (`api::calls::Fetch::body`).
    pub body: Option<Vec<u8>>,
}

/// A resource a platform search listed, with the version it listed.
#[derive(Debug, Clone)]
pub struct Sighting {
    /// `api::endpoint::Endpoint` name of the read that would see it.
    pub endpoint: &'static str,
    pub resource_id: String,
    /// Compared with what reads recorded (`api::endpoint::version_of`).
    pub version: String,
    /// The job a notification of it would have made.
    pub job: NewJob,
    /// When the platform says it changed (unix ms), if it says.
    pub changed_at: Option<i64>,
}

/// An event leased for a delivery attempt at one destination. `attempts`
/// (that destination's) is its fence: the outcome is recorded only while
/// its queue row still has that many attempts.
#[derive(Debug, Clone)]
pub struct LeasedEvent {
    pub id: String,
    pub body: String,
    pub created_at: i64,
    pub attempts: u32,
    /// Since when this destination has tried it (queued, recovered or
    /// sent again): the give-up clock runs from here.
    pub queued_at: i64,
}

/// How one delivery attempt of a leased event ended.
#[derive(Debug, Clone)]
pub enum Attempted {
    /// The endpoint answered 2xx at `at`.
    Delivered { at: i64 },
    /// Try again at `next`, or give up (`next` is `None`).
    Failed { error: String, next: Option<i64> },
}

/// An attempt to record: the event as leased (its fence) and how it ended.
#[derive(Debug, Clone)]
pub struct EventOutcome {
    pub event: LeasedEvent,
    pub attempted: Attempted,
}

/// What the answers of one batch say of its destination:
/// the store records its health with the outcomes.
#[derive(Debug, Clone)]
pub struct BatchHealth {
    /// When the batch's answers came (unix ms).
    pub now: i64,
    /// The endpoint answered `410 Gone`: disabled at once, for this reason.
    pub gone: Option<String>,
    /// Disabled when every attempt has failed since this time or earlier
    /// (unix ms), for `failing_reason`.
    pub failing_cutoff: i64,
    pub failing_reason: String,
}

/// What recording a batch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Per outcome, `false` when its lease was lost (another attempt
    /// recorded first, or a person sent it again meanwhile).
    pub held: Vec<bool>,
    /// This batch disabled the destination.
    pub disabled: bool,
}

/// What asking for a recovery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// This many events are queued again, oldest first.
    Queued(u64),
    NotFound,
    /// A disabled destination is enabled first.
    Disabled,
}

/// How a person's answer to a hold ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldDone {
    Done(Box<crate::domain::HoldSeen>),
    NotFound,
    /// Decided already (its state).
    AlreadyDecided(crate::domain::HoldState),
}
