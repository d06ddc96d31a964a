//! The sandbox's schedule on a virtual clock and in scaled real time,
//! what counts as received, where notifications go, the resources API, and
//! webhooks signed anew at each attempt.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use pointhook_sandbox::{AccountSpec, MailSettings, Sandbox, SandboxSettings};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::*;

async fn drive_schedule(statuses: &[u16]) -> Vec<i64> {
    let target = receiver(statuses).await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(
        vec![account(Some(target.uri()))],
        clock.clone(),
        1.0,
        false,
        None,
    )
    .await;
    let (status, _) = sb
        .control("merchant_orders", json!({"total_amount": 10}))
        .await;
    assert_eq!(status, 201);
    let mut elapsed = Duration::ZERO;
    for offset in [
        0u64,
        15 * 60,
        30 * 60,
        6 * 3600,
        48 * 3600,
        96 * 3600,
        200 * 3600,
    ] {
        let to = Duration::from_secs(offset);
        clock.advance(to - elapsed);
        elapsed = to;
        sb.sandbox.run_due().await.unwrap();
    }
    let log = sb.log().await;
    assert_eq!(log.len(), 1, "one IPN for one order");
    let offsets = attempt_offsets(&log[0]);
    sb.stop().await;
    offsets
}

#[tokio::test]
async fn the_whole_schedule_on_a_virtual_clock() {
    assert_eq!(
        drive_schedule(&[500]).await,
        [0, 900, 1800, 21_600, 172_800, 345_600],
        "six attempts at the platform's offsets, then it gives up"
    );
    assert_eq!(
        drive_schedule(&[500, 503, 200]).await,
        [0, 900, 1800],
        "acknowledged on the third"
    );
}

#[tokio::test]
async fn a_500_a_302_and_a_204_are_not_received_a_201_is() {
    let offsets = drive_schedule(&[500, 302, 204, 201]).await;
    assert_eq!(offsets, [0, 900, 1800, 21_600]);
}

#[tokio::test]
async fn an_answer_slower_than_the_window_is_not_received() {
    let _serial = TIMING.lock().await;
    let target = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_millis(600)))
        .mount(&target)
        .await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    // At 0.01 the first window is 0.22 s.
    let sb = start_sandbox(
        vec![account(Some(target.uri()))],
        clock.clone(),
        0.01,
        false,
        None,
    )
    .await;
    sb.control("merchant_orders", json!({"total_amount": 10}))
        .await;
    sb.sandbox.run_due().await.unwrap();
    let log = sb.log().await;
    let attempt = &log[0]["attempts"][0];
    assert!(attempt["status"].is_null(), "{attempt}");
    assert_eq!(attempt["acked"], false);
    assert_eq!(log[0]["state"], "pending", "a retry is scheduled");
    sb.stop().await;
}

/// At a time scale of 0.01 the first retries come 9 and 18 seconds after
/// the first attempt (15 and 30 minutes scaled), on a virtual clock.
#[tokio::test]
async fn at_scale_0_01_the_first_retries_come_at_9_and_18_seconds() {
    let target = receiver(&[500]).await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(
        vec![account(Some(target.uri()))],
        clock.clone(),
        0.01,
        false,
        None,
    )
    .await;
    sb.control("merchant_orders", json!({"total_amount": 10}))
        .await;
    for step in [0, 8, 1, 8, 1] {
        clock.advance(Duration::from_secs(step));
        sb.sandbox.run_due().await.unwrap();
    }
    let log = sb.log().await;
    assert_eq!(attempt_offsets(&log[0]), [0, 9, 18]);
    sb.stop().await;
}

#[tokio::test]
async fn pending_retries_survive_a_restart_with_a_state_file() {
    let target = receiver(&[500, 200]).await;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("sandbox.db");
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(
        vec![account(Some(target.uri()))],
        clock.clone(),
        1.0,
        false,
        Some(state.clone()),
    )
    .await;
    sb.control("merchant_orders", json!({"total_amount": 10}))
        .await;
    sb.sandbox.run_due().await.unwrap();
    sb.stop().await;
    let sb = start_sandbox(
        vec![account(Some(target.uri()))],
        clock.clone(),
        1.0,
        false,
        Some(state),
    )
    .await;
    clock.advance(Duration::from_secs(15 * 60));
    assert_eq!(sb.sandbox.run_due().await.unwrap(), 1);
    let log = sb.log().await;
    assert_eq!(log[0]["state"], "acked");
    assert_eq!(attempt_offsets(&log[0]), [0, 900]);
    sb.stop().await;
}

