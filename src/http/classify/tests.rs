use super::*;

fn id(s: &str) -> ResourceId {
    ResourceId::parse(s).unwrap()
}

fn run(query: &str, body: &str) -> Result<Classified, ClassifyError> {
    classify(&Query::parse(query), body.as_bytes())
}

/// Every fixture as the platform shapes it: (file, kind, topic, resource, work).
#[test]
fn every_fixture_classifies() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/notifications");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let fixture: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let query = fixture["query"].as_str().unwrap();
        let body = match &fixture["body"] {
            Value::Null => String::new(),
            b => b.to_string(),
        };
        let c = run(query, &body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(c.work.is_some(), "{}: should be work", path.display());
        seen += 1;
    }
    assert_eq!(seen, 12);
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
        assert_eq!(
            c.work,
            Some(Work::Fetch {
                kind: JobKind::Payment,
                id: id("123")
            })
        );
    }
}

#[test]
fn ipn_topics_map_to_jobs() {
    for (topic, kind) in [
        ("payment", JobKind::Payment),
        ("merchant_order", JobKind::MerchantOrder),
        ("merchant_orders", JobKind::MerchantOrder),
        ("chargebacks", JobKind::Chargeback),
        ("point_integration_ipn", JobKind::PaymentIntent),
    ] {
        let c = run(&format!("topic={topic}&id=7"), "").unwrap();
        assert_eq!(c.work.unwrap().job_kind(), kind, "{topic}");
    }
}

#[test]
fn ipn_without_query_id_falls_back_to_body_resource() {
    let c = run(
        "topic=merchant_order",
        r#"{"resource":"https://api.example.com/merchant_orders/4945357007","topic":"merchant_order"}"#,
    )
    .unwrap();
    assert_eq!(c.resource_id, id("4945357007"));
    let c = run("topic=payment", r#"{"resource":"55","topic":"payment"}"#).unwrap();
    assert_eq!(c.resource_id, id("55"));
    assert_eq!(
        run("topic=payment", "").unwrap_err(),
        ClassifyError::Missing("query parameter id")
    );
}

#[test]
fn unknown_topics_are_ignored_not_refused() {
    let c = run("topic=subscription_preapproval&id=1", "").unwrap();
    assert_eq!(c.work, None);
    let c = run("type=mp-connect&data.id=1", "").unwrap();
    assert_eq!(c.work, None);
    let c = run("", r#"{"id":"i1","state":"OPEN"}"#).unwrap();
    assert_eq!(c.kind, Kind::IntentWebhook);
    assert_eq!(c.work, None);
}

#[test]
fn bad_ids_are_refused_by_name() {
    assert!(matches!(
        run("topic=payment&id=a%20b", ""),
        Err(ClassifyError::InvalidId { field: "id", .. })
    ));
    let long = "9".repeat(129);
    assert!(matches!(
        run(&format!("type=payment&data.id={long}"), ""),
        Err(ClassifyError::InvalidId {
            field: "data.id",
            ..
        })
    ));
    assert!(matches!(
        run("", r#"{"type":"payment","data":{"id":[1]}}"#),
        Err(ClassifyError::IdType { field: "data.id" })
    ));
}

#[test]
fn webhooks_by_query_body_or_both() {
    let c = run("type=payment&data.id=5", "").unwrap();
    assert_eq!(c.resource_id, id("5"));
    let c = run("", r#"{"type":"payment","data":{"id":5},"id":12345}"#).unwrap();
    assert_eq!(c.kind, Kind::Webhook);
    assert_eq!(c.resource_id, id("5"));
    assert_eq!(c.notification_id.as_deref(), Some("12345"));
    // The query names the resource when both do.
    let c = run(
        "type=payment&data.id=6",
        r#"{"type":"payment","data":{"id":"5"}}"#,
    )
    .unwrap();
    assert_eq!(c.resource_id, id("6"));
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
    for (t, kind) in [
        ("payment", JobKind::Payment),
        ("topic_merchant_order_wh", JobKind::MerchantOrder),
        ("topic_chargebacks_wh", JobKind::Chargeback),
        ("point_integration_wh", JobKind::PaymentIntent),
    ] {
        let c = run(&format!("type={t}&data.id=7"), "").unwrap();
        assert_eq!(c.work.unwrap().job_kind(), kind, "{t}");
    }
}

#[test]
fn fraud_alerts_in_both_forms() {
    let c = run(
        "topic=delivery_cancellation&id=1",
        r#"{"merchant_order":4945357007,"payment_id":"23064274473","description":"x"}"#,
    )
    .unwrap();
    assert_eq!(
        c.work,
        Some(Work::FraudAlert {
            merchant_order: Some(id("4945357007")),
            payment: id("23064274473")
        })
    );
    let c = run(
        "type=stop_delivery_op_wh&data.id=23064274473",
        r#"{"type":"stop_delivery_op_wh","data":{"merchant_order":"4945357007","payment_id":23064274473}}"#,
    )
    .unwrap();
    assert!(c.is_fraud_alert());
    assert_eq!(c.work.unwrap().job_key(), "fraud:4945357007:23064274473");
    // Without a body payment_id, the webhook's data.id names the payment.
    let c = run("type=stop_delivery_op_wh&data.id=77", r#"{"data":{}}"#).unwrap();
    assert_eq!(c.work.unwrap().job_key(), "fraud:-:77");
    assert_eq!(
        run("topic=delivery_cancellation&id=1", "").unwrap_err(),
        ClassifyError::Missing("payment_id in the fraud alert body")
    );
}

#[test]
fn intent_bodies_in_every_final_state() {
    for (state, expected) in [
        ("FINISHED", IntentState::Finished),
        ("CONFIRMATION_REQUIRED", IntentState::ConfirmationRequired),
        ("CANCELED", IntentState::Canceled),
        ("ERROR", IntentState::Error),
    ] {
        let c = run("", &format!(r#"{{"id":"abc","state":"{state}"}}"#)).unwrap();
        assert_eq!(
            c.work,
            Some(Work::IntentBody {
                intent: id("abc"),
                state: expected
            })
        );
    }
}

#[test]
fn malformed_and_unrecognised_bodies() {
    assert!(matches!(
        run("", "{not json"),
        Err(ClassifyError::MalformedJson(_))
    ));
    assert!(matches!(
        run("type=payment&data.id=1", "{not json"),
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
        ClassifyError::Missing("id")
    );
}
