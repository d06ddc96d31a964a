//! `pointhook copy-store`: a deployment moved from SQLite to PostgreSQL and
//! back, row for row, through the real binary; what it refuses.

use pointhook::domain::attention::{AlertKind, Incident};
use pointhook::domain::{Action, AuditOutcome, Failure, FailureClass, Via};
use pointhook::domain::{
    Decision, Effects, EventType, Guard, Kind, Mark, MerchantOrderId, OrderPayment, OrderSeen,
    PaymentId, PlatformOrderId, Review, ReviewMark, SignatureStatus, Slot, Work,
};
use pointhook::store::alert_views::IncidentRound;
use pointhook::store::console_views::NewAudit;
use pointhook::store::model::Attempted;
use pointhook::store::{
    EventOutcome, FetchRow, JobOutcome, Location, NewDelivery, NewJob, Store, fingerprint,
    unix_ms_now,
};
use serde_json::json;

use crate::backends::{Backend, TestDb};
use crate::helpers::*;

/// The binary's answer: (success, stdout, stderr).
fn copy_store(from: &str, to: &str) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["copy-store", "--from", from, "--to", to])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Something in every table, with the awkward values a real store holds:
/// bodies that are not UTF-8 or absent, times at the end of the range, a
/// re-run pending, text from outside.
async fn fill(location: &Location) {
    let store = Store::open(location, crate::helpers::rules())
        .await
        .unwrap();
    let now = unix_ms_now();
    store
        .register_destinations(
            vec![("default".into(), "https://shop.example/h".into())],
            now,
        )
        .await
        .unwrap();
    for i in 0..25u32 {
        let order = format!("{}", 4000 + i);
        let work = Work::MerchantOrder {
            id: MerchantOrderId::parse(&order).unwrap(),
        };
        let body: &[u8] = match i % 3 {
            0 => b"\xff\xfe not utf-8",
            1 => b"",
            _ => "{\"note\": \"caf\u{e9} \u{1b}[31m\"}".as_bytes(),
        };
        store
            .ingest(NewDelivery {
                received_at: now + i64::from(i),
                account: "default".into(),
                kind: Kind::Webhook,
                topic: "merchant_order".into(),
                resource_id: order.clone(),
                notification_id: Some(format!("n-{i}")),
                source_news: (i % 2 == 0).then(|| "webhooks".into()),
                query: format!("type=topic_merchant_order_wh&data.id={order}"),
                headers: json!({"user-agent": "test\u{7f}"}).to_string(),
                body: bytes::Bytes::copy_from_slice(body),
                body_size: (i == 4).then_some(9_999_999),
                body_sha256: (i == 4).then_some([7; 32]),
                remote_addr: "127.0.0.1:9".into(),
                fingerprint: fingerprint("default", Kind::Webhook, "t", &order, body),
                signature: SignatureStatus::NotChecked,
                signature_key: None,
                job: Some(NewJob::for_work(&work)),
            })
            .await
            .unwrap();
    }
    // Decide on most of them: releases, a block held for a person, API calls.
    for job in store
        .lease_jobs(now + 1000, 60_000, 20)
        .await
        .unwrap()
        .taken
    {
        let order = job.resource_id.clone();
        let id = MerchantOrderId::parse(&order).unwrap();
        let mut effects = Effects {
            decisions: vec![Decision {
                subject: format!("merchant_order:{order}"),
                key: "released".into(),
                event: EventType::OrderReleased,
                data: json!({"merchant_order_id": order}),
                guards: vec![Guard::OrderNotReleased(id.clone())],
                marks: vec![Mark::OrderReleased(id.clone())],
                slot: Slot::Once,
                reason: "test".into(),
            }],
            orders: vec![OrderSeen {
                order_id: id.clone(),
                total_amount: "10.50".into(),
                paid_amount: "10.50".into(),
            }],
            order_payments: vec![OrderPayment {
                payment: PaymentId::parse(&order).unwrap(),
                order: PlatformOrderId::parse("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3").unwrap(),
            }],
            refs: vec![pointhook::domain::OrderRef {
                subject: format!("merchant_order:{order}"),
                kind: pointhook::domain::RefKind::ExternalReference,
                value: format!("ref-{order}"),
            }],
        };
        if order.ends_with('7') {
            effects.decisions[0] = Decision {
                subject: format!("merchant_order:{order}"),
                key: "blocked".into(),
                event: EventType::OrderBlocked,
                data: json!({"merchant_order_id": order}),
                guards: Vec::new(),
                marks: vec![
                    Mark::OrderBlocked {
                        order: id.clone(),
                        alert: format!("alert-{order}"),
                        unauthenticated: true,
                    },
                    Mark::Review(ReviewMark {
                        job_key: job.key.clone(),
                        round: 1,
                        alert: format!("alert-{order}"),
                        state: Review::Held,
                        delivery_id: Some(3),
                        merchant_order: Some(id.clone()),
                        payment: Some(PaymentId::parse("123").unwrap()),
                        reason: "unauthenticated".into(),
                    }),
                    // A hold, as any kind places one.
                    Mark::Hold(pointhook::domain::HoldMark {
                        kind: "review_above",
                        subject: format!("merchant_order:{order}"),
                        reason: "total 10.50 is above the review amount 5.00".into(),
                        evidence: json!({"merchant_order_id": order}).to_string(),
                    }),
                ],
                slot: Slot::Once,
                reason: "test".into(),
            };
        }
        let outcome = if order.ends_with('3') {
            JobOutcome::Retry {
                run_at: i64::MAX,
                error: "timeout \u{1b} talking to the API".into(),
                failure: Failure {
                    class: FailureClass::Timeout,
                    status: None,
                    endpoint: Some("merchant_order".into()),
                },
            }
        } else {
            JobOutcome::Done(effects)
        };
        let fetches = vec![FetchRow {
            seen: None,
            endpoint: "merchant_orders",
            resource_id: order.clone(),
            status: 200,
            elapsed_ms: 12,
            at: now,
            body: Some(format!("{{\"id\":{order}}}").into_bytes()),
        }];
        store.finish_job(job, outcome, fetches, now).await.unwrap();
    }
    // The console's tables: an operator, an action and an acknowledgement,
    // an attempt of an event, and a job's death kept when it ran again.
    let hash = pointhook::operators::hash("a long enough password").unwrap();
    store.add_operator("ana".into(), hash, now).await.unwrap();
    let audit = store
        .begin_audit(NewAudit {
            at: now,
            actor: "ana".into(),
            via: Via::Console,
            action: Action::Acknowledge,
            item: "missed:1".into(),
            account: Some("default".into()),
            order_id: None,
            detail: "acknowledge \u{1b} something".into(),
        })
        .await
        .unwrap();
    store
        .end_audit(audit, AuditOutcome::Done, "acknowledged".into(), now)
        .await
        .unwrap();
    store
        .acknowledge("missed:1".into(), "ana".into(), now)
        .await
        .unwrap();
    // What a person was told: one incident open and told, one resolved.
    let incident = |key: &str| Incident {
        kind: AlertKind::DeadJobs,
        key: key.into(),
        text: format!("job {key} gave up: caf\u{e9}"),
        path: "/jobs/1".into(),
        opened_at: now,
        notified_at: None,
    };
    store
        .record_incidents(IncidentRound {
            now,
            opened: vec![incident("job:1"), incident("job:2")],
            notified: vec![(AlertKind::DeadJobs, "job:1".into())],
            resolved: vec![(AlertKind::DeadJobs, "job:2".into())],
            forget_before: 0,
        })
        .await
        .unwrap();
    let events = store
        .lease_events("default", now + 1000, 60_000, 1)
        .await
        .unwrap()
        .taken;
    let outcomes = events
        .into_iter()
        .map(|event| EventOutcome {
            event,
            attempted: Attempted::Failed {
                error: "503 from the merchant".into(),
                next: Some(now + 5000),
            },
        })
        .collect();
    store
        .record_event_outcomes("default", outcomes, healthy(now))
        .await
        .unwrap();
    let job = store.lease_jobs(now + 1000, 60_000, 1).await.unwrap().taken;
    let job = job.into_iter().next().expect("a job left to lease");
    let id = job.id;
    let dead = JobOutcome::Dead {
        error: "after 6 attempts: gone".into(),
        failure: Failure {
            class: FailureClass::ServerError,
            status: Some(503),
            endpoint: Some("payment".into()),
        },
    };
    store.finish_job(job, dead, Vec::new(), now).await.unwrap();
    assert!(store.retry_job(id, now + 1).await.unwrap());
    store.close().await;
}

