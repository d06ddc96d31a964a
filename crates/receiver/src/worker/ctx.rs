//! What a running job reaches for: the API, the store, the clock, and the
//! account's settings; and the two things every handler does with them
//! (record a step durably, ask whether it may wait once more).

use super::JobError;
use crate::api::ApiClient;
use crate::api::calls::CallLog;
use crate::domain::Effects;
use crate::metrics::SharedMetrics;
use crate::rules::wait::{self, Wait};
use crate::rules::{Policies, Policy};
use crate::store::{Finish, LeasedJob, Store};
use pointhook_common::clock::Clock;

pub(super) struct Ctx<'a> {
    pub api: &'a ApiClient,
    /// The run's API calls, for the job's history.
    pub calls: &'a CallLog,
    pub store: &'a Store,
    pub clock: &'a dyn Clock,
    pub max_attempts: u32,
    /// Each account's policy.
    pub policies: &'a Policies,
    pub metrics: &'a SharedMetrics,
}

impl Ctx<'_> {
    pub fn now(&self) -> i64 {
        crate::store::unix_ms(self.clock.now())
    }

    /// Records `effects` now, mid-run; the run stops if its lease is lost.
    pub async fn record(&self, job: &LeasedJob, effects: Effects) -> Result<(), JobError> {
        match self
            .store
            .record_effects(job.clone(), effects, self.now())
            .await?
        {
            Finish::Recorded(_) => Ok(()),
            Finish::LeaseLost => Err(JobError::LeaseLost),
        }
    }

    /// The policy of the job's account, whole: what each rule it runs
    /// reads of the account's settings.
    pub fn policy(&self, job: &LeasedJob) -> &Policy {
        self.policies.of(&job.account)
    }

    /// Whether the job may ask the API once more for `why`.
    pub fn may_wait(&self, job: &LeasedJob, why: Wait) -> bool {
        wait::again(why, job.attempt, self.max_attempts)
    }
}
