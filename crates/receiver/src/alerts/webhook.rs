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
        crate::tls::install_default_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("pointhook/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the alert webhook's client: {e}"))?;
        Ok(WebhookChannel { url, http })
    }

    pub fn describe(&self) -> String {
        format!("webhook {}", crate::config::redacted::text(&self.url))
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
