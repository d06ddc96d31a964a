//! The two storage backends for tests: SQLite in a temporary directory, and
//! PostgreSQL on the local server (`POINTHOOK_TEST_POSTGRES`, by default
//! `postgres://postgres@127.0.0.1:5432/postgres`), one database per test,
//! created and dropped. Without a server the PostgreSQL tests skip, saying
//! so once; with `POINTHOOK_TEST_POSTGRES_REQUIRED=1` (CI) they fail instead.
//!
//! `TestDb` reads and writes either with the same SQL (`$1` parameters,
//! which SQLite reads too) and plain values.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Where a test app keeps its data.
#[derive(Clone, Default)]
pub enum Backend {
    #[default]
    Sqlite,
    Postgres(Arc<TestDatabase>),
}

impl Backend {
    /// A fresh PostgreSQL database, or `None` (skip) without a server.
    pub fn postgres() -> Option<Backend> {
        TestDatabase::create().map(|db| Backend::Postgres(Arc::new(db)))
    }
}

/// Which backend the test running on a task uses.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Sqlite,
    Postgres,
}

tokio::task_local! {
    /// The backend kind of the test running on this task:
    /// `TestConfig::default()` reads it, so a test body is the same for both.
    pub static CURRENT: Kind;
}

/// Where a new test app keeps its data: a fresh store of the test's kind
/// (SQLite outside `on_both_backends!`). Two apps of one test share a
/// database only when the test says so.
pub fn current() -> Backend {
    match CURRENT.try_with(|k| *k).unwrap_or(Kind::Sqlite) {
        Kind::Sqlite => Backend::Sqlite,
        Kind::Postgres => Backend::postgres().expect("the server answered before the test began"),
    }
}

/// Runs each named `async fn name()` as two tests, `name::sqlite` and
/// `name::postgres`.
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                crate::backends::CURRENT
                    .scope(crate::backends::Kind::Sqlite, super::$name())
                    .await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if crate::backends::server().is_some() {
                    crate::backends::CURRENT
                        .scope(crate::backends::Kind::Postgres, super::$name())
                        .await
                }
            }
        }
    )+};
}

/// The server's URL, if one answers (checked once).
pub fn server() -> Option<&'static str> {
    static SERVER: OnceLock<Option<String>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let url = std::env::var("POINTHOOK_TEST_POSTGRES")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
            let required = std::env::var_os("POINTHOOK_TEST_POSTGRES_REQUIRED").is_some();
            match run(&url, |c| async move { c.simple_query("SELECT 1").await.map(|_| ()) }) {
                Ok(()) => Some(url),
                Err(e) if required => {
                    panic!("PostgreSQL is required for these tests but {url} does not answer: {e}")
                }
                Err(e) => {
                    eprintln!(
                        "PostgreSQL tests skipped: {url} does not answer ({e}); set POINTHOOK_TEST_POSTGRES to run them"
                    );
                    None
                }
            }
        })
        .as_deref()
}

/// A database of one test's own; dropped with it.
pub struct TestDatabase {
    pub url: String,
    server: String,
    name: String,
}

impl TestDatabase {
    fn create() -> Option<TestDatabase> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let server = server()?.to_string();
        let name = format!(
            "pointhook_test_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        );
        let sql = format!("CREATE DATABASE {name}");
        run(&server, |c| async move { c.batch_execute(&sql).await })
            .expect("create a test database");
        let mut url = url::Url::parse(&server).unwrap();
        url.set_path(&name);
        Some(TestDatabase {
            url: url.to_string(),
            server,
            name,
        })
    }
}

impl TestDatabase {
    /// An outage: the database stops taking connections and every open one
    /// is cut (`false`), or it takes them again (`true`).
    pub fn allow_connections(&self, allow: bool) {
        let sql = format!("ALTER DATABASE {} ALLOW_CONNECTIONS {allow}", self.name);
        run(&self.server, |c| async move { c.batch_execute(&sql).await })
            .expect("alter the test database");
        if !allow {
            // Committed first (one batch is one transaction), then the
            // sessions ended twice: one that was logging in while the
            // refusal committed shows up only a moment later.
            let kill = format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{}'",
                self.name
            );
            for _ in 0..2 {
                let kill = kill.clone();
                run(
                    &self.server,
                    |c| async move { c.batch_execute(&kill).await },
                )
                .expect("end the test database's sessions");
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(e) = run(&self.server, |c| async move { c.batch_execute(&sql).await }) {
            eprintln!("cannot drop test database {}: {e}", self.name);
        }
    }
}

/// Runs `f` on a connection to `url`, on a thread and runtime of its own
/// (so it works from any test, async or not).
pub fn run<T, F, Fut>(url: &str, f: F) -> Result<T, tokio_postgres::Error>
where
    T: Send,
    F: FnOnce(tokio_postgres::Client) -> Fut + Send,
    Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
{
    let url = url.to_string();
    std::thread::scope(|s| {
        s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let (client, connection) =
                    tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
                let polled = tokio::spawn(connection);
                let out = f(client).await;
                polled.abort();
                out
            })
        })
        .join()
        .unwrap()
    })
}

/// A plain value, read from either database.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

impl SqlValue {
    pub fn int(&self) -> i64 {
        match self {
            SqlValue::Int(n) => *n,
            other => panic!("not an integer: {other:?}"),
        }
    }

    pub fn opt_int(&self) -> Option<i64> {
        match self {
            SqlValue::Null => None,
            other => Some(other.int()),
        }
    }

