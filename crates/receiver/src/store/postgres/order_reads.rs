//! An order as the admin API and `orders show` read it: its state, the
//! notifications, API calls, decisions (with their reasons) and events
//! about it.

use deadpool_postgres::Client;

use crate::store::StoreError;
use crate::store::console_views::event_data;
use crate::store::views::DecisionView;
use pointhook_common::clock::rfc3339;

/// The decisions about `subject`, oldest first, each with its reason.
pub(super) async fn decisions(
    c: &Client,
    account: &str,
    subject: &str,
) -> Result<Vec<DecisionView>, StoreError> {
    c.query(
        "SELECT d.id, d.subject, d.key, d.event_type, d.event_id, d.job_id, d.created_at, e.body, d.reason
             FROM decisions d LEFT JOIN events e ON e.id = d.event_id
             WHERE d.account = $1 AND d.subject = $2 ORDER BY d.id LIMIT 200",
        &[&account, &subject],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(DecisionView {
            id: r.try_get(0)?,
            subject: r.try_get(1)?,
            key: r.try_get(2)?,
            event_type: r.try_get(3)?,
            event_id: r.try_get(4)?,
            job_id: r.try_get(5)?,
            created_at: rfc3339(r.try_get(6)?),
            data: event_data(r.try_get(7)?),
            reason: r.try_get(8)?,
        })
    })
    .collect()
}
