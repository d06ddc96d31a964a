//! The paged lists read what they show, on SQLite: a page with no filter
//! reads its rows and no more; a sparse filter reads its window and says
//! where it stopped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::*;
use crate::domain::JobState;
use crate::store::sql::{Conn, Run, run_sqlite};
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

/// 20,000 dead jobs (a window's worth), one in 2,000 of account `b`.
fn dead_jobs() -> (tempfile::TempDir, Mutex<Connection>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    SqliteStore::migrate(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    let dead = JobState::Dead as i64;
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO jobs (account, job_key, kind, resource_id, state, run_at,
                           created_at, updated_at)
             SELECT CASE WHEN i % 2000 = 0 THEN 'b' ELSE 'a' END, 'k' || i, 1, i, {dead},
                    i, i, i FROM n;"
    ))
    .unwrap();
    (dir, Mutex::new(conn))
}

fn filter(account: Option<&str>, cursor: Option<String>, limit: usize) -> JobFilter {
    JobFilter {
        state: None,
        kind: None,
        account: account.map(str::to_string),
        cursor,
        limit,
    }
}

#[test]
fn a_page_with_no_filter_reads_only_its_rows() {
    let (_dir, conn) = dead_jobs();
    let f = filter(None, None, 5);
    let (n, page) = work(&conn, move |c| {
        Box::pin(async move { lists::job_page(c, &f).await })
    });
    assert!(n < 20, "{n}");
    let ids: Vec<i64> = page.rows.iter().map(|j| j.id).collect();
    assert_eq!(ids, [20_000, 19_999, 19_998, 19_997, 19_996]);
    assert_eq!(page.next.as_deref(), Some("19996.19996"));
}

#[test]
fn a_sparse_filter_reads_its_window_and_says_where_it_stopped() {
    let (_dir, conn) = dead_jobs();
    let f = filter(Some("b"), None, 50);
    let (_, page) = work(&conn, move |c| {
        Box::pin(async move { lists::job_page(c, &f).await })
    });
    assert_eq!(page.rows.len(), 10);
    assert!(page.rows.iter().all(|j| j.account == "b"));
    // The window (20,000 rows) ran out: the next page starts after it.
    assert_eq!(page.next.as_deref(), Some("1.1"));
    let f = filter(Some("b"), page.next, 50);
    let (_, page) = work(&conn, move |c| {
        Box::pin(async move { lists::job_page(c, &f).await })
    });
    assert!(page.rows.is_empty());
    assert_eq!(page.next, None);
}
