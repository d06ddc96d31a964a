//! Tests of the parent module, on the PostgreSQL at
//! `POINTHOOK_TEST_POSTGRES` (skipped without it unless
//! `POINTHOOK_TEST_POSTGRES_REQUIRED` is set), each in a schema of its own.

use super::*;

/// A client whose objects live in a fresh schema, and that schema's name.
async fn fresh() -> Option<(Client, String)> {
    let Ok(url) = std::env::var("POINTHOOK_TEST_POSTGRES") else {
        assert!(
            std::env::var_os("POINTHOOK_TEST_POSTGRES_REQUIRED").is_none(),
            "POINTHOOK_TEST_POSTGRES_REQUIRED is set without POINTHOOK_TEST_POSTGRES"
        );
        return None;
    };
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test PostgreSQL");
    tokio::spawn(conn);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let schema = format!("pointhook_schema_test_{}_{nanos}", std::process::id());
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; SET search_path TO {schema}"
        ))
        .await
        .unwrap();
    Some((client, schema))
}

/// As SQLite's: reviews stored before they were holds move into `holds`
/// and read back through `fraud_reviews` as they were.
#[tokio::test]
async fn fraud_reviews_become_holds() {
    let Some((mut client, schema)) = fresh().await else {
        return;
    };
    client
        .batch_execute(
            "CREATE TABLE pointhook_schema (
                 one     BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
                 version BIGINT  NOT NULL
             );
             INSERT INTO pointhook_schema (version) VALUES (12);",
        )
        .await
        .unwrap();
    for sql in &MIGRATIONS[..12] {
        client.batch_execute(sql).await.unwrap();
    }
    client
        .batch_execute(
            "INSERT INTO jobs (account, job_key, kind, resource_id, state, run_at, created_at,
                               updated_at)
             VALUES ('a', 'fraud:o1:p1', 1, 'p1', 2, 0, 0, 0);
             INSERT INTO fraud_reviews (account, job_key, round, alert, merchant_order, payment,
                                        reason, state, delivery_id, created_at, decided_at)
             VALUES ('a', 'fraud:o1:p1', 0, 'fraud_alert:o1:p1', 'o1', 'p1', 'unsigned', 3, 11,
                     100, 150),
                    ('a', 'fraud:o1:p1', 1, 'fraud_alert:o1:p1#1', 'o1', NULL, 'again', 1, 12,
                     200, NULL),
                    ('b', 'fraud:x:-', 0, 'fraud_alert:x:-', NULL, NULL, 'no such order', 4,
                     NULL, 300, NULL);",
        )
        .await
        .unwrap();
    let job: i64 = client
        .query_one("SELECT id FROM jobs", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(migrate(&mut client).await.unwrap(), LATEST);
    type Hold = (String, String, i16, String, Option<i64>, Option<i64>);
    let holds: Vec<Hold> = client
        .query(
            "SELECT kind, subject, state, reason, job_id, decided_at FROM holds ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
        .collect();
    let h = |s: &str, st, why: &str, job, at| {
        (
            "fraud_review".to_string(),
            s.to_string(),
            st,
            why.to_string(),
            job,
            at,
        )
    };
    assert_eq!(
        holds,
        [
            h("fraud_alert:o1:p1", 3, "unsigned", Some(job), Some(150)),
            h("fraud_alert:o1:p1#1", 1, "again", Some(job), None),
            h("fraud_alert:x:-", 4, "no such order", None, None),
        ]
    );
    type Review = (
        String,
        i32,
        String,
        Option<String>,
        Option<String>,
        Option<i64>,
        i16,
    );
    let reviews: Vec<Review> = client
        .query(
            "SELECT job_key, round, alert, merchant_order, payment, delivery_id, state
             FROM fraud_reviews ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(3),
                r.get(4),
                r.get(5),
                r.get(6),
            )
        })
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
                Some(11),
                3
            ),
            (
                "fraud:o1:p1".into(),
                1,
                "fraud_alert:o1:p1#1".into(),
                o1(),
                None,
                Some(12),
                1
            ),
            (
                "fraud:x:-".into(),
                0,
                "fraud_alert:x:-".into(),
                None,
                None,
                None,
                4
            ),
        ]
    );
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
