//! Telling a person: the channels of `[[alerts]]`
//! (`email.rs` through `[smtp]`, `webhook.rs` for chat tools), the message
//! each gets (`outgoing.rs`, with a link into the console), what needs a
//! person read from the store (`facts.rs`), and the alerter that asks
//! `rules::alerts` what to tell (a resolution saying what resolved it and
//! who, `resolved.rs`), records it and hands it to each
//! channel's own queue and task (`alerter.rs`, `outlet.rs`). Sending never
//! blocks the work, nor one channel another: each send is timed out on
//! its channel's task, and recorded in the audit.

pub mod alerter;
pub mod email;
pub mod facts;
pub mod outgoing;
mod outlet;
mod resolved;
pub mod webhook;

use outgoing::Outgoing;

use crate::config::alerts::ChannelSpec;

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
    /// The channel `spec` describes; `Err` names what cannot be used.
    pub fn build(spec: &ChannelSpec) -> Result<Channel, String> {
        match spec {
            ChannelSpec::Email { smtp, to } => {
                Ok(Channel::Email(email::EmailChannel::new(smtp, to)?))
            }
            ChannelSpec::Webhook { url } => {
                Ok(Channel::Webhook(webhook::WebhookChannel::new(url.clone())?))
            }
        }
    }

    /// `email` or `webhook`, for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Channel::Email(_) => "email",
            Channel::Webhook(_) => "webhook",
        }
    }

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
