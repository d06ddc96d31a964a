//! Domain types shared by every part: typed ids (`ids`), the stored states
//! and kinds (`states`), the platform's resources as the rules read them
//! (`platform`), the work a notification asks for (`work`), what a job
//! decides (`decision`), why a job failed (`failure`), what the decision
//! kernel is given and answers (`verdict`), what a decision is about
//! (`subject`), holds for a person (`holds`), what an order is known by
//! (`refs`); the inbox's typed items (`item`); what needs a person
//! (`attention`) and what the audit records of a person's actions
//! (`audit`).

pub mod attention;
pub mod audit;
pub mod decision;
pub mod failure;
pub mod holds;
pub mod ids;
pub mod item;
pub mod platform;
pub mod refs;
pub mod states;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod stored;
pub mod subject;
pub mod verdict;
pub mod work;

pub use audit::{Action, AuditOutcome, Via};
pub use decision::{
    Decision, Effects, EventType, Guard, GuardFacts, Mark, OrderFlags, OrderPayment, OrderReviews,
    OrderSeen, ReviewMark, ReviewSeen, Slot, event_id,
};
pub use failure::{Failure, FailureClass};
pub use holds::{HoldAnswer, HoldMark, HoldSeen};
pub use ids::{
    ChargebackId, Id, IdError, IdKind, IntentId, MerchantOrderId, PaymentId, PlatformOrderId,
    ResourceId, kinds,
};
pub use item::{Item, ItemAction, ItemKey, ItemKind, KindSpec, NotAnItem};
pub use refs::{OrderRef, RefKind};
pub use states::{
    DestinationState, EventState, HoldState, IntentState, JobKind, JobState, Kind, Lane, Review,
    SignatureStatus, UnauthenticatedAlerts,
};
pub use work::{FraudAlert, Work};
