//! E-mail alerts through `[smtp]`: lettre's SMTP client (a well-kept
//! crate: connection handling, STARTTLS, AUTH and message building are not
//! ours to write). With `starttls` the connection must be upgraded before
//! anything is sent, credentials included; a loopback relay may be plain.

use lettre::message::{Mailbox, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::AlertError;
use super::outgoing::Outgoing;
use crate::config::alerts::SmtpSettings;

/// lettre's own limit on each SMTP command, so that a server that accepts
/// and never answers frees the connection; the alerter's timeout of the
/// whole send is shorter.
const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

pub struct EmailChannel {
    to: Vec<Mailbox>,
    from: Mailbox,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    server: String,
}

impl EmailChannel {
    /// `Err` names what cannot be used (an address, the TLS setup).
    pub fn new(smtp: &SmtpSettings, to: &[String]) -> Result<EmailChannel, String> {
        let from: Mailbox = smtp
            .from
            .parse()
            .map_err(|e| format!("smtp.from {:?}: {e}", smtp.from))?;
        let to = to
            .iter()
            .map(|a| a.parse().map_err(|e| format!("alerts to {a:?}: {e}")))
            .collect::<Result<Vec<Mailbox>, String>>()?;
        if to.is_empty() {
            return Err("an e-mail alert needs at least one address in to".into());
        }
        pointhook_common::tls::install_default_provider();
        let mut builder = if smtp.starttls {
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host)
                .map_err(|e| format!("smtp.host {:?}: {e}", smtp.host))?
        } else {
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host)
        };
        builder = builder.port(smtp.port).timeout(Some(COMMAND_TIMEOUT));
        if let Some((user, password)) = &smtp.credentials {
            builder = builder.credentials(Credentials::new(
                user.clone(),
                password.expose().to_string(),
            ));
        }
        Ok(EmailChannel {
            to,
            from,
            transport: builder.build(),
            server: format!("{}:{}", smtp.host, smtp.port),
        })
    }

    pub fn describe(&self) -> String {
        let to: Vec<String> = self.to.iter().map(|m| m.email.to_string()).collect();
        format!("e-mail to {} via {}", to.join(", "), self.server)
    }

    pub async fn send(&self, m: &Outgoing) -> Result<(), AlertError> {
        // A MIME text part (MIME-Version, Content-Type with its charset),
        // dated and identified under the sender's domain, so that clients
        // and filters read it as any other mail.
        let mut b = Message::builder()
            .from(self.from.clone())
            .subject(m.subject())
            .date_now()
            .message_id(Some(format!(
                "<{}.{}@{}>",
                pointhook_common::clock::unix_ms_now(),
                rand::random::<u64>(),
                self.from.email.domain()
            )));
        for to in &self.to {
            b = b.to(to.clone());
        }
        let mail = b
            .singlepart(SinglePart::plain(m.body()))
            .map_err(|e| AlertError::Build(e.to_string()))?;
        self.transport
            .send(mail)
            .await
            .map(|_| ())
            .map_err(|e| AlertError::Smtp {
                server: self.server.clone(),
                message: e.to_string(),
            })
    }
}
