//! The crash campaign: the real binary under concurrent notifications
//! from the platform (the sandbox as API, answering slowly so the worker is
//! mid-job), killed with SIGKILL at random moments and restarted, then
//! checked against every invariant. One instance on SQLite, or several on
//! one PostgreSQL database (sent to in turn, one of them ingest-only, a
//! random one killed each time). Self-contained: the integration tests run
//! it small, `examples/crash_campaign.rs` runs it large.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pointhook_common::clock::SystemClock;
use pointhook_sandbox::MailSettings;
use pointhook_sandbox::{AccountSpec, Sandbox, SandboxSettings};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;

use crate::backends::{SqlValue, TestDb};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub struct Settings {
    /// The `pointhook` binary.
    pub binary: PathBuf,
    pub kills: usize,
    /// Merchant orders paid, each notified by its payment and its order.
    pub orders: usize,
    /// How long the API takes to answer a read.
    pub api_delay: Duration,
    /// Kills land between these many milliseconds apart.
    pub kill_every_ms: (u64, u64),
    pub seed: u64,
    /// Instances serving at once; more than one needs `postgres`.
    pub instances: usize,
    /// A PostgreSQL database to run on (its URL); SQLite otherwise.
    pub postgres: Option<String>,
}

impl Settings {
    /// How long the notifications are spread over: about as long as the
    /// kills take, so that kills land while requests are in flight too.
    fn send_over(&self) -> Duration {
        Duration::from_millis(self.kills as u64 * (self.kill_every_ms.0 + self.kill_every_ms.1) / 2)
    }
}

#[derive(Debug, Default)]
pub struct Report {
    pub kills: usize,
    pub acknowledged: usize,
    pub refused_or_lost_connection: usize,
    pub released: usize,
    pub events_delivered: usize,
    pub seconds: f64,
}

impl Report {
    pub fn summary(&self) -> String {
        format!(
            "{} kills in {:.1} s: {} notifications acknowledged ({} attempts refused or cut), \
             {} orders released once each, {} events delivered, each with one body",
            self.kills,
            self.seconds,
            self.acknowledged,
            self.refused_or_lost_connection,
            self.released,
            self.events_delivered
        )
    }
}

const TOKEN: &str = "campaign-token";

