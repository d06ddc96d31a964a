//! Device events waiting to be mailed, and whether each went.

use rusqlite::params;

use super::{Result, Tx};
use crate::model::MailState;

/// A device event due to be mailed.
pub struct DueMail {
    pub id: i64,
    pub account: String,
    pub email: Option<String>,
    pub device: String,
    pub event: String,
    pub at: i64,
}

/// Records a device event (`event` in words) to mail.
pub fn add(tx: &Tx<'_>, account: &str, device: &str, event: &str, at: i64) -> Result<()> {
    tx.0.execute(
        "INSERT INTO mails (account, device, event, at) VALUES (?1, ?2, ?3, ?4)",
        params![account, device, event, at],
    )?;
    Ok(())
}

/// Events raised before their account's e-mails started (`delay` after
/// they were switched on) are never sent.
pub fn skip_early(tx: &Tx<'_>, delay: i64) -> Result<()> {
    tx.0.execute(
        "UPDATE mails SET state = ?1 WHERE state = ?2 AND account IN (
             SELECT name FROM accounts WHERE json_extract(integrator, '$.email_activated_at') IS NOT NULL)
         AND at < (SELECT json_extract(integrator, '$.email_activated_at') + ?3
                   FROM accounts WHERE name = mails.account)",
        params![MailState::Skipped, MailState::Pending, delay],
    )?;
    Ok(())
}

/// The pending mails whose account's e-mails have started by `now`.
pub fn due(tx: &Tx<'_>, now: i64, delay: i64) -> Result<Vec<DueMail>> {
    Ok(tx
        .0
        .prepare(
            "SELECT m.id, m.account, a.email, m.device, m.event, m.at FROM mails m
             JOIN accounts a ON a.name = m.account
             WHERE m.state = ?1
               AND json_extract(a.integrator, '$.email_activated_at') IS NOT NULL
               AND json_array_length(json_extract(a.integrator, '$.event_channel_devices')) > 0
               AND ?2 >= json_extract(a.integrator, '$.email_activated_at') + ?3
             ORDER BY m.id",
        )?
        .query_map(params![MailState::Pending, now, delay], |r| {
            Ok(DueMail {
                id: r.get(0)?,
                account: r.get(1)?,
                email: r.get(2)?,
                device: r.get(3)?,
                event: r.get(4)?,
                at: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?)
}

pub fn mark(tx: &Tx<'_>, id: i64, state: MailState, now: i64) -> Result<()> {
    tx.0.execute(
        "UPDATE mails SET state = ?2, sent_at = ?3 WHERE id = ?1",
        params![id, state, now],
    )?;
    Ok(())
}

/// When the next pending mail falls due after `now`: its account's
/// e-mails start `delay` after they were switched on.
pub fn next_after(tx: &Tx<'_>, now: i64, delay: i64) -> Result<Option<i64>> {
    Ok(tx.0.query_row(
        "SELECT min(json_extract(a.integrator, '$.email_activated_at') + ?3) FROM mails m
         JOIN accounts a ON a.name = m.account
         WHERE m.state = ?1
           AND json_extract(a.integrator, '$.email_activated_at') IS NOT NULL
           AND json_array_length(json_extract(a.integrator, '$.event_channel_devices')) > 0
           AND json_extract(a.integrator, '$.email_activated_at') + ?3 > ?2",
        params![MailState::Pending, now, delay],
        |r| r.get(0),
    )?)
}
