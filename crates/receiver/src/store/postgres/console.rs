//! What the operator console writes on PostgreSQL (the same as SQLite's
//! `console.rs`): operators, sessions, the audit, acknowledgements and the
//! charts' samples; and `PgStore`'s methods for the console, reads in
//! `console_reads.rs`.

use super::PgStore;
use super::console_lists::{self as lists, AUDIT_COLUMNS, audit_row};
use super::console_reads as reads;
use super::listen::Channel;
use crate::domain::{Action, AuditOutcome, JobState};
use crate::store::StoreError;
use crate::store::console_views::*;
use crate::store::views::{
    DeliveryFilter, DeliverySummary, EventSummary, JobSummary, ReviewView, clamp,
};
use pointhook_common::clock::rfc3339;

impl PgStore {
    pub async fn add_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        Ok(self
            .client()
            .await?
            .execute(
                "INSERT INTO operators (name, password_hash, created_at, updated_at)
                 VALUES ($1, $2, $3, $3) ON CONFLICT (name) DO NOTHING",
                &[&name, &hash, &now],
            )
            .await?
            == 1)
    }

    pub async fn reset_operator(
        &self,
        name: String,
        hash: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        let n = tx
            .execute(
                "UPDATE operators SET password_hash = $2, updated_at = $3 WHERE name = $1",
                &[&name, &hash, &now],
            )
            .await?;
        tx.execute("DELETE FROM sessions WHERE operator = $1", &[&name])
            .await?;
        tx.commit().await?;
        Ok(n == 1)
    }

    pub async fn remove_operator(&self, name: String) -> Result<bool, StoreError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        let n = tx
            .execute("DELETE FROM operators WHERE name = $1", &[&name])
            .await?;
        tx.execute("DELETE FROM sessions WHERE operator = $1", &[&name])
            .await?;
        tx.commit().await?;
        Ok(n == 1)
    }

    pub async fn operators(&self) -> Result<Vec<OperatorView>, StoreError> {
        self.client()
            .await?
            .query(
                "SELECT name, created_at, updated_at,
                        (SELECT count(*) FROM sessions s WHERE s.operator = o.name)
                 FROM operators o ORDER BY name",
                &[],
            )
            .await?
            .iter()
            .map(|r| {
                Ok(OperatorView {
                    name: r.try_get(0)?,
                    created_at: rfc3339(r.try_get(1)?),
                    updated_at: rfc3339(r.try_get(2)?),
                    sessions: r.try_get(3)?,
                })
            })
            .collect()
    }

    pub async fn password_hash(&self, name: String) -> Result<Option<String>, StoreError> {
        Ok(self
            .client()
            .await?
            .query_opt(
                "SELECT password_hash FROM operators WHERE name = $1",
                &[&name],
            )
            .await?
            .map(|r| r.try_get(0))
            .transpose()?)
    }

    pub async fn open_session(
        &self,
        token_hash: Vec<u8>,
        operator: String,
        csrf: String,
        now: i64,
    ) -> Result<(), StoreError> {
        self.client()
            .await?
            .execute(
                "INSERT INTO sessions (token_hash, operator, csrf, created_at, seen_at)
                 VALUES ($1, $2, $3, $4, $4)",
                &[&token_hash, &operator, &csrf, &now],
            )
            .await?;
        Ok(())
    }

    pub async fn session(&self, token_hash: Vec<u8>) -> Result<Option<Session>, StoreError> {
        self.client()
            .await?
            .query_opt(
                "SELECT s.operator, s.csrf, s.seen_at FROM sessions s
                 JOIN operators o ON o.name = s.operator WHERE s.token_hash = $1",
                &[&token_hash],
            )
            .await?
            .map(|r| {
                Ok(Session {
                    operator: r.try_get(0)?,
                    csrf: r.try_get(1)?,
                    seen_at: r.try_get(2)?,
                })
            })
            .transpose()
    }

    pub async fn touch_session(&self, token_hash: Vec<u8>, now: i64) -> Result<(), StoreError> {
        self.client()
            .await?
            .execute(
                "UPDATE sessions SET seen_at = $2 WHERE token_hash = $1",
                &[&token_hash, &now],
            )
            .await?;
        Ok(())
    }

    pub async fn close_session(&self, token_hash: Vec<u8>) -> Result<(), StoreError> {
        self.client()
            .await?
            .execute("DELETE FROM sessions WHERE token_hash = $1", &[&token_hash])
            .await?;
        Ok(())
    }

    pub async fn close_idle_sessions(&self, seen_before: i64) -> Result<usize, StoreError> {
        Ok(self
            .client()
            .await?
            .execute("DELETE FROM sessions WHERE seen_at < $1", &[&seen_before])
            .await? as usize)
    }

    pub async fn begin_audit(&self, a: NewAudit) -> Result<i64, StoreError> {
        Ok(self
            .client()
            .await?
            .query_one(
                "INSERT INTO audit (at, actor, via, action, item, account, order_id, detail, outcome)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
                &[
                    &a.at,
                    &a.actor,
                    &a.via,
                    &a.action,
                    &a.item,
                    &a.account,
                    &a.order_id,
                    &a.detail,
                    &AuditOutcome::Started,
                ],
            )
            .await?
            .try_get(0)?)
    }

    pub async fn end_audit(
        &self,
        id: i64,
        outcome: AuditOutcome,
        result: String,
        now: i64,
    ) -> Result<(), StoreError> {
        self.client()
            .await?
            .execute(
                "UPDATE audit SET outcome = $2, result = $3, ended_at = $4 WHERE id = $1",
                &[&id, &outcome, &result, &now],
            )
            .await?;
        Ok(())
    }

    pub async fn audit(&self, f: AuditFilter) -> Result<Vec<AuditView>, StoreError> {
        self.client()
            .await?
            .query(
                &format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit
                     WHERE ($1::text IS NULL OR item = $1) AND ($2::text IS NULL OR actor = $2)
                       AND ($3::bigint IS NULL OR id < $3)
                       AND ($5::smallint IS NULL OR action <> $5)
                     ORDER BY id DESC LIMIT $4"
                ),
                &[
                    &f.item,
                    &f.actor,
                    &f.before,
                    &clamp(f.limit),
                    &f.without_alerts.then_some(Action::Alert as i16),
                ],
            )
            .await?
            .iter()
            .map(audit_row)
            .collect()
    }

    pub async fn acknowledge(
        &self,
        item: String,
        actor: String,
        now: i64,
    ) -> Result<bool, StoreError> {
        Ok(self
            .client()
            .await?
            .execute(
                "INSERT INTO acknowledgements (item, actor, at) VALUES ($1, $2, $3)
                 ON CONFLICT (item) DO NOTHING",
                &[&item, &actor, &now],
            )
            .await?
            == 1)
    }

    pub async fn is_acknowledged(&self, item: String) -> Result<bool, StoreError> {
        Ok(self
            .client()
            .await?
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM acknowledgements WHERE item = $1)",
                &[&item],
            )
            .await?
            .try_get(0)?)
    }

    pub async fn record_samples(&self, samples: Vec<Sample>) -> Result<(), StoreError> {
        let (mut minutes, mut instances, mut series, mut values) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in samples {
            minutes.push(s.minute);
            instances.push(s.instance);
            series.push(s.series);
            values.push(s.value);
        }
        self.client()
            .await?
            .execute(
                "INSERT INTO samples (minute, instance, series, value)
                 SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[])
                 ON CONFLICT (minute, instance, series) DO UPDATE SET value = excluded.value",
                &[&minutes, &instances, &series, &values],
            )
            .await?;
        Ok(())
    }

    pub async fn prune_samples(&self, before: i64) -> Result<usize, StoreError> {
        Ok(self
            .client()
            .await?
            .execute("DELETE FROM samples WHERE minute < $1", &[&before])
            .await? as usize)
    }

    pub async fn samples(&self, since: i64) -> Result<Vec<Sample>, StoreError> {
        self.client()
            .await?
            .query(
                "SELECT minute, instance, series, value FROM samples WHERE minute >= $1
                 ORDER BY minute",
                &[&since],
            )
            .await?
            .iter()
            .map(|r| {
                Ok(Sample {
                    minute: r.try_get(0)?,
                    instance: r.try_get(1)?,
                    series: r.try_get(2)?,
                    value: r.try_get(3)?,
                })
            })
            .collect()
    }

    pub async fn decisions_after(&self, id: i64) -> Result<(i64, i64), StoreError> {
        let r = self
            .client()
            .await?
            .query_one(
                "SELECT count(*), coalesce(max(id), $1) FROM decisions WHERE id > $1",
                &[&id],
            )
            .await?;
        Ok((r.try_get(0)?, r.try_get(1)?))
    }

    pub async fn missed_per_day(&self, since: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        lists::missed_per_day(&self.client().await?, since).await
    }

    pub async fn retry_jobs(&self, ids: Vec<i64>, now: i64) -> Result<Vec<i64>, StoreError> {
        let retried = self
            .client()
            .await?
            .query(
                "UPDATE jobs SET state = $2, attempts = 0, run_at = $3, last_error = NULL,
                     updated_at = $3
                 WHERE id = ANY($1) AND state = $4 RETURNING id",
                &[&ids, &JobState::Pending, &now, &JobState::Dead],
            )
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<Vec<i64>, _>>()?;
        self.wake(Channel::Jobs).await;
        Ok(retried)
    }

    pub async fn inbox(&self, limit: i64) -> Result<Inbox, StoreError> {
        reads::inbox(&self.client().await?, limit).await
    }

    pub async fn review(&self, id: i64) -> Result<Option<ReviewDetail>, StoreError> {
        let c = self.client().await?;
        match reads::review_view(&c, id).await? {
            Some(r) => Ok(Some(reads::detail(&c, r).await?)),
            None => Ok(None),
        }
    }

    pub async fn review_of(&self, id: i64) -> Result<Option<ReviewView>, StoreError> {
        reads::review_view(&self.client().await?, id).await
    }

    pub async fn timeline(
        &self,
        account: String,
        kind: &'static str,
        id: String,
    ) -> Result<Option<Timeline>, StoreError> {
        super::console_timeline::timeline(&self.client().await?, &account, kind, &id).await
    }

    pub async fn search(
        &self,
        accounts: Vec<String>,
        text: String,
    ) -> Result<Vec<Found>, StoreError> {
        reads::search(&self.client().await?, &accounts, &text).await
    }

    pub async fn order_list(
        &self,
        list: OrderList,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Page<OrderRow>, StoreError> {
        lists::order_list(&self.client().await?, list, cursor.as_deref(), limit).await
    }

    pub async fn job_page(&self, filter: JobFilter) -> Result<Page<JobSummary>, StoreError> {
        lists::job_page(&self.client().await?, &filter).await
    }

    pub async fn event_page(&self, filter: EventFilter) -> Result<Page<EventSummary>, StoreError> {
        lists::event_page(&self.client().await?, &filter).await
    }

    pub async fn delivery_page(
        &self,
        filter: DeliveryFilter,
    ) -> Result<Page<DeliverySummary>, StoreError> {
        lists::delivery_page(&self.client().await?, &filter).await
    }

    pub async fn job_deaths(&self, job: i64) -> Result<Vec<DeathView>, StoreError> {
        self.client()
            .await?
            .query(
                "SELECT ended_at, attempts, last_error, revived_at FROM job_history
                 WHERE job_id = $1 ORDER BY ended_at",
                &[&job],
            )
            .await?
            .iter()
            .map(|r| {
                Ok(DeathView {
                    died_at: rfc3339(r.try_get(0)?),
                    attempts: i64::from(r.try_get::<_, i32>(1)?),
                    last_error: r.try_get(2)?,
                    revived_at: rfc3339(r.try_get(3)?),
                })
            })
            .collect()
    }

    pub async fn event_attempts(&self, event: String) -> Result<Vec<AttemptView>, StoreError> {
        lists::event_attempts(&self.client().await?, &event).await
    }
}