/// Runs the campaign; panics with the broken invariant if one is.
pub async fn run(s: Settings) -> Report {
    assert!(
        s.instances == 1 || s.postgres.is_some(),
        "a SQLite file has one owner"
    );
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("pointhook.db");
    let (storage, db) = match &s.postgres {
        Some(url) => (format!("url = {url:?}"), TestDb::Postgres(url.clone())),
        None => (
            format!("path = {:?}", db_path.display().to_string()),
            TestDb::Sqlite(db_path.clone()),
        ),
    };
    let merchant = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&merchant)
        .await;

    // The platform: every order paid in full by one approved payment.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    let sandbox = Sandbox::new(
        SandboxSettings {
            time_scale: 1.0,
            state: None,
            accounts: vec![AccountSpec {
                name: "default".into(),
                token: TOKEN.into(),
                notification_url: None,
                webhook_url: None,
                webhook_secret: None,
                email: None,
                groups: None,
                devices: Vec::new(),
            }],
            dispatch_loop: false,
            mail: MailSettings::Spool(dir.path().join("mail")),
            resend_first_signature: false,
            reach: pointhook_sandbox::Reach::Loopback,
        },
        Arc::new(SystemClock),
        api.clone(),
    )
    .await
    .unwrap();
    let stop_sandbox = CancellationToken::new();
    let sandbox_task = tokio::spawn(sandbox.clone().serve(listener, stop_sandbox.clone()));
    for i in 0..s.orders {
        let (payment, order) = (payment_id(i), order_id(i));
        let set = |kind: &str, id: &str, body: Value| {
            sandbox.set_resource("default", kind, id, &body).unwrap();
        };
        set(
            "payment",
            &payment,
            json!({"id": payment.parse::<u64>().unwrap(), "status": "approved",
                   "transaction_amount": 10, "order": {"id": order, "type": "mercadopago"}}),
        );
        set(
            "merchant_order",
            &order,
            json!({"id": order.parse::<u64>().unwrap(), "total_amount": 10,
                   "payments": [{"id": payment.parse::<u64>().unwrap(), "transaction_amount": 10, "status": "approved"}]}),
        );
    }
    sandbox.faults().set_read_delay(s.api_delay);

    // With several instances, the first only takes notifications: the
    // others run the work, as a deployment may split them.
    let configs: Vec<PathBuf> = (0..s.instances)
        .map(|i| {
            let config = dir.path().join(format!("pointhook-{i}.toml"));
            std::fs::write(
                &config,
                format!(
                    "[server]\nlisten = \"127.0.0.1:0\"\ndrain_timeout_secs = 1\n\
                     [storage]\n{storage}\n\
                     [api]\nbase_url = \"{api}\"\ntimeout_secs = 5\nrequests_per_second = 1000\n\
                     [worker]\nenabled = {worker}\nconcurrency = 8\nlease_secs = 3\n\
                     [fulfillment]\nurl = \"{merchant}/events\"\nsecret = \"whsec_cG9pbnRob29rLWNhbXBhaWduLXRlc3Qtc2VjcmV0ISE=\"\ntimeout_secs = 2\n\
                     [[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\n",
                    worker = s.instances == 1 || i > 0,
                    merchant = merchant.uri(),
                ),
            )
            .unwrap();
            config
        })
        .collect();

    // The notifications: each resource's IPN, sent until acknowledged, by
    // a pool of senders (to each instance in turn), while an instance is
    // killed and restarted.
    let first: Vec<Server> = configs
        .iter()
        .map(|c| Server::start(&s.binary, c))
        .collect();
    let addrs = Arc::new(Mutex::new(first.iter().map(|s| s.addr).collect::<Vec<_>>()));
    let turn = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let acked: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let refused = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut queue: Vec<String> = (0..s.orders)
        .flat_map(|i| {
            [
                format!("topic=payment&id={}", payment_id(i)),
                format!("topic=merchant_order&id={}", order_id(i)),
            ]
        })
        .collect();
    let mut rng = Lcg(s.seed);
    for i in (1..queue.len()).rev() {
        queue.swap(i, (rng.next() as usize) % (i + 1));
    }
    let queue = Arc::new(Mutex::new(queue));
    let mut senders = Vec::new();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    const SENDERS: usize = 8;
    let pause = s.send_over() * SENDERS as u32 / (2 * s.orders as u32).max(1);
    for _ in 0..SENDERS {
        let (queue, addrs, turn, acked, refused, http) = (
            queue.clone(),
            addrs.clone(),
            turn.clone(),
            acked.clone(),
            refused.clone(),
            http.clone(),
        );
        senders.push(tokio::spawn(async move {
            loop {
                let Some(query) = queue.lock().unwrap().pop() else {
                    return;
                };
                tokio::time::sleep(pause).await;
                loop {
                    let at = {
                        let addrs = addrs.lock().unwrap();
                        let i = turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        addrs[i % addrs.len()]
                    };
                    let url = format!("http://{at}/notifications?{query}");
                    match http.post(&url).send().await {
                        Ok(res) if res.status() == 200 => {
                            let body: Value = res.json().await.unwrap_or(Value::Null);
                            if let Some(id) = body["delivery_id"].as_i64() {
                                acked.lock().unwrap().push((query.clone(), id));
                                break;
                            }
                        }
                        _ => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            }
        }));
    }
    // The kills go on after the senders finish: the worker and the outbox
    // are still mid-flight then.
    let killer = {
        let (addrs, binary, configs) = (addrs.clone(), s.binary.clone(), configs.clone());
        let (kills, (lo, hi), seed) = (s.kills, s.kill_every_ms, s.seed);
        tokio::task::spawn_blocking(move || {
            let mut rng = Lcg(seed ^ 0x9e37_79b9_7f4a_7c15);
            let mut servers = first;
            for _ in 0..kills {
                let wait = lo + rng.next() % (hi - lo).max(1);
                std::thread::sleep(Duration::from_millis(wait));
                let i = rng.next() as usize % servers.len();
                servers[i].kill();
                servers[i] = Server::start(&binary, &configs[i]);
                addrs.lock().unwrap()[i] = servers[i].addr;
            }
            servers
        })
    };
    for sender in senders {
        sender.await.unwrap();
    }
    let mut servers = killer.await.unwrap();
    let kills = s.kills;

    // Let the last processes finish the work: a positive signal, bounded.
    let expected_events = 2 * s.orders;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (unfinished, delivered) = progress(&db);
        if unfinished == 0 && delivered >= expected_events {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "work left: {unfinished} unfinished jobs, {delivered} of {expected_events} events delivered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for server in &mut servers {
        server.kill();
    }

    let acked = acked.lock().unwrap().clone();
    let report = check(&db, &acked, &merchant, s.orders).await;
    stop_sandbox.cancel();
    let _ = sandbox_task.await;
    Report {
        kills,
        acknowledged: acked.len(),
        refused_or_lost_connection: refused.load(std::sync::atomic::Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
        ..report
    }
}

fn payment_id(i: usize) -> String {
    format!("{}", 7_000_000 + i)
}

fn order_id(i: usize) -> String {
    format!("{}", 9_000_000 + i)
}

const DONE: SqlValue = SqlValue::Int(pointhook::domain::JobState::Done as i64);
const DELIVERED: SqlValue = SqlValue::Int(pointhook::domain::EventState::Delivered as i64);

/// (jobs not done, events delivered)
fn progress(db: &TestDb) -> (i64, usize) {
    // Compared as BIGINT: PostgreSQL keeps states in a SMALLINT.
    let unfinished = db
        .value(
            "SELECT count(*) FROM jobs WHERE CAST(state AS BIGINT) != $1",
            &[DONE],
        )
        .int();
    let delivered = db
        .value(
            "SELECT count(*) FROM events WHERE CAST(state AS BIGINT) = $1",
            &[DELIVERED],
        )
        .int();
    (unfinished, delivered as usize)
}

/// Every invariant, checked on the database and at the merchant.
async fn check(
    db: &TestDb,
    acked: &[(String, i64)],
    merchant: &MockServer,
    orders: usize,
) -> Report {
    // Every acknowledged delivery exists, with its job.
    let with_job: HashSet<i64> = db
        .rows(
            "SELECT d.id FROM deliveries d JOIN jobs j
             ON j.account = d.account AND j.job_key = d.job_key",
            &[],
        )
        .iter()
        .map(|r| r[0].int())
        .collect();
    for (query, id) in acked {
        assert!(
            with_job.contains(id),
            "acknowledged delivery {id} ({query}) is lost or has no job"
        );
    }
    // No job is left running; nothing is dead.
    let (running, _) = progress(db);
    assert_eq!(running, 0, "jobs not done");
    // Every order released exactly once.
    let released: Vec<String> = db
        .rows(
            "SELECT subject FROM events WHERE type = 'order.released'",
            &[],
        )
        .iter()
        .map(|r| r[0].text())
        .collect();
    let distinct: HashSet<&String> = released.iter().collect();
    assert_eq!(distinct.len(), released.len(), "an order released twice");
    assert_eq!(released.len(), orders, "every paid order released");
    // No event id was delivered with two different bodies.
    let mut bodies: HashMap<String, Vec<u8>> = HashMap::new();
    let received = merchant.received_requests().await.unwrap_or_default();
    for r in &received {
        let id = r.headers["webhook-id"].to_str().unwrap().to_string();
        if let Some(earlier) = bodies.get(&id) {
            assert_eq!(earlier, &r.body, "event {id} delivered with two bodies");
        } else {
            bodies.insert(id, r.body.clone());
        }
    }
    let stored = db.value("SELECT count(*) FROM events", &[]).int();
    assert_eq!(
        bodies.len() as i64,
        stored,
        "every event reached the merchant"
    );
    Report {
        released: released.len(),
        events_delivered: bodies.len(),
        ..Report::default()
    }
}

/// The real binary, serving; killed with SIGKILL.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(binary: &Path, config: &Path) -> Server {
        let mut child = Command::new(binary)
            .args(["serve", "--log-format", "json", "--config"])
            .arg(config)
            .env("RUST_LOG", "warn,pointhook=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && v["message"] == "pointhook serving"
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(v["listen"].as_str().unwrap_or_default().to_string());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("pointhook reports its address")
            .parse()
            .unwrap();
        Server { child, addr }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A campaign that fails leaves no server behind.
impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A small deterministic generator: the same seed, the same campaign.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}
