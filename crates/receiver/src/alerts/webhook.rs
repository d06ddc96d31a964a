//! Webhook alerts: the message POSTed as JSON
//! (`{"text","severity","kind","url","items"}`), which chat tools'
//! incoming webhooks accept as it is. Redirects are not followed.

use super::AlertError;
use super::outgoing::Outgoing;

pub struct WebhookChannel {
    url: url::Url,
    http: reqwest::Client,
}

impl WebhookChannel {
    pub fn new(url: url::Url) -> Result<WebhookChannel, String> {
        pointhook_common::tls::install_default_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("pointhook/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the alert webhook's client: {e}"))?;
        Ok(WebhookChannel { url, http })
    }

    /// The scheme and host only: a chat tool's webhook URL is its
    /// credential, in the path as often as in the query.
    pub fn describe(&self) -> String {
        let host = self.url.host_str().unwrap_or("?");
        match self.url.port() {
            Some(port) => format!("webhook {}://{host}:{port}/…", self.url.scheme()),
            None => format!("webhook {}://{host}/…", self.url.scheme()),
        }
    }

    pub async fn send(&self, m: &Outgoing) -> Result<(), AlertError> {
        let res = self
            .http
            .post(self.url.clone())
            .json(m)
            .send()
            .await
            .map_err(|e| AlertError::WebhookTransport(e.without_url().to_string()))?;
        match res.status() {
            s if s.is_success() => Ok(()),
            s => Err(AlertError::WebhookStatus { status: s.as_u16() }),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_url_is_shown_without_its_secret_path() {
        let w = super::WebhookChannel::new(
            "https://hooks.chat.example/services/T0/B0/s3cret?x=1"
                .parse()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(w.describe(), "webhook https://hooks.chat.example/…");
    }
}
