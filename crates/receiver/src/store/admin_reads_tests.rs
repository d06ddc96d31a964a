//! The listings read what they show, on SQLite (whose planner is told
//! which index to use; PostgreSQL's chooses on its own).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::*;
use crate::store::sql::{Run, run_sqlite};
use crate::store::sqlite::SqliteStore;

/// How many thousands of SQLite's instructions `f` takes on `conn`, and
/// what it gave.
fn work<T>(
    conn: &Mutex<Connection>,
    f: impl for<'c> FnOnce(&'c Conn<'c>) -> Run<'c, T>,
) -> (u64, T) {
    let n = Arc::new(AtomicU64::new(0));
    let counter = n.clone();
    let handler = move || {
        counter.fetch_add(1, Ordering::Relaxed);
        false
    };
    conn.lock().unwrap().progress_handler(1000, Some(handler));
    let out = run_sqlite(conn, f).unwrap();
    conn.lock()
        .unwrap()
        .progress_handler(1000, None::<fn() -> bool>);
    (n.load(Ordering::Relaxed), out)
}

/// With 20,000 done jobs and delivered events (each queued at one
/// destination), the status page's and
/// the admin API's listings read what they show, not the tables: read
/// and sorted whole, each takes hundreds of thousands of instructions.
#[test]
fn listings_read_what_they_show() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    SqliteStore::migrate(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    let (done, dead) = (JobState::Done as i64, JobState::Dead as i64);
    let (delivered, pending) = (EventState::Delivered as i64, EventState::Pending as i64);
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO jobs (account, job_key, kind, resource_id, state, run_at,
                           created_at, updated_at)
             SELECT 'a', 'k' || i, 1, i, CASE WHEN i % 2000 = 0 THEN {dead} ELSE {done} END,
                    i, i, i FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO events (id, account, type, subject, body, created_at, state,
                             next_attempt_at)
             SELECT 'evt_' || i, 'a', 't', 's', '{{}}', i,
                    CASE WHEN i % 2000 = 0 THEN {pending} ELSE {delivered} END, i FROM n;
         INSERT INTO outbox (event_id, destination, state, attempts, next_attempt_at,
                             created_at, queued_at)
             SELECT id, 'shop', state, 1, next_attempt_at, created_at, created_at FROM events;"
    ))
    .unwrap();
    let conn = Mutex::new(conn);

    let (n, jobs) = work(&conn, |c| Box::pin(list_jobs_in(c, JobState::Dead, 5)));
    assert!(n < 20, "{n}");
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    assert_eq!(
        ids,
        [20_000, 18_000, 16_000, 14_000, 12_000],
        "newest first"
    );
    let (n, jobs) = work(&conn, |c| Box::pin(list_jobs_in(c, JobState::Done, 3)));
    assert!(n < 20, "{n}");
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    assert_eq!(ids, [19_999, 19_998, 19_997], "newest first");

    let (n, events) = work(&conn, |c| Box::pin(list_events(c, None, None, 3)));
    assert!(n < 20, "{n}");
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["evt_20000", "evt_19999", "evt_19998"]);
    let (pending_only, events) = work(&conn, |c| {
        Box::pin(list_events(c, None, Some(EventState::Pending), 50))
    });
    assert!(pending_only < 20, "{pending_only}");
    assert_eq!(events.len(), 10);
    // An entry per destination where it is pending, read from the queue
    // rows' state index.
    assert!(
        events
            .iter()
            .all(|e| e.listed_at.as_deref() == Some("shop") && e.state == "pending")
    );
}
