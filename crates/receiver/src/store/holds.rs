//! Holds (`domain::holds`), every kind in one table: placed by a decision's
//! mark inside the deciding transaction, read by the guards that wait on
//! them, listed for a person, and answered (approve or reject) in one
//! transaction that records what the hold's kind decides then and runs
//! again the job that placed it. Each query is one text for both backends;
//! what the deciding transaction writes and reads of a hold (its mark, the
//! guard's state) is `hold_marks.rs`.

pub use super::model::HoldDone;
use super::sql::{Conn, Row, sql};
use super::{Store, StoreError};
use crate::domain::verdict::DecisionRules;
use crate::domain::{Decision, Effects, HoldAnswer, HoldSeen, HoldState, JobState};

const COLUMNS: &str = "id, account, kind, subject, state, reason, evidence, job_id, decided_by, \
                       decided_at, created_at";

fn row(r: &Row<'_>) -> Result<HoldSeen, StoreError> {
    Ok(HoldSeen {
        id: r.get(0)?,
        account: r.get(1)?,
        kind: r.get(2)?,
        subject: r.get(3)?,
        state: r.get(4)?,
        reason: r.get(5)?,
        evidence: r.get(6)?,
        job_id: r.get(7)?,
        decided_by: r.get(8)?,
        decided_at: r.get(9)?,
        created_at: r.get(10)?,
    })
}

impl Store {
    /// Holds newest first: of one state and kind when given, older than
    /// the hold `before` when given (the next page). Fraud reviews, which
    /// have their own inbox section and alert, only when asked by kind.
    pub async fn holds(
        &self,
        state: Option<HoldState>,
        kind: Option<String>,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<HoldSeen>, StoreError> {
        let limit = limit.clamp(1, super::MAX_LIMIT) as i64;
        let before = before.unwrap_or(i64::MAX);
        self.read(move |c| {
            Box::pin(async move {
                c.query(
                    &format!(
                        "SELECT {COLUMNS} FROM holds
                         WHERE (CAST($1 AS SMALLINT) IS NULL OR state = $1)
                           AND (CAST($2 AS TEXT) IS NULL OR kind = $2)
                           AND (CAST($2 AS TEXT) IS NOT NULL OR kind <> '{}')
                           AND id < $3
                         ORDER BY id DESC LIMIT $4",
                        super::reviews::KIND
                    ),
                    &[&state, &kind, &before, &limit],
                    row,
                )
                .await
            })
        })
        .await
    }

    pub async fn hold(&self, id: i64) -> Result<Option<HoldSeen>, StoreError> {
        self.read(move |c| Box::pin(get(c, id))).await
    }

    /// Holds waiting for a person, counted by kind (fraud reviews are
    /// counted by their own gauge, `pointhook_fraud_reviews_held`).
    pub async fn holds_waiting(&self) -> Result<Vec<(String, i64)>, StoreError> {
        self.read(|c| {
            Box::pin(c.query(
                sql!(
                    "SELECT kind, count(*) FROM holds WHERE state = $1 AND kind <> $2
                     GROUP BY kind"
                ),
                &[&HoldState::Held, &super::reviews::KIND],
                |r| Ok((r.get(0)?, r.get(1)?)),
            ))
        })
        .await
    }

    /// A person answers a held hold: it is marked decided by `by`, the job
    /// that placed it runs again when approved (what waited on it is then
    /// decided under its usual key), and what its kind decides now is
    /// recorded, all in one transaction.
    pub async fn answer_hold(
        &self,
        id: i64,
        answer: HoldAnswer,
        by: String,
        now: i64,
    ) -> Result<HoldDone, StoreError> {
        if self
            .hold(id)
            .await?
            .is_some_and(|h| h.kind == super::reviews::KIND)
        {
            return self.answer_review(id, answer, by, now).await;
        }
        let rules = self.inner.rules.clone();
        let (done, emitted) = self
            .write(move |c| {
                let (rules, by) = (rules.clone(), by.clone());
                Box::pin(async move { answer_in(c, id, answer, &by, now, &rules).await })
            })
            .await?;
        if emitted {
            self.inner.events_ready.notify_one();
        }
        self.inner.jobs_ready.notify_one();
        Ok(done)
    }
}

async fn get(c: &Conn<'_>, id: i64) -> Result<Option<HoldSeen>, StoreError> {
    c.query_opt(
        &format!("SELECT {COLUMNS} FROM holds WHERE id = $1"),
        &[&id],
        row,
    )
    .await
}

async fn answer_in(
    c: &Conn<'_>,
    id: i64,
    answer: HoldAnswer,
    by: &str,
    now: i64,
    rules: &DecisionRules,
) -> Result<(HoldDone, bool), StoreError> {
    let Some(hold) = get(c, id).await? else {
        return Ok((HoldDone::NotFound, false));
    };
    if hold.state != HoldState::Held {
        return Ok((HoldDone::AlreadyDecided(hold.state), false));
    }
    let to = answer.state();
    c.execute(
        sql!(
            "UPDATE holds SET state = $2, decided_by = $3, decided_at = $4
             WHERE id = $1 AND state = $5"
        ),
        &[&id, &to, &by, &now, &HoldState::Held],
    )
    .await?;
    let hold = HoldSeen {
        state: to,
        decided_by: Some(by.to_string()),
        decided_at: Some(now),
        ..hold
    };
    if let (HoldAnswer::Approve, Some(job)) = (answer, hold.job_id) {
        // As a job notified again: a running one runs once more, a done
        // or dead one is due now with fresh attempts.
        c.execute(
            sql!(
                "UPDATE jobs SET
                     rerun = CASE WHEN state = $2 THEN $5 ELSE rerun END,
                     attempts = CASE WHEN state = $2 THEN attempts ELSE 0 END,
                     state = CASE WHEN state = $2 THEN state ELSE $3 END,
                     run_at = $4, last_error = NULL, updated_at = $4
                 WHERE id = $1"
            ),
            &[&job, &JobState::Running, &JobState::Pending, &now, &true],
        )
        .await?;
    }
    let decisions = (rules.holds)(&hold);
    let emitted = record(c, &hold.account, decisions, now, rules).await?;
    Ok((HoldDone::Done(Box::new(hold)), emitted))
}

/// Records decisions taken outside a job through the backend's decision
/// writer (the kernel's one path); whether an event was queued.
async fn record(
    c: &Conn<'_>,
    account: &str,
    decisions: Vec<Decision>,
    now: i64,
    rules: &DecisionRules,
) -> Result<bool, StoreError> {
    if decisions.is_empty() {
        return Ok(false);
    }
    match c {
        Conn::Sqlite(m) => {
            let conn = m.lock().unwrap_or_else(|p| p.into_inner());
            let mut emitted = false;
            for d in &decisions {
                emitted |= super::sqlite::decisions::decide(&conn, account, None, d, now, rules)?
                    .is_some();
            }
            Ok(emitted)
        }
        Conn::PgTx(tx) => {
            let effects = Effects {
                decisions,
                ..Effects::default()
            };
            let ids =
                super::postgres::decisions::apply(tx, account, None, &effects, now, rules, None)
                    .await?;
            Ok(!ids.is_empty())
        }
        Conn::Pg(_) => Err(StoreError::Database(
            "a hold is answered inside a transaction".into(),
        )),
    }
}
