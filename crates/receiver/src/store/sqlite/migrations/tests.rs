//! Tests of the parent module.

use super::*;

#[test]
fn migrating_twice_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let mut conn = Connection::open(&path).unwrap();
    assert_eq!(migrate(&mut conn).unwrap(), LATEST);
    conn.execute("INSERT INTO health (id, checked_at) VALUES (1, 5)", [])
        .unwrap();
    drop(conn);
    let mut conn = Connection::open(&path).unwrap();
    assert_eq!(migrate(&mut conn).unwrap(), LATEST);
    let v: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, LATEST);
    let kept: i64 = conn
        .query_row("SELECT checked_at FROM health", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kept, 5);
}

#[test]
fn a_duplicate_is_found_by_one_index_seek() {
    let mut conn = Connection::open_in_memory().unwrap();
    migrate(&mut conn).unwrap();
    let plan: Vec<String> = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT id FROM deliveries
             WHERE account = ?1 AND resource_id = ?2 AND fingerprint = ?3
             ORDER BY id LIMIT 1",
        )
        .unwrap()
        .query_map(["a", "b", "c"], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        plan,
        [
            "SEARCH deliveries USING COVERING INDEX deliveries_resource (account=? AND resource_id=? AND fingerprint=?)"
        ],
        "no scan of the resource's other deliveries, no sort"
    );
}

/// Events of a version before destinations were sent to
/// `[fulfillment]`: they go on at the destination `default`, pending
/// ones still pending, given-up ones recoverable.
#[test]
fn events_before_destinations_go_to_default() {
    let mut conn = Connection::open_in_memory().unwrap();
    for sql in &MIGRATIONS[..8] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 8).unwrap();
    conn.execute_batch(
        "INSERT INTO events (id, account, type, subject, body, created_at, state, attempts,
                             next_attempt_at, last_error)
         VALUES ('evt_p', 'a', 'order.released', 's', '{}', 1, 0, 3, 50, 'the endpoint answered 500'),
                ('evt_d', 'a', 'order.released', 's', '{}', 2, 1, 1, 2, NULL),
                ('evt_x', 'a', 'order.released', 's', '{}', 3, 2, 9, 3, 'gone'),
                ('evt_s', 'a', 'order.released', 's', '{}', 4, 3, 0, 4, NULL);",
    )
    .unwrap();
    migrate(&mut conn).unwrap();
    let rows: Vec<(String, String, i64, i64, i64)> = conn
        .prepare("SELECT event_id, destination, state, attempts, next_attempt_at FROM outbox ORDER BY event_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let d = "default".to_string();
    assert_eq!(
        rows,
        [
            ("evt_d".into(), d.clone(), 1, 1, 2),
            ("evt_p".into(), d.clone(), 0, 3, 50),
            ("evt_x".into(), d.clone(), 2, 9, 3),
        ],
        "a stored event goes nowhere"
    );
    let sums: Vec<(i64, i64)> = conn
        .prepare("SELECT unfinished, gave_up FROM events ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(sums, [(0, 0), (1, 0), (0, 0), (0, 1)]);
    let default: i64 = conn
        .query_row(
            "SELECT count(*) FROM destinations WHERE name = 'default' AND state = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(default, 1);
}

#[test]
fn a_newer_schema_is_refused() {
    let mut conn = Connection::open_in_memory().unwrap();
    conn.pragma_update(None, "user_version", LATEST + 1)
        .unwrap();
    assert!(matches!(migrate(&mut conn), Err(StoreError::TooNew { .. })));
}

fn plan(c: &Connection, sql: &str) -> String {
    c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The reads of every round touch what they count, not the tables.
#[test]
fn each_round_reads_by_an_index() {
    let mut c = Connection::open_in_memory().unwrap();
    migrate(&mut c).unwrap();
    let heard = plan(
        &c,
        "SELECT account, max(received_at) FROM deliveries INDEXED BY deliveries_received_at
             WHERE received_at > 5 AND kind <> 4 GROUP BY account",
    );
    assert!(
        heard.contains("deliveries_received_at (received_at>?)"),
        "{heard}"
    );
    let open = plan(
        &c,
        "SELECT kind FROM incidents INDEXED BY incidents_open WHERE resolved_at IS NULL",
    );
    assert!(open.contains("incidents_open"), "{open}");
}

/// Reviews stored before they were holds: each moves into `holds` as a
/// hold of kind `fraud_review` (its state, reason, job and times kept, what
/// it is about as evidence) and reads back through `fraud_reviews` as it was.
#[test]
fn fraud_reviews_become_holds() {
    let mut conn = Connection::open_in_memory().unwrap();
    for sql in &MIGRATIONS[..16] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 16).unwrap();
    conn.execute_batch(
        "INSERT INTO jobs (id, account, job_key, kind, resource_id, state, run_at, created_at,
                           updated_at)
         VALUES (7, 'a', 'fraud:o1:p1', 1, 'p1', 2, 0, 0, 0);
         INSERT INTO fraud_reviews (id, account, job_key, round, alert, merchant_order, payment,
                                    reason, state, delivery_id, created_at, decided_at)
         VALUES (1, 'a', 'fraud:o1:p1', 0, 'fraud_alert:o1:p1', 'o1', 'p1', 'unsigned', 3, 11,
                 100, 150),
                (2, 'a', 'fraud:o1:p1', 1, 'fraud_alert:o1:p1#1', 'o1', NULL, 'again', 1, 12,
                 200, NULL),
                (3, 'b', 'fraud:x:-', 0, 'fraud_alert:x:-', NULL, NULL, 'no such order', 4,
                 NULL, 300, NULL);",
    )
    .unwrap();
    migrate(&mut conn).unwrap();
    type Hold = (
        String,
        String,
        String,
        i64,
        String,
        Option<i64>,
        Option<i64>,
        i64,
    );
    let holds: Vec<Hold> = conn
        .prepare(
            "SELECT account, kind, subject, state, reason, job_id, decided_at, created_at
             FROM holds ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let h = |a: &str, s: &str, st: i64, why: &str, job, at, c| {
        (
            a.to_string(),
            "fraud_review".to_string(),
            s.to_string(),
            st,
            why.to_string(),
            job,
            at,
            c,
        )
    };
    assert_eq!(
        holds,
        [
            h(
                "a",
                "fraud_alert:o1:p1",
                3,
                "unsigned",
                Some(7),
                Some(150),
                100
            ),
            h("a", "fraud_alert:o1:p1#1", 1, "again", Some(7), None, 200),
            h("b", "fraud_alert:x:-", 4, "no such order", None, None, 300),
        ]
    );
    type Review = (
        String,
        i64,
        String,
        Option<String>,
        Option<String>,
        Option<i64>,
    );
    let reviews: Vec<Review> = conn
        .prepare(
            "SELECT job_key, round, alert, merchant_order, payment, delivery_id
             FROM fraud_reviews ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let o1 = || Some("o1".to_string());
    assert_eq!(
        reviews,
        [
            (
                "fraud:o1:p1".into(),
                0,
                "fraud_alert:o1:p1".into(),
                o1(),
                Some("p1".into()),
                Some(11)
            ),
            (
                "fraud:o1:p1".into(),
                1,
                "fraud_alert:o1:p1#1".into(),
                o1(),
                None,
                Some(12)
            ),
            (
                "fraud:x:-".into(),
                0,
                "fraud_alert:x:-".into(),
                None,
                None,
                None
            ),
        ]
    );
}
