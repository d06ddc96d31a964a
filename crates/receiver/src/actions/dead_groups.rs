//! Dead jobs grouped by cause: the class of their failure as the job
//! keeps it (`domain::Failure`, never its words), the endpoint it names
//! and the hour the job died, so a platform outage that killed 500 jobs
//! is one item with one "retry all".

use crate::domain::FailureClass;
use crate::store::views::JobSummary;

/// Jobs of a group listed under it.
const LISTED: usize = 5;

/// Dead jobs that died of the same cause in the same hour.
pub struct Group {
    pub class: String,
    pub endpoint: String,
    /// The hour's start, unix ms.
    pub hour: i64,
    pub window: String,
    pub jobs: Vec<JobSummary>,
}

impl Group {
    pub fn count(&self) -> usize {
        self.jobs.len()
    }

    pub fn listed(&self) -> &[JobSummary] {
        &self.jobs[..self.jobs.len().min(LISTED)]
    }
}

/// A job no rule decides (a payment that is not its intent's): its own
/// item, not a group to retry.
pub fn is_mismatch(j: &JobSummary) -> bool {
    j.failure
        .as_ref()
        .is_some_and(|f| f.class == FailureClass::NeedsPerson)
}

/// What a group is named by: the failure's class and status, or "other"
/// for a job that died before failures were kept typed.
pub fn class_of(j: &JobSummary) -> String {
    j.failure
        .as_ref()
        .map_or_else(|| "other".to_string(), ToString::to_string)
}

/// The endpoint the failure names, else the job's kind.
pub fn endpoint_of(j: &JobSummary) -> String {
    j.failure
        .as_ref()
        .and_then(|f| f.endpoint.clone())
        .unwrap_or_else(|| j.kind.to_string())
}

pub const HOUR_MS: i64 = 3_600_000;

pub fn hour_of(j: &JobSummary) -> i64 {
    let at = j
        .updated_at
        .parse::<jiff::Timestamp>()
        .map_or(0, |t| t.as_millisecond());
    at - at.rem_euclid(HOUR_MS)
}

/// Dead jobs by (cause, endpoint, hour), the biggest group first.
pub fn group(jobs: Vec<JobSummary>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for j in jobs {
        let class = class_of(&j);
        let (endpoint, hour) = (endpoint_of(&j), hour_of(&j));
        match groups
            .iter_mut()
            .find(|g| g.class == class && g.endpoint == endpoint && g.hour == hour)
        {
            Some(g) => g.jobs.push(j),
            None => groups.push(Group {
                window: format!(
                    "{} and {}",
                    pointhook_common::clock::rfc3339(hour),
                    pointhook_common::clock::rfc3339(hour + HOUR_MS)
                ),
                class,
                endpoint,
                hour,
                jobs: vec![j],
            }),
        }
    }
    groups.sort_by(|a, b| b.jobs.len().cmp(&a.jobs.len()).then(b.hour.cmp(&a.hour)));
    groups
}