async fn create_payment(sb: &RunningSandbox, extra: Value) -> (u16, Value) {
    let mut body = json!({
        "transaction_amount": 100.5, "token": "card-token", "description": "Coffee",
        "installments": 1, "payment_method_id": "visa", "issuer_id": 310,
        "payer": {"email": "buyer@example.com", "identification": {"type": "DNI", "number": "12345678"}},
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    answer(
        client()
            .post(format!("{}/v1/payments", sb.url))
            .bearer_auth(TOKEN)
            .header("accept", "application/json")
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn payments_are_validated_like_the_platform_does() {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(vec![account(None)], clock, 1.0, false, None).await;
    let (status, p) = create_payment(&sb, json!({})).await;
    assert_eq!(status, 201, "{p}");
    assert_eq!(p["status"], "approved");
    assert_eq!(p["status_detail"], "accredited");
    let (status, e) = create_payment(
        &sb,
        json!({"transaction_amount": -1, "token": "", "installments": 0, "payer": {"email": "nope"}, "notification_url": "ftp://x"}),
    )
    .await;
    assert_eq!(status, 400);
    let causes: Vec<String> = e["cause"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["description"].as_str().unwrap().to_string())
        .collect();
    for field in [
        "transaction_amount",
        "token",
        "installments",
        "payer.email",
        "payer.identification.type",
        "notification_url",
    ] {
        assert!(
            causes.iter().any(|c| c.starts_with(field)),
            "{field} named in {causes:?}"
        );
    }
    sb.control("presets/next_payment_status", json!({"status": "rejected"}))
        .await;
    let (_, p) = create_payment(&sb, json!({})).await;
    assert_eq!(p["status"], "rejected");
    let res = client()
        .get(format!("{}/v1/payments/{}", sb.url, p["id"]))
        .send()
        .await
        .unwrap();
    let (status, e) = answer(res).await;
    assert_eq!(status, 401, "a token is required");
    assert_eq!(e["error"], "unauthorized");
    sb.stop().await;
}

#[tokio::test]
async fn cancels_only_while_pending_and_refunds_once_per_key() {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(vec![account(None)], clock, 1.0, false, None).await;
    let (_, approved) = create_payment(&sb, json!({})).await;
    let url = format!("{}/v1/payments/{}", sb.url, approved["id"]);
    let put = |url: String| async move {
        answer(
            client()
                .put(url)
                .bearer_auth(TOKEN)
                .json(&json!({"status": "cancelled"}))
                .send()
                .await
                .unwrap(),
        )
        .await
    };
    let (status, _) = put(url.clone()).await;
    assert_eq!(status, 400, "an approved payment cannot be cancelled");
    let refund = |key: &'static str| {
        let url = format!("{url}/refunds");
        async move {
            answer(
                client()
                    .post(url)
                    .bearer_auth(TOKEN)
                    .header("x-idempotency-key", key)
                    .json(&json!({}))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let (status, first) = refund("k1").await;
    assert_eq!(status, 201);
    let (status, again) = refund("k1").await;
    assert_eq!(
        (status, &again["id"]),
        (201, &first["id"]),
        "same key, same refund"
    );
    let (status, _) = refund("k2").await;
    assert_eq!(status, 400, "already refunded");

    sb.control(
        "presets/next_payment_status",
        json!({"status": "in_process"}),
    )
    .await;
    let (_, pending) = create_payment(&sb, json!({})).await;
    let (status, cancelled) = put(format!("{}/v1/payments/{}", sb.url, pending["id"])).await;
    assert_eq!(status, 200);
    assert_eq!(cancelled["status"], "cancelled");
    sb.stop().await;
}

#[tokio::test]
async fn per_object_urls_follow_source_news() {
    let target = receiver(&[200]).await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(vec![account(None)], clock, 1.0, false, None).await;
    for source in ["", "?source_news=ipn", "?source_news=webhooks"] {
        create_payment(
            &sb,
            json!({"notification_url": format!("{}/hook{source}", target.uri())}),
        )
        .await;
    }
    sb.sandbox.run_due().await.unwrap();
    let forms: Vec<(String, String)> = sb
        .log()
        .await
        .iter()
        .map(|d| {
            (
                d["form"].as_str().unwrap().to_string(),
                d["url"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(forms.len(), 4, "{forms:?}");
    assert_eq!(
        forms
            .iter()
            .filter(|(_, u)| !u.contains("source_news"))
            .count(),
        2,
        "both forms without source_news"
    );
    assert!(
        forms
            .iter()
            .any(|(f, u)| f == "ipn" && u.contains("source_news=ipn&topic=payment"))
    );
    assert!(
        forms
            .iter()
            .any(|(f, u)| f == "webhook" && u.contains("source_news=webhooks&data.id="))
    );
    assert!(
        !forms
            .iter()
            .any(|(f, u)| f == "webhook" && u.contains("source_news=ipn"))
    );
    assert!(
        !forms
            .iter()
            .any(|(f, u)| f == "ipn" && u.contains("source_news=webhooks"))
    );
    sb.stop().await;
}

#[tokio::test]
async fn event_groups_select_what_the_account_url_gets_and_its_query_is_kept() {
    let target = receiver(&[200]).await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let mut a = account(Some(format!(
        "{}/n?customer=shop-2&source_news=ipn",
        target.uri()
    )));
    a.groups = Some(vec!["merchant_orders".into()]);
    let sb = start_sandbox(vec![a], clock, 1.0, false, None).await;
    let (_, order) = sb
        .control("merchant_orders", json!({"total_amount": 10}))
        .await;
    sb.control(
        &format!("merchant_orders/{}/payments", order["id"]),
        json!({"amount": 10}),
    )
    .await;
    let topics: Vec<String> = sb
        .log()
        .await
        .iter()
        .map(|d| d["topic"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        topics,
        ["merchant_order", "merchant_order"],
        "no payment IPN: not selected"
    );
    let url = sb.log().await[0]["url"].as_str().unwrap().to_string();
    assert!(
        url.contains("?customer=shop-2&source_news=ipn&topic=merchant_order&id="),
        "{url}"
    );
    sb.stop().await;
}

#[tokio::test]
async fn intents_take_no_notification_url() {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(vec![account(None)], clock, 1.0, false, None).await;
    let (status, e) = sb
        .control(
            "payment_intents",
            json!({"amount": 1500, "notification_url": "http://x"}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(e["message"].as_str().unwrap().contains("notification_url"));
    sb.stop().await;
}

/// Fraud alerts go out in both forms: the IPN on the schedule, the
/// `stop_delivery_op_wh` webhook once, never retried (as documented).
#[tokio::test]
async fn a_fraud_alert_webhook_is_sent_once_and_the_ipn_on_the_schedule() {
    let target = receiver(&[500]).await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let sb = start_sandbox(
        vec![AccountSpec {
            webhook_url: Some(target.uri()),
            webhook_secret: Some(SECRET.into()),
            ..account(Some(target.uri()))
        }],
        clock.clone(),
        1.0,
        false,
        None,
    )
    .await;
    let (status, _) = sb
        .control(
            "fraud_alerts",
            json!({"merchant_order": 7, "payment_id": 8}),
        )
        .await;
    assert_eq!(status, 202);
    for _ in 0..8 {
        sb.sandbox.run_due().await.unwrap();
        clock.advance(Duration::from_secs(24 * 3600));
    }
    let log = sb.log().await;
    let attempts = |topic: &str| {
        let entry = log.iter().find(|e| e["topic"] == topic).unwrap();
        entry["attempts"].as_array().unwrap().len()
    };
    assert_eq!(attempts("delivery_cancellation"), 6);
    assert_eq!(attempts("stop_delivery_op_wh"), 1);
    let webhook = target
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.url.query().unwrap_or("").contains("stop_delivery_op_wh"))
        .unwrap();
    assert_eq!(
        webhook.url.query(),
        Some("data.id=8&type=stop_delivery_op_wh")
    );
    let body: Value = serde_json::from_slice(&webhook.body).unwrap();
    assert_eq!(body["data"]["payment_id"], 8);
    assert_eq!(body["data"]["merchant_order"], 7);
    assert!(webhook.headers.contains_key("x-signature"));
    sb.stop().await;
}

/// `x-signature` of each attempt, in order.
async fn signatures_of_retries(resend_first: bool) -> Vec<String> {
    let target = receiver(&[500, 500, 200]).await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sandbox = Sandbox::new(
        SandboxSettings {
            time_scale: 1.0,
            state: None,
            accounts: vec![AccountSpec {
                webhook_url: Some(target.uri()),
                webhook_secret: Some(SECRET.into()),
                ..account(None)
            }],
            dispatch_loop: false,
            mail: MailSettings::Spool(std::env::temp_dir().join("pointhook-resign-mail")),
            resend_first_signature: resend_first,
            reach: pointhook_sandbox::Reach::Loopback,
        },
        clock.clone(),
        url.clone(),
    )
    .await
    .unwrap();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(sandbox.clone().serve(listener, shutdown.clone()));
    let sb = RunningSandbox {
        url,
        sandbox,
        shutdown,
        task,
    };
    let (_, intent) = sb.control("payment_intents", json!({"amount": 1500})).await;
    let id = intent["id"].as_str().unwrap().to_string();
    sb.control(
        &format!("payment_intents/{id}/state"),
        json!({"state": "CANCELED"}),
    )
    .await;
    for _ in 0..3 {
        sb.sandbox.run_due().await.unwrap();
        clock.advance(Duration::from_secs(20 * 60));
    }
    let signatures = target
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.headers.contains_key("x-signature"))
        .map(|r| r.headers["x-signature"].to_str().unwrap().to_string())
        .collect();
    sb.stop().await;
    signatures
}

/// Every attempt of a signed webhook is signed anew (a new `ts`), unless
/// the sandbox is told to resend the first signature.
#[tokio::test]
async fn signed_webhooks_are_signed_anew_at_each_attempt() {
    let anew = signatures_of_retries(false).await;
    assert_eq!(anew.len(), 3);
    assert_ne!(anew[0], anew[1]);
    assert_ne!(anew[1], anew[2]);
    let ts = |sig: &str| sig.split(',').next().unwrap().to_string();
    assert_ne!(
        ts(&anew[0]),
        ts(&anew[1]),
        "signed at the time of the retry"
    );
    let first = signatures_of_retries(true).await;
    assert_eq!(first.len(), 3);
    assert!(first.iter().all(|s| *s == first[0]), "{first:?}");
}

/// `DELETE /sandbox/faults` disarms dropped notifications too: the next
/// notification goes.
#[tokio::test]
async fn clearing_faults_disarms_dropped_notifications() {
    let (sb, _clock) = on_manual_clock(vec![account(Some("http://127.0.0.1:9/n".into()))]).await;
    let (status, _) = sb.control("faults", json!({"drop_notifications": 2})).await;
    assert_eq!(status, 201);
    let (status, cleared) = sb
        .call(reqwest::Method::DELETE, "/sandbox/faults", None)
        .await;
    assert_eq!((status, &cleared), (200, &json!({"cleared": true})));
    sb.control("merchant_orders", json!({"total_amount": 10}))
        .await;
    let log = sb.log().await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["state"], "pending", "sent, not dropped: {log:?}");
    sb.stop().await;
}

/// A chargeback charges its payment back (`charged_back`, `in_process`
/// while disputed), as the platform shows it, and announces both.
#[tokio::test]
async fn a_chargeback_charges_its_payment_back() {
    let (sb, _clock) = on_manual_clock(vec![account(Some("http://127.0.0.1:9/n".into()))]).await;
    let (_, order) = sb
        .control("merchant_orders", json!({"total_amount": 10}))
        .await;
    let (_, payment) = sb
        .control(
            &format!("merchant_orders/{}/payments", order["id"]),
            json!({"amount": 10}),
        )
        .await;
    let (status, cb) = sb
        .control("chargebacks", json!({"payment_id": payment["id"]}))
        .await;
    assert_eq!(status, 201, "{cb}");
    let (_, now) = sb
        .call(
            reqwest::Method::GET,
            &format!("/v1/payments/{}", payment["id"]),
            None,
        )
        .await;
    assert_eq!(now["status"], "charged_back");
    assert_eq!(now["status_detail"], "in_process");
    let (_, order) = sb
        .call(
            reqwest::Method::GET,
            &format!("/merchant_orders/{}", order["id"]),
            None,
        )
        .await;
    assert_eq!(order["payments"][0]["status"], "charged_back");
    let log = sb.log().await;
    let topics: Vec<&str> = log.iter().map(|d| d["topic"].as_str().unwrap()).collect();
    assert_eq!(
        &topics[topics.len() - 3..],
        ["chargebacks", "payment", "merchant_order"],
        "the chargeback, then its payment's change"
    );
    sb.stop().await;
}
