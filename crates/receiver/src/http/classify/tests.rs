use serde_json::Value;

use super::*;
use crate::domain::JobKind;

fn run(query: &str, body: &str) -> Result<Classified, ClassifyError> {
    classify(&Query::parse(query), body.as_bytes())
}

fn kind(c: &Classified) -> Option<JobKind> {
    c.work.as_ref().map(Work::job_kind)
}

fn rid(c: &Classified) -> Option<&str> {
    c.resource_id.as_ref().map(|r| r.as_str())
}

/// What every fixture (each a documented or observed notification) asks
/// for: `None` is stored and ignored. None is refused.
#[test]
fn every_fixture_classifies() {
    use JobKind::*;
    let expected: &[(&str, Option<JobKind>)] = &[
        ("intent-canceled-docs.json", Some(PaymentIntent)),
        ("intent-canceled.json", Some(PaymentIntent)),
        (
            "intent-confirmation-required-docs.json",
            Some(PaymentIntent),
        ),
        ("intent-confirmation-required.json", Some(PaymentIntent)),
        ("intent-error-docs.json", Some(PaymentIntent)),
        ("intent-error.json", Some(PaymentIntent)),
        ("intent-finished-docs-mlb.json", Some(PaymentIntent)),
        ("intent-finished-docs.json", Some(PaymentIntent)),
        ("intent-finished.json", Some(PaymentIntent)),
        ("ipn-chargeback.json", Some(Chargeback)),
        ("ipn-chargebacks-query-only.json", Some(Chargeback)),
        ("ipn-delivery-cancellation-no-body.json", Some(FraudAlert)),
        (
            "ipn-delivery-cancellation-resource-topic.json",
            Some(FraudAlert),
        ),
        ("ipn-delivery-docs-js-literal.json", None),
        ("ipn-delivery.json", None),
        ("ipn-fraud-alert.json", Some(FraudAlert)),
        ("ipn-merchant-order-query-only.json", Some(MerchantOrder)),
        (
            "ipn-merchant-order-resource-topic-observed.json",
            Some(MerchantOrder),
        ),
        ("ipn-merchant-order.json", Some(MerchantOrder)),
        ("ipn-payment-cliente-param.json", Some(Payment)),
        ("ipn-payment-query-only.json", Some(Payment)),
        ("ipn-payment-resource-bare-id-observed.json", Some(Payment)),
        ("ipn-payment-resource-topic.json", Some(Payment)),
        ("ipn-payment-unverifiable-signature.json", Some(Payment)),
        ("ipn-payment.json", Some(Payment)),
        ("ipn-point-integration-ipn.json", Some(PaymentIntent)),
        ("ipn-point-integration.json", Some(PaymentIntent)),
        ("webhook-automatic-payments-card-updated.json", None),
        (
            "webhook-chargebacks-docs-trailing-comma.json",
            Some(Chargeback),
        ),
        ("webhook-chargebacks.json", Some(Chargeback)),
        ("webhook-claim.json", None),
        ("webhook-claims-docs-copy-of-fraud-alert.json", None),
        ("webhook-fraud-alert-docs.json", Some(FraudAlert)),
        (
            "webhook-fraud-alert-optional-notifications.json",
            Some(FraudAlert),
        ),
        ("webhook-fraud-alert.json", Some(FraudAlert)),
        ("webhook-legacy-invoice.json", None),
        (
            "webhook-merchant-order-docs-envelope.json",
            Some(MerchantOrder),
        ),
        (
            "webhook-merchant-order-observed-no-data-id.json",
            Some(MerchantOrder),
        ),
        ("webhook-merchant-order.json", Some(MerchantOrder)),
        ("webhook-mp-connect-authorized.json", None),
        ("webhook-mp-connect-deauthorized.json", None),
        ("webhook-order-charged-back.json", Some(Chargeback)),
        (
            "webhook-order-point-action-required.json",
            Some(PlatformOrder),
        ),
        ("webhook-order-point-canceled.json", Some(PlatformOrder)),
        ("webhook-order-point-expired.json", Some(PlatformOrder)),
        ("webhook-order-point-failed.json", Some(PlatformOrder)),
        ("webhook-order-point-processed.json", Some(PlatformOrder)),
        ("webhook-order-point-refunded.json", Some(PlatformOrder)),
        ("webhook-order-qr-canceled.json", Some(PlatformOrder)),
        ("webhook-order-qr-expired.json", Some(PlatformOrder)),
        ("webhook-order-qr-processed.json", Some(PlatformOrder)),
        ("webhook-order-qr-refunded.json", Some(PlatformOrder)),
        (
            "webhook-order-simulator-action-required.json",
            Some(PlatformOrder),
        ),
        ("webhook-payment-created-docs.json", Some(Payment)),
        ("webhook-payment-legacy-envelope.json", Some(Payment)),
        ("webhook-payment-simulator.json", Some(Payment)),
        ("webhook-payment-source-news.json", Some(Payment)),
        ("webhook-payment.json", Some(Payment)),
        (
            "webhook-point-integration-envelope-state-finished.json",
            Some(PaymentIntent),
        ),
        ("webhook-subscription-authorized-payment.json", None),
        ("webhook-subscription-preapproval-plan.json", None),
        ("webhook-subscription-preapproval.json", None),
        ("webhook-wallet-connect.json", None),
    ];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/notifications");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let listed: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, listed, "every fixture has an expectation");
    for (name, want) in expected {
        let fixture: Value =
            serde_json::from_slice(&std::fs::read(format!("{dir}/{name}")).unwrap()).unwrap();
        let query = fixture["query"].as_str().unwrap();
        let body = match (&fixture["body"], fixture["body_text"].as_str()) {
            (_, Some(text)) => text.to_string(),
            (Value::Null, None) => String::new(),
            (b, None) => b.to_string(),
        };
        let c = run(query, &body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(kind(&c), *want, "{name}");
    }
}

#[test]
fn ipn_query_wins_and_body_is_not_validated() {
    for body in [
        "",
        "{}",
        "not json at all",
        r#"{"resource":"999","topic":"merchant_order"}"#,
    ] {
        let c = run("topic=payment&id=123", body).unwrap();
        assert_eq!(c.kind, Kind::Ipn);
        assert_eq!(c.work.unwrap().job_key(), "payment:123");
    }
}

#[test]
fn ipn_topics_map_to_jobs() {
    for (topic, id, want) in [
        ("payment", "7", JobKind::Payment),
        ("merchant_order", "7", JobKind::MerchantOrder),
        ("merchant_orders", "7", JobKind::MerchantOrder),
        ("chargebacks", "7", JobKind::Chargeback),
        ("point_integration_ipn", "7f25-aa", JobKind::PaymentIntent),
    ] {
        let c = run(&format!("topic={topic}&id={id}"), "").unwrap();
        assert_eq!(kind(&c), Some(want), "{topic}");
    }
}

#[test]
fn ipn_without_query_id_falls_back_to_body_resource() {
    let c = run(
        "topic=merchant_order",
        r#"{"resource":"https://api.example.com/merchant_orders/4945357007","topic":"merchant_order"}"#,
    )
    .unwrap();
    assert_eq!(rid(&c), Some("4945357007"));
    let c = run("topic=payment", r#"{"resource":55,"topic":"payment"}"#).unwrap();
    assert_eq!(rid(&c), Some("55"));
    assert_eq!(
        run("topic=payment", "").unwrap_err(),
        ClassifyError::Missing("query parameter id")
    );
}

#[test]
fn topic_and_resource_bodies_without_a_query() {
    let c = run("", r#"{"topic":"payment","resource":"/v1/payments/12"}"#).unwrap();
    assert_eq!(c.work.unwrap().job_key(), "payment:12");
    let c = run(
        "",
        r#"{"_id":"x","topic":"delivery","resource":"/shipments/1"}"#,
    )
    .unwrap();
    assert_eq!(c.kind, Kind::Ipn);
    assert_eq!(c.work, None);
}

#[test]
fn what_nothing_acts_on_is_ignored_not_refused() {
    let c = run("topic=subscription_preapproval&id=1", "").unwrap();
    assert_eq!(c.work, None);
    let c = run("type=mp-connect&data.id=1", "").unwrap();
    assert_eq!(c.work, None);
    // A webhook of a type not acted on needs no data.id …
    let c = run(
        "",
        r#"{"type":"automatic-payments","action":"card.updated","id":"a4"}"#,
    )
    .unwrap();
    assert_eq!((c.work, c.resource_id), (None, None));
    let c = run("type=claim", "").unwrap();
    assert_eq!(c.work, None);
    // … and an id we would not put in a path is only recorded.
    let c = run("topic=claims&id=../x", "").unwrap();
    assert_eq!(c.work, None);
}

#[test]
fn ids_are_checked_for_their_kind() {
    for query in [
        "topic=payment&id=a%20b",
        "topic=chargebacks&id=..%2F..%2Fv1%2Fpayments%2F9",
        "topic=merchant_order&id=12x",
        "type=payment&data.id=-1",
        "type=topic_chargebacks_wh&data.id=1/2",
        "topic=point_integration_ipn&id=a/../b",
    ] {
        assert!(
            matches!(run(query, ""), Err(ClassifyError::InvalidId { .. })),
            "{query}"
        );
    }
    assert!(matches!(
        run("", r#"{"id":"../x","state":"FINISHED"}"#),
        Err(ClassifyError::InvalidId { field: "id", .. })
    ));
    assert!(matches!(
        run("", r#"{"type":"payment","data":{"id":[1]}}"#),
        Err(ClassifyError::IdType { field: "data.id" })
    ));
    let e = run("topic=payment&id=1a", "").unwrap_err();
    assert_eq!(e.to_string(), "id: payment id must be digits only");
}

#[test]
fn webhooks_by_query_body_or_both() {
    let c = run("type=payment&data.id=5", "").unwrap();
    assert_eq!(rid(&c), Some("5"));
    let c = run("", r#"{"type":"payment","data":{"id":5},"id":12345}"#).unwrap();
    assert_eq!(c.kind, Kind::Webhook);
    assert_eq!(rid(&c), Some("5"));
    assert_eq!(c.notification_id.as_deref(), Some("12345"));
    // The query names the resource when both do, and a body it does not
    // need may be anything.
    let c = run(
        "type=payment&data.id=6",
        r#"{"type":"payment","data":{"id":"5"}}"#,
    )
    .unwrap();
    assert_eq!(rid(&c), Some("6"));
    let c = run("type=payment&data.id=6", "{not json").unwrap();
    assert_eq!(rid(&c), Some("6"));
    assert_eq!(
        run("type=payment", "").unwrap_err(),
        ClassifyError::Missing("data.id")
    );
    assert_eq!(
        run("data.id=5", "").unwrap_err(),
        ClassifyError::Missing("type")
    );
}

#[test]
fn webhook_types_map_to_jobs() {
    for (t, want) in [
        ("payment", JobKind::Payment),
        ("topic_merchant_order_wh", JobKind::MerchantOrder),
        ("topic_chargebacks_wh", JobKind::Chargeback),
        ("point_integration_wh", JobKind::PaymentIntent),
    ] {
        let c = run(&format!("type={t}&data.id=7"), "").unwrap();
        assert_eq!(kind(&c), Some(want), "{t}");
    }
    // An intent body sent under the webhook's type names itself.
    let c = run(
        "type=point_integration_wh",
        r#"{"id":"i-9","state":"FINISHED"}"#,
    )
    .unwrap();
    assert_eq!(c.work.unwrap().job_key(), "payment_intent:i-9");
}

fn alert(c: &Classified) -> &FraudAlert {
    match &c.work {
        Some(Work::FraudAlert(a)) => a,
        other => panic!("not a fraud alert: {other:?}"),
    }
}

#[test]
fn fraud_alerts_in_both_forms() {
    let c = run(
        "topic=delivery_cancellation&id=1",
        r#"{"merchant_order":4945357007,"payment_id":"23064274473","description":"x"}"#,
    )
    .unwrap();
    let a = alert(&c);
    assert_eq!(a.merchant_order.as_ref().unwrap().as_str(), "4945357007");
    assert_eq!(a.payment.as_ref().unwrap().as_str(), "23064274473");
    assert_eq!(a.description.as_deref(), Some("x"));
    assert!(!a.authenticated);
    let c = run(
        "type=stop_delivery_op_wh&data.id=23064274473",
        r#"{"type":"stop_delivery_op_wh","data":{"merchant_order":"4945357007","payment_id":23064274473}}"#,
    )
    .unwrap();
    assert_eq!(
        c.work.as_ref().unwrap().job_key(),
        "fraud:4945357007:23064274473"
    );
}

#[test]
fn a_fraud_alert_naming_nothing_keeps_its_own_id() {
    for body in [
        "",
        "{}",
        r#"{"resource":"58980959081","topic":"delivery_cancellation"}"#,
    ] {
        let c = run("topic=delivery_cancellation&id=58980959081", body).unwrap();
        let a = alert(&c);
        assert_eq!((a.payment.clone(), a.merchant_order.clone()), (None, None));
        assert_eq!(a.notified_id.as_ref().unwrap().as_str(), "58980959081");
        assert_eq!(c.work.unwrap().job_key(), "fraud:ipn:58980959081");
    }
    // Without even an id it is kept too.
    let c = run("topic=delivery_cancellation", "").unwrap();
    assert_eq!(c.work.unwrap().job_key(), "fraud:-:-");
    // With an order but no payment, the webhook's data.id names the payment.
    let c = run(
        "type=stop_delivery_op_wh&data.id=77",
        r#"{"data":{"merchant_order":5}}"#,
    )
    .unwrap();
    assert_eq!(c.work.unwrap().job_key(), "fraud:5:77");
}

#[test]
fn a_signature_authenticates_an_alert_only_over_its_own_ids() {
    let body = r#"{"data":{"merchant_order":5,"payment_id":77}}"#;
    let mut c = run("type=stop_delivery_op_wh&data.id=77", body).unwrap();
    c.authenticate("77", true);
    assert!(alert(&c).authenticated);
    let mut c = run("type=stop_delivery_op_wh&data.id=77", body).unwrap();
    c.authenticate("77", false);
    assert!(
        !alert(&c).authenticated,
        "a stale signature authenticates nothing"
    );
    let mut c = run("type=stop_delivery_op_wh&data.id=123456", body).unwrap();
    c.authenticate("123456", true);
    assert!(!alert(&c).authenticated);
}

#[test]
fn intent_bodies_are_pointers_whatever_their_state() {
    for state in [
        "FINISHED",
        "CONFIRMATION_REQUIRED",
        "CANCELED",
        "ERROR",
        "ABANDONED",
        "OPEN",
        "NEW?",
    ] {
        let c = run("", &format!(r#"{{"id":"abc","state":"{state}"}}"#)).unwrap();
        assert_eq!(c.kind, Kind::IntentWebhook);
        assert_eq!(c.work.unwrap().job_key(), "payment_intent:abc");
    }
    let c = run(
        "",
        r#"{"id":"abc","state":"FINISHED","caller_id": 09876543}"#,
    )
    .unwrap();
    assert_eq!(rid(&c), Some("abc"));
}

#[test]
fn accounts_are_named_three_ways() {
    for (query, want) in [
        ("customer=a", Some("a")),
        ("cliente=b", Some("b")),
        ("client=c", Some("c")),
        ("customer=a&client=c", Some("a")),
        ("customer=&client=c", Some("c")),
        ("", None),
    ] {
        assert_eq!(Query::parse(query).account(), want, "{query}");
    }
}

#[test]
fn malformed_and_unrecognised_bodies() {
    assert!(matches!(
        run("", "{not json"),
        Err(ClassifyError::MalformedJson(_))
    ));
    assert_eq!(run("", "").unwrap_err(), ClassifyError::Unrecognised);
    assert_eq!(run("", "  \n").unwrap_err(), ClassifyError::Unrecognised);
    assert_eq!(run("", "[1,2]").unwrap_err(), ClassifyError::Unrecognised);
    assert_eq!(
        run("", r#"{"hello":1}"#).unwrap_err(),
        ClassifyError::Unrecognised
    );
    assert_eq!(
        run("", r#"{"id":null,"state":"FINISHED"}"#).unwrap_err(),
        ClassifyError::IdType { field: "id" }
    );
}
