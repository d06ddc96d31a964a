//! An acknowledgement commits the notification alone; its delivery, its
//! duplicate mark and its job follow from it (`store/ingest.rs`). A crash
//! between the two loses and repeats nothing, on either store: the real
//! binary, told never to derive, acknowledges notifications (a duplicate
//! among them), is killed with SIGKILL, and started again as usual.

use std::time::Duration;

use crate::helpers::*;
use crate::platform::{FakeApi, Merchant};

#[tokio::test]
async fn a_kill_between_the_ack_and_its_derivation_loses_and_repeats_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("pointhook.db");
    let storage = format!("path = {:?}", db.display().to_string());
    killed_before_deriving(&dir, &storage, TestDb::Sqlite(db.clone())).await;
}

#[tokio::test]
async fn a_kill_between_the_ack_and_its_derivation_loses_and_repeats_nothing_on_postgres() {
    let Some(Backend::Postgres(pg)) = Backend::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let storage = format!("url = {:?}", pg.url);
    killed_before_deriving(&dir, &storage, TestDb::Postgres(pg.url.clone())).await;
}

async fn killed_before_deriving(dir: &tempfile::TempDir, storage: &str, db: TestDb) {
    init_logs();
    const ORDERS: usize = 8;
    let api = FakeApi::start().await;
    let merchant = Merchant::start().await;
    let payment = |i: usize| format!("{}", 6_000 + i);
    for i in 0..ORDERS {
        let order = format!("{}", 9_500 + i);
        api.payment(&payment(i), "approved", "10", Some(&order));
        api.order(&order, "10", &[(&payment(i), "10", "approved")], None);
    }
    let config = dir.path().join("pointhook.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[storage]\n{storage}\n\
             [api]\nbase_url = \"{}\"\ntimeout_secs = 5\nrequests_per_second = 1000\n\
             [worker]\nconcurrency = 4\n{}\
             [[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n",
            api.uri(),
            merchant.config()
        ),
    )
    .unwrap();
    let count = |sql: &str| db.value(sql, &[]).int();

    let mut served = serve_binary(&config, &[("POINTHOOK_FAULT_HOLD_DERIVATION", "1")]);
    let client = client();
    // Each payment notified twice: the second is a duplicate, of one job.
    for round in 0..2 {
        for i in 0..ORDERS {
            let url = format!(
                "http://{}/notifications?topic=payment&id={}",
                served.addr,
                payment(i)
            );
            let res = client.post(url).send().await.unwrap();
            assert_eq!(res.status(), 200, "round {round}, payment {i}");
        }
    }
    // Acknowledged, and nothing derived yet: the kill lands between them.
    assert_eq!(count("SELECT count(*) FROM inbox"), 2 * ORDERS as i64);
    assert_eq!(count("SELECT count(*) FROM deliveries"), 0);
    assert_eq!(count("SELECT count(*) FROM jobs"), 0);
    served.child.kill().unwrap();
    served.child.wait().unwrap();

    let mut served = serve_binary(&config, &[]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let delivered = count(&format!(
            "SELECT count(*) FROM events WHERE state = {}",
            EventState::Delivered as i16
        ));
        // Each order: payment.updated and order.released.
        if delivered == 2 * ORDERS as i64 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {delivered} of {} events decided and delivered in a minute",
            2 * ORDERS
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count("SELECT count(*) FROM inbox"), 0);
    assert_eq!(count("SELECT count(*) FROM deliveries"), 2 * ORDERS as i64);
    assert_eq!(
        count("SELECT count(*) FROM deliveries WHERE duplicate_of IS NOT NULL"),
        ORDERS as i64,
        "the second of each pair is its duplicate"
    );
    assert_eq!(
        count("SELECT count(*) FROM jobs"),
        ORDERS as i64,
        "one job per payment"
    );
    assert_eq!(
        count("SELECT count(DISTINCT subject) FROM events WHERE type = 'order.released'"),
        ORDERS as i64
    );
    assert_eq!(
        count("SELECT count(*) FROM events"),
        2 * ORDERS as i64,
        "no event twice"
    );
    let ids: std::collections::HashSet<String> = merchant
        .received()
        .await
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2 * ORDERS, "every event reached the merchant");
    served.child.kill().unwrap();
    served.child.wait().unwrap();
}
