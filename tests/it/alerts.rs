//! Telling a person: the channels of `[[alerts]]` against a real SMTP
//! server and a real webhook receiver on loopback.

use std::time::Duration;

use pointhook::alerts::email::EmailChannel;
use pointhook::alerts::outgoing::Outgoing;
use pointhook::alerts::webhook::WebhookChannel;
use pointhook::alerts::{AlertError, Channel};
use pointhook::config::Secret;
use pointhook::config::alerts::SmtpSettings;
use pointhook::domain::attention::{AlertKind, Message, Severity};

use crate::platform::Merchant;
use crate::smtp::SmtpServer;

fn held() -> Outgoing {
    Outgoing::new(
        &Message {
            kind: AlertKind::FraudReviewHeld,
            severity: Severity::Critical,
            text: "fraud alert held for you: refund 480.00 if confirmed \u{202e}".into(),
            path: "/fraud-reviews/12".into(),
            items: vec!["refund 480.00 if confirmed".into()],
            keys: vec!["review:12".into()],
            resolved: false,
        },
        "https://pointhook.shop.example:8081/",
    )
}

fn smtp(port: u16, starttls: bool) -> SmtpSettings {
    SmtpSettings {
        host: "127.0.0.1".into(),
        port,
        from: "pointhook@shop.example".into(),
        credentials: Some(("alerts".into(), Secret::new("s3cret"))),
        starttls,
    }
}

const WITHIN: Duration = Duration::from_secs(10);

#[tokio::test]
async fn an_email_alert_carries_the_text_and_the_console_link() {
    let server = SmtpServer::start().await;
    let channel = Channel::Email(
        EmailChannel::new(&smtp(server.port, false), &["ops@shop.example".into()]).unwrap(),
    );
    channel.send(&held(), WITHIN).await.unwrap();
    let mails = server.mails();
    assert_eq!(mails.len(), 1);
    let mail = &mails[0];
    assert!(mail.contains("To: ops@shop.example"), "{mail}");
    assert!(
        mail.contains("[pointhook] fraud alert held for you"),
        "{mail}"
    );
    assert!(
        mail.contains("https://pointhook.shop.example:8081/fraud-reviews/12"),
        "{mail}"
    );
    assert!(!mail.contains('\u{202e}'), "no bidi control reaches a mail");
    let auth = server.got.lock().unwrap().auth.clone();
    assert_eq!(auth.len(), 1, "the credentials were used");
}

#[tokio::test]
async fn starttls_is_required_when_asked_for() {
    // A server that offers no STARTTLS: nothing is sent, credentials least.
    let server = SmtpServer::start().await;
    let channel = Channel::Email(
        EmailChannel::new(&smtp(server.port, true), &["ops@shop.example".into()]).unwrap(),
    );
    let err = channel.send(&held(), WITHIN).await.unwrap_err();
    assert!(matches!(err, AlertError::Smtp { .. }), "{err}");
    assert!(server.mails().is_empty());
    assert!(
        server.got.lock().unwrap().auth.is_empty(),
        "no credentials in the clear"
    );
}

#[tokio::test]
async fn a_refusing_or_dead_server_is_a_clear_error() {
    let refusing = SmtpServer::answering(false).await;
    let channel = Channel::Email(
        EmailChannel::new(&smtp(refusing.port, false), &["ops@shop.example".into()]).unwrap(),
    );
    let err = channel.send(&held(), WITHIN).await.unwrap_err();
    assert!(err.to_string().contains("refused or failed"), "{err}");
    // Nothing listens on port 9 of loopback.
    let channel =
        Channel::Email(EmailChannel::new(&smtp(9, false), &["ops@shop.example".into()]).unwrap());
    assert!(channel.send(&held(), WITHIN).await.is_err());
    assert!(
        EmailChannel::new(&smtp(25, false), &["not an address".into()]).is_err(),
        "a bad address is refused when the channel is built"
    );
}

#[tokio::test]
async fn a_webhook_alert_posts_what_chat_tools_accept() {
    let hook = Merchant::start().await;
    let url = format!("{}/events", hook.server.uri());
    let channel = Channel::Webhook(WebhookChannel::new(url.parse().unwrap()).unwrap());
    channel.send(&held(), WITHIN).await.unwrap();
    let got = hook.received().await;
    assert_eq!(got.len(), 1);
    let body: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body["severity"], "critical");
    assert_eq!(body["kind"], "fraud_review_held");
    assert_eq!(
        body["url"],
        "https://pointhook.shop.example:8081/fraud-reviews/12"
    );
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .starts_with("fraud alert held")
    );
    assert_eq!(body["items"][0], "refund 480.00 if confirmed");
    hook.fail_next(1, 500).await;
    let err = channel.send(&held(), WITHIN).await.unwrap_err();
    assert!(
        matches!(err, AlertError::WebhookStatus { status: 500 }),
        "{err}"
    );
}
