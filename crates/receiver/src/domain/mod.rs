//! Domain types shared by every part: typed ids (`ids`), the stored states
//! and kinds (`states`), the work a notification asks for (`work`), and
//! what a job decides (`decision`).

pub mod decision;
pub mod ids;
pub mod states;
pub mod work;

pub use decision::{Decision, Effects, EventType, Guard, HeldAlert, Mark, OrderSeen, Slot};
pub use ids::{
    ChargebackId, Id, IdError, IdKind, IntentId, MerchantOrderId, PaymentId, PlatformOrderId,
    ResourceId, kinds,
};
pub use states::{
    EventState, IntentState, JobKind, JobState, Kind, Review, SignatureStatus,
    UnauthenticatedAlerts,
};
pub use work::{FraudAlert, Work};