    pub fn text(&self) -> String {
        match self {
            SqlValue::Text(s) => s.clone(),
            SqlValue::Bytes(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("not text: {other:?}"),
        }
    }

    pub fn opt_text(&self) -> Option<String> {
        match self {
            SqlValue::Null => None,
            other => Some(other.text()),
        }
    }

    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            SqlValue::Null => None,
            SqlValue::Bytes(b) => Some(b.clone()),
            SqlValue::Text(t) => Some(t.clone().into_bytes()),
            other => panic!("not bytes: {other:?}"),
        }
    }

    pub fn job_state(&self) -> pointhook::domain::JobState {
        let n = self.int();
        pointhook::domain::JobState::all()
            .find(|s| *s as i64 == n)
            .unwrap_or_else(|| panic!("{n} is no job state"))
    }

    pub fn event_state(&self) -> pointhook::domain::EventState {
        let n = self.int();
        pointhook::domain::EventState::all()
            .find(|s| *s as i64 == n)
            .unwrap_or_else(|| panic!("{n} is no event state"))
    }

    pub fn signature(&self) -> pointhook::domain::SignatureStatus {
        let n = self.int();
        pointhook::domain::SignatureStatus::all()
            .find(|s| *s as i64 == n)
            .unwrap_or_else(|| panic!("{n} is no signature status"))
    }
}

/// A test's own connection to its app's database.
#[derive(Clone)]
pub enum TestDb {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl TestDb {
    /// Every row `sql` returns, as plain values.
    pub fn rows(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        match self {
            TestDb::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.busy_timeout(std::time::Duration::from_secs(5))
                    .unwrap();
                let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                let n = stmt.column_count();
                let params: Vec<rusqlite::types::Value> = params.iter().map(to_sqlite).collect();
                stmt.query_map(rusqlite::params_from_iter(params), |r| {
                    Ok((0..n)
                        .map(|i| match r.get_ref(i).unwrap() {
                            rusqlite::types::ValueRef::Null => SqlValue::Null,
                            rusqlite::types::ValueRef::Integer(i) => SqlValue::Int(i),
                            rusqlite::types::ValueRef::Real(f) => SqlValue::Int(f as i64),
                            rusqlite::types::ValueRef::Text(t) => {
                                SqlValue::Text(String::from_utf8_lossy(t).into_owned())
                            }
                            rusqlite::types::ValueRef::Blob(b) => SqlValue::Bytes(b.to_vec()),
                        })
                        .collect())
                })
                .unwrap()
                .map(Result::unwrap)
                .collect()
            }
            TestDb::Postgres(url) => {
                let sql = sql.to_string();
                let params = params.to_vec();
                run(url, |c| async move {
                    let boxed: Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>> =
                        params.iter().map(to_postgres).collect();
                    let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = boxed
                        .iter()
                        .map(|b| b.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync))
                        .collect();
                    let rows = c.query(&sql, &refs).await?;
                    Ok(rows.iter().map(from_postgres).collect())
                })
                .unwrap_or_else(|e| panic!("{e}"))
            }
        }
    }

    pub fn value(&self, sql: &str, params: &[SqlValue]) -> SqlValue {
        self.rows(sql, params)
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .unwrap_or_else(|| panic!("no row: {sql}"))
    }

    pub fn execute(&self, sql: &str, params: &[SqlValue]) {
        match self {
            TestDb::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.busy_timeout(std::time::Duration::from_secs(5))
                    .unwrap();
                let params: Vec<rusqlite::types::Value> = params.iter().map(to_sqlite).collect();
                conn.execute(sql, rusqlite::params_from_iter(params))
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            TestDb::Postgres(url) => {
                let sql = sql.to_string();
                let params = params.to_vec();
                run(url, |c| async move {
                    let boxed: Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>> =
                        params.iter().map(to_postgres).collect();
                    let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = boxed
                        .iter()
                        .map(|b| b.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync))
                        .collect();
                    c.execute(&sql, &refs).await.map(|_| ())
                })
                .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

fn to_sqlite(v: &SqlValue) -> rusqlite::types::Value {
    match v {
        SqlValue::Null => rusqlite::types::Value::Null,
        SqlValue::Int(i) => rusqlite::types::Value::Integer(*i),
        SqlValue::Text(t) => rusqlite::types::Value::Text(t.clone()),
        SqlValue::Bytes(b) => rusqlite::types::Value::Blob(b.clone()),
    }
}

/// Numbers go as BIGINT; a column of another width is compared with a cast
/// in the SQL (`state = $1::int2`), or written as a literal.
fn to_postgres(v: &SqlValue) -> Box<dyn tokio_postgres::types::ToSql + Sync + Send> {
    match v {
        SqlValue::Null => Box::new(Option::<String>::None),
        SqlValue::Int(i) => Box::new(*i),
        SqlValue::Text(t) => Box::new(t.clone()),
        SqlValue::Bytes(b) => Box::new(b.clone()),
    }
}

fn from_postgres(r: &tokio_postgres::Row) -> Vec<SqlValue> {
    use tokio_postgres::types::Type;
    (0..r.len())
        .map(|i| {
            let ty = r.columns()[i].type_().clone();
            let int = |n: Option<i64>| n.map_or(SqlValue::Null, SqlValue::Int);
            match ty {
                Type::INT2 => int(r.get::<_, Option<i16>>(i).map(i64::from)),
                Type::INT4 => int(r.get::<_, Option<i32>>(i).map(i64::from)),
                Type::INT8 => int(r.get::<_, Option<i64>>(i)),
                Type::BOOL => int(r.get::<_, Option<bool>>(i).map(i64::from)),
                Type::BYTEA => r
                    .get::<_, Option<Vec<u8>>>(i)
                    .map_or(SqlValue::Null, SqlValue::Bytes),
                _ => r
                    .get::<_, Option<String>>(i)
                    .map_or(SqlValue::Null, SqlValue::Text),
            }
        })
        .collect()
}
