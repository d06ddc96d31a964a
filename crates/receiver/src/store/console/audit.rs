//! The audit, on either backend: an action recorded before it runs, how
//! it ended, and the entries read back newest first.

use crate::domain::{Action, AuditOutcome, Via};
use crate::store::StoreError;
use crate::store::console_views::*;
use crate::store::sql::{Conn, Row, sql};
use crate::store::views::clamp;
use pointhook_common::clock::rfc3339;

pub(super) const AUDIT_COLUMNS: &str =
    "id, at, actor, via, action, item, account, order_id, detail, outcome, result";

pub(super) fn audit_row(r: &Row<'_>) -> Result<AuditView, StoreError> {
    Ok(AuditView {
        id: r.get(0)?,
        at: rfc3339(r.get(1)?),
        actor: r.get(2)?,
        via: r.get::<Via>(3)?.as_str(),
        action: r.get::<Action>(4)?.as_str(),
        item: r.get(5)?,
        account: r.get(6)?,
        order_id: r.get(7)?,
        detail: r.get(8)?,
        outcome: r.get::<AuditOutcome>(9)?.as_str(),
        result: r.get(10)?,
    })
}

/// Records an action as started; its id.
pub(super) async fn begin(c: &Conn<'_>, a: &NewAudit) -> Result<i64, StoreError> {
    c.query_one(
        sql!(
            "INSERT INTO audit (at, actor, via, action, item, account, order_id, detail, outcome)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id"
        ),
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
        |r| r.get(0),
    )
    .await
}

pub(super) async fn end(
    c: &Conn<'_>,
    id: i64,
    outcome: AuditOutcome,
    result: &str,
    now: i64,
) -> Result<(), StoreError> {
    c.execute(
        sql!("UPDATE audit SET outcome = $2, result = $3, ended_at = $4 WHERE id = $1"),
        &[&id, &outcome, &result, &now],
    )
    .await?;
    Ok(())
}

/// Newest first.
pub(super) async fn list(c: &Conn<'_>, f: &AuditFilter) -> Result<Vec<AuditView>, StoreError> {
    c.query(
        sql!(
            "SELECT id, at, actor, via, action, item, account, order_id, detail, outcome, result
             FROM audit
             WHERE (CAST($1 AS TEXT) IS NULL OR item = $1)
               AND (CAST($2 AS TEXT) IS NULL OR actor = $2)
               AND (CAST($3 AS BIGINT) IS NULL OR id < $3)
               AND (CAST($5 AS SMALLINT) IS NULL OR action <> $5)
             ORDER BY id DESC LIMIT $4"
        ),
        &[
            &f.item,
            &f.actor,
            &f.before,
            &clamp(f.limit),
            &f.without_alerts.then_some(Action::Alert),
        ],
        audit_row,
    )
    .await
}