/// Every row of every table, in a stable order.
fn dump(db: &TestDb) -> Vec<(&'static str, Vec<Vec<crate::backends::SqlValue>>)> {
    pointhook::store::tables::TABLES
        .iter()
        .map(|t| {
            // Tables copied in their insertion order, compared by key.
            let order = match (t.order_by, t.name) {
                (Some(by), _) => by,
                (None, "outbox") => "event_id, destination",
                (None, _) => "id",
            };
            let rows = db.rows(
                &format!(
                    "SELECT {} FROM {} ORDER BY {order}",
                    t.column_list(),
                    t.name
                ),
                &[],
            );
            (t.name, rows)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_moves_to_postgresql_and_back_row_for_row() {
    let Some(Backend::Postgres(pg)) = Backend::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (first, back) = (dir.path().join("first.db"), dir.path().join("back.db"));
    fill(&Location::Sqlite(first.clone())).await;

    let (ok, out, err) = copy_store(first.to_str().unwrap(), &pg.url);
    assert!(ok, "{err}");
    assert!(out.contains("every count verified"), "{out}");
    assert!(out.contains("deliveries             25 rows"), "{out}");
    let (ok, _, err) = copy_store(&pg.url, back.to_str().unwrap());
    assert!(ok, "{err}");

    let original = dump(&TestDb::Sqlite(first.clone()));
    let empty: Vec<_> = original
        .iter()
        .filter(|(_, rows)| rows.is_empty())
        .map(|(t, _)| *t)
        .collect();
    assert!(empty.is_empty(), "every table has rows: {empty:?}");
    assert_eq!(dump(&TestDb::Postgres(pg.url.clone())), original);
    assert_eq!(dump(&TestDb::Sqlite(back.clone())), original);
    // The insertion order of events is kept (the order they are listed in).
    let order =
        |db: &TestDb, by: &str| db.rows(&format!("SELECT id FROM events ORDER BY {by}"), &[]);
    assert_eq!(
        order(&TestDb::Postgres(pg.url.clone()), "seq"),
        order(&TestDb::Sqlite(first.clone()), "rowid")
    );

    // A second copy into a store that holds data is refused, naming why.
    let (ok, _, err) = copy_store(first.to_str().unwrap(), &pg.url);
    assert!(!ok);
    assert!(err.contains("holds data already"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // The copy serves: new rows get ids past the copied ones.
    let app = spawn_app_with(TestConfig {
        backend: Backend::Postgres(pg.clone()),
        ..Default::default()
    })
    .await;
    let (status, body) = answer(app.post("topic=payment&id=1", &[], None).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["delivery_id"], 26);
    // And nothing copies from or into it while it runs.
    let (ok, _, err) = copy_store(&pg.url, dir.path().join("third.db").to_str().unwrap());
    assert!(!ok);
    assert!(err.contains("in use by a running pointhook"), "{err}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_to_sqlite_and_what_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("a.db"), dir.path().join("b.db"));
    fill(&Location::Sqlite(first.clone())).await;
    let (from, to) = (first.to_str().unwrap(), second.to_str().unwrap());
    let (ok, _, err) = copy_store(from, to);
    assert!(ok, "{err}");
    assert_eq!(
        dump(&TestDb::Sqlite(second.clone())),
        dump(&TestDb::Sqlite(first.clone()))
    );

    let refused = |from: &str, to: &str, why: &str| {
        let (ok, _, err) = copy_store(from, to);
        assert!(!ok, "{from} -> {to}");
        assert!(err.contains(why), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    };
    refused(from, to, "holds data already");
    refused(from, from, "the same store");
    refused(
        dir.path().join("missing.db").to_str().unwrap(),
        dir.path().join("c.db").to_str().unwrap(),
        "no database at",
    );
    // A file a server owns is not copied from.
    let store = Store::open(&Location::Sqlite(first.clone()), crate::helpers::rules())
        .await
        .unwrap();
    refused(
        from,
        dir.path().join("d.db").to_str().unwrap(),
        "another pointhook is serving",
    );
    store.close().await;
}
