//! Telling a person (DESIGN section 11): the channels of `[[alerts]]`
//! (`email.rs` through `[smtp]`, `webhook.rs` for chat tools), the message
//! each gets (`outgoing.rs`, with a link into the console), and the
//! alerter that reads what needs a person, asks `rules::alerts` what to
//! tell, sends it and records it (`alerter.rs`). Sending never blocks the
//! work: it runs on its own task, each send timed out.

pub mod email;
pub mod outgoing;
pub mod webhook;

use outgoing::Outgoing;

/// Why a message did not go out.
#[derive(Debug, thiserror::Error)]
pub enum AlertError {
    #[error("cannot build the e-mail: {0}")]
    Build(String),
    #[error("the SMTP server {server} refused or failed: {message}")]
    Smtp { server: String, message: String },
    #[error("the alert webhook answered {status}")]
    WebhookStatus { status: u16 },
    #[error("the alert webhook cannot be reached: {0}")]
    WebhookTransport(String),
    #[error("timed out after {0} s")]
    Timeout(u64),
}

/// One channel of `[[alerts]]`.
pub enum Channel {
    Email(email::EmailChannel),
    Webhook(webhook::WebhookChannel),
}

impl Channel {
    /// What the channel is, for a person (recipients, or the URL masked).
    pub fn describe(&self) -> String {
        match self {
            Channel::Email(e) => e.describe(),
            Channel::Webhook(w) => w.describe(),
        }
    }

    /// Sends `m`, within `timeout`.
    pub async fn send(&self, m: &Outgoing, timeout: std::time::Duration) -> Result<(), AlertError> {
        let sending = async {
            match self {
                Channel::Email(e) => e.send(m).await,
                Channel::Webhook(w) => w.send(m).await,
            }
        };
        tokio::time::timeout(timeout, sending)
            .await
            .map_err(|_| AlertError::Timeout(timeout.as_secs()))?
    }
}
