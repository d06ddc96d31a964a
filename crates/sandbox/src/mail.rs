//! Device events by e-mail. Events (restart, logout, a change of operating
//! mode) are recorded for a device of the account; once the account has
//! turned on the e-mail channel, every event from 30 (scaled) minutes after
//! that activation on is mailed to the account's address, one mail per
//! event. Earlier events are never sent. Delivery is by SMTP when a server
//! is configured, else as `.eml` files in a spool folder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lettre::message::Mailbox;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use rusqlite::params;

use super::Sandbox;
use super::sql_enum::sql_enum;
use pointhook_common::clock::rfc3339;

/// How long after the channel is turned on mails start (platform time).
pub const EMAIL_DELAY: Duration = Duration::from_secs(30 * 60);

#[derive(Debug, Clone)]
pub enum MailSettings {
    /// Write `.eml` files here.
    Spool(PathBuf),
    /// Send through this SMTP server (plain, as to a local relay).
    Smtp { host: String, port: u16 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum MailState {
    Pending = 0,
    Sent = 1,
    /// Raised before the e-mails started: never sent.
    Skipped = 2,
}

sql_enum!(MailState {
    Pending,
    Sent,
    Skipped
});

/// The device events the platform mails.
pub fn describe(event: &str, mode: Option<&str>) -> Option<String> {
    match (event, mode) {
        ("restart", _) => Some("the terminal restarted".into()),
        ("logout", _) => Some("the terminal logged out".into()),
        ("mode_change", Some(m @ ("PDV" | "STANDALONE"))) => Some(format!(
            "the operating mode changed from {} to {m}",
            if m == "PDV" { "STANDALONE" } else { "PDV" }
        )),
        _ => None,
    }
}

struct Due {
    id: i64,
    account: String,
    email: Option<String>,
    device: String,
    event: String,
    at: i64,
}

/// When the next pending mail falls due after `now` (sandbox clock, ms):
/// its account's e-mails start `delay` after they were switched on.
pub(super) fn next_mail_after(
    conn: &rusqlite::Connection,
    now: i64,
    delay: i64,
) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT min(json_extract(a.integrator, '$.email_activated_at') + ?3) FROM mails m
         JOIN accounts a ON a.name = m.account
         WHERE m.state = ?1
           AND json_extract(a.integrator, '$.email_activated_at') IS NOT NULL
           AND json_array_length(json_extract(a.integrator, '$.event_channel_devices')) > 0
           AND json_extract(a.integrator, '$.email_activated_at') + ?3 > ?2",
        params![MailState::Pending, now, delay],
        |r| r.get(0),
    )
}

impl Sandbox {
    /// Sends the mails due now; returns how many went out.
    pub async fn send_due_mails(self: &Arc<Self>) -> anyhow::Result<usize> {
        let now = self.now();
        let delay = self.scaled(EMAIL_DELAY).as_millis() as i64;
        let due = self
            .db
            .call(move |conn| {
                let tx = conn.transaction()?;
                // Events from before the start of the e-mails are never sent.
                tx.execute(
                    "UPDATE mails SET state = ?1 WHERE state = ?2 AND account IN (
                         SELECT name FROM accounts WHERE json_extract(integrator, '$.email_activated_at') IS NOT NULL)
                     AND at < (SELECT json_extract(integrator, '$.email_activated_at') + ?3
                               FROM accounts WHERE name = mails.account)",
                    params![MailState::Skipped, MailState::Pending, delay],
                )?;
                let due = tx
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
                        Ok(Due {
                            id: r.get(0)?,
                            account: r.get(1)?,
                            email: r.get(2)?,
                            device: r.get(3)?,
                            event: r.get(4)?,
                            at: r.get(5)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                tx.commit()?;
                Ok(due)
            })
            .await?;
        let mut sent = 0;
        for mail in due {
            let Some(to) = mail.email.clone() else {
                tracing::warn!(account = %mail.account, "device event not mailed: the account has no e-mail address");
                self.mark(mail.id, MailState::Skipped).await?;
                continue;
            };
            match self.deliver(&to, &mail).await {
                Ok(()) => {
                    self.mark(mail.id, MailState::Sent).await?;
                    sent += 1;
                }
                // Left pending: the next round tries again.
                Err(e) => tracing::warn!(error = %e, to = %to, "device e-mail not sent"),
            }
        }
        Ok(sent)
    }

    async fn mark(&self, id: i64, state: MailState) -> anyhow::Result<()> {
        let now = self.now();
        self.db
            .call(move |c| {
                c.execute(
                    "UPDATE mails SET state = ?2, sent_at = ?3 WHERE id = ?1",
                    params![id, state, now],
                )
            })
            .await?;
        Ok(())
    }

    async fn deliver(&self, to: &str, mail: &Due) -> anyhow::Result<()> {
        let when = rfc3339(mail.at);
        let message = Message::builder()
            .from("Point device events <no-reply@sandbox.invalid>".parse::<Mailbox>()?)
            .to(to.parse::<Mailbox>()?)
            .subject(format!("Device {}: {}", mail.device, mail.event))
            .body(format!(
                "Account {}\nDevice {}\nEvent {}\nTime {}\n\nThis message was sent because device events by e-mail are on for this account.\n",
                mail.account, mail.device, mail.event, when
            ))?;
        match &self.mail {
            MailSettings::Spool(dir) => {
                tokio::fs::create_dir_all(dir).await.map_err(|e| {
                    anyhow::anyhow!("cannot create the mail spool {}: {e}", dir.display())
                })?;
                AsyncFileTransport::<Tokio1Executor>::new(dir)
                    .send(message)
                    .await?;
            }
            MailSettings::Smtp { host, port } => {
                AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host.as_str())
                    .port(*port)
                    .build()
                    .send(message)
                    .await?;
            }
        }
        Ok(())
    }
}
