//! Device events by e-mail. Events (restart, logout, a change of operating
//! mode) are recorded for a device of the account; once the account has
//! turned on the e-mail channel, every event from 30 (scaled) minutes after
//! that activation on is mailed to the account's address, one mail per
//! event. Earlier events are never sent. Delivery is by SMTP when a server
//! is configured, else as `.eml` files in a spool folder.

use std::sync::Arc;
use std::time::Duration;

use lettre::message::Mailbox;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::sandbox::Sandbox;
use crate::model::MailState;
use crate::settings::MailSettings;
use crate::state::mails::{self, DueMail};
use pointhook_common::clock::rfc3339;

/// How long after the channel is turned on mails start (platform time).
pub const EMAIL_DELAY: Duration = Duration::from_secs(30 * 60);

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

impl Sandbox {
    /// Sends the mails due now; returns how many went out.
    pub async fn send_due_mails(self: &Arc<Self>) -> anyhow::Result<usize> {
        let now = self.now();
        let delay = self.scaled(EMAIL_DELAY).as_millis() as i64;
        let due = self
            .db
            .call(move |tx| {
                // Events from before the start of the e-mails are never sent.
                mails::skip_early(tx, delay)?;
                mails::due(tx, now, delay)
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
            .call(move |tx| mails::mark(tx, id, state, now))
            .await?;
        Ok(())
    }

    async fn deliver(&self, to: &str, mail: &DueMail) -> anyhow::Result<()> {
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
