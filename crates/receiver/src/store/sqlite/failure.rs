//! A run's failure written beside its error (`store::failures`), fenced
//! like the outcome it goes with: same attempt, still running. `finish`
//! calls it before the outcome's own update moves the job on.

use rusqlite::{Connection, params};

use crate::domain::JobState;
use crate::store::failures::FailureCells;
use crate::store::model::{JobOutcome, LeasedJob};

pub(super) fn write(
    conn: &Connection,
    job: &LeasedJob,
    outcome: &JobOutcome,
) -> rusqlite::Result<()> {
    let cells = FailureCells::of(outcome);
    conn.prepare_cached(
        "UPDATE jobs SET failure_class = ?4, failure_status = ?5, failure_endpoint = ?6
         WHERE id = ?1 AND attempts = ?2 AND state = ?3",
    )?
    .execute(params![
        job.id,
        job.attempt,
        JobState::Running,
        cells.class,
        cells.status,
        cells.endpoint
    ])?;
    Ok(())
}
