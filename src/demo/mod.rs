//! `pointhook demo`: the sandbox, pointhook and a small merchant endpoint
//! wired together on loopback with temporary state; runs the scenarios of
//! `fixtures/scenarios/`, says what happens in plain words, then keeps
//! serving and prints the curl lines to try it by hand. Ctrl-C stops all.

mod scenario;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use pointhook::clock::SystemClock;
use pointhook::config::Config;
use pointhook::store;
use pointhook::{App, Options};
use pointhook_common::response;
use pointhook_common::serve::{Handler, Limits, serve_with};
use pointhook_sandbox::MailSettings;
use pointhook_sandbox::{AccountSpec, Sandbox, SandboxSettings};
use scenario::{Expect, Scenario, interpolate};

const TOKEN: &str = "TEST-demo-token";
const DEVICE: &str = "DEMO-DEVICE-1";
/// Fast enough that a 15-minute retry takes under 2 seconds.
const TIME_SCALE: f64 = 0.002;
const EXPECT_WITHIN: Duration = Duration::from_secs(30);

/// Runs the demo; `Ok(false)` when a scenario did not turn out as expected.
pub async fn run(exit_after_scenarios: bool, shutdown: CancellationToken) -> anyhow::Result<bool> {
    let scenarios = scenario::parse_all().context("a scenario file is malformed")?;
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let bind = || tokio::net::TcpListener::bind("127.0.0.1:0");
    let (ph_listener, sb_listener, merchant_listener) =
        (bind().await?, bind().await?, bind().await?);
    let ph_addr = ph_listener.local_addr()?;
    let sb_url = format!("http://{}", sb_listener.local_addr()?);
    let notifications = format!("http://{ph_addr}/notifications");

    let merchant = Arc::new(Merchant::default());
    let merchant_addr = merchant_listener.local_addr()?;
    let quiet = Limits {
        read_timeout: Duration::from_secs(10),
        max_connections: 64,
        max_connections_per_ip: 0,
        drain_timeout: Duration::from_secs(2),
    };
    let merchant_task = tokio::spawn({
        let (m, s, stop) = (merchant.clone(), quiet.clone(), shutdown.clone());
        async move { serve_with(merchant_listener, &s, m, stop).await }
    });

    let spool = dir.path().join("mail");
    let sandbox = Sandbox::new(
        SandboxSettings {
            time_scale: TIME_SCALE,
            state: None,
            accounts: vec![AccountSpec {
                name: "default".into(),
                token: TOKEN.into(),
                notification_url: Some(notifications.clone()),
                webhook_url: Some(notifications.clone()),
                webhook_secret: None,
                email: Some("merchant@shop.example".into()),
                groups: None,
                devices: vec![DEVICE.into()],
            }],
            dispatch_loop: true,
            mail: MailSettings::Spool(spool.clone()),
            resend_first_signature: false,
            reach: pointhook_sandbox::Reach::Loopback,
        },
        Arc::new(SystemClock),
        sb_url.clone(),
    )
    .await?;
    let sandbox_task = tokio::spawn(sandbox.clone().serve(sb_listener, shutdown.clone()));

    let config_path = dir.path().join("pointhook.toml");
    let toml = format!(
        "[server]\nlisten = \"{ph_addr}\"\n[storage]\npath = {db:?}\n[api]\nbase_url = \"{sb_url}\"\n\
         [[accounts]]\nname = \"default\"\naccess_token = \"{TOKEN}\"\n\
         [fulfillment]\nurl = \"http://{merchant_addr}/events\"\nsecret = \"whsec_ZGVtby1zZWNyZXQ=\"\n",
        db = dir.path().join("pointhook.db").display().to_string()
    );
    std::fs::write(&config_path, &toml).context("cannot write the demo configuration")?;
    let config = Config::from_toml(&toml, Vec::new())?;
    let app = App::new(config, ph_listener, Options::default()).await?;
    let store = app.store().clone();
    let app_task = tokio::spawn(app.run(shutdown.clone()));

    println!("pointhook demo");
    println!("  pointhook receives at {notifications}");
    println!("  the sandbox (the platform's stand-in) serves {sb_url}, time scale {TIME_SCALE}");
    println!("  the merchant's endpoint listens at http://{merchant_addr}/events");
    println!();

    let runner = Runner {
        http: reqwest::Client::new(),
        sandbox: sb_url.clone(),
        merchant: merchant.clone(),
        store,
        spool,
    };
    let mut passed = 0;
    for s in &scenarios {
        match runner.run(s).await {
            Ok(()) => {
                passed += 1;
                println!("  => passed\n");
            }
            Err(e) => println!("  => FAILED: {e:#}\n"),
        }
    }
    let all = passed == scenarios.len();
    println!("{passed} of {} scenarios passed", scenarios.len());

    if !exit_after_scenarios && !shutdown.is_cancelled() {
        println!();
        println!("Still serving. Try it yourself:");
        println!(
            "  curl -s -X POST {sb_url}/sandbox/merchant_orders -H 'Authorization: Bearer {TOKEN}' -H 'content-type: application/json' -d '{{\"total_amount\": 100}}'"
        );
        println!(
            "  curl -s -X POST {sb_url}/sandbox/merchant_orders/ORDER_ID/payments -H 'Authorization: Bearer {TOKEN}' -H 'content-type: application/json' -d '{{\"amount\": 100}}'"
        );
        println!("  curl -s -X POST '{notifications}?topic=payment&id=123456789'");
        println!("  pointhook events list --config {}", config_path.display());
        println!("  pointhook sandbox log --url {sb_url} --token {TOKEN}");
        println!("Ctrl-C stops both.");
        shutdown.cancelled().await;
    }
    shutdown.cancel();
    let _ = tokio::join!(app_task, sandbox_task, merchant_task);
    drop(dir);
    Ok(all)
}

struct Runner {
    http: reqwest::Client,
    sandbox: String,
    merchant: Arc<Merchant>,
    store: store::Store,
    spool: PathBuf,
}

impl Runner {
    async fn run(&self, s: &Scenario) -> anyhow::Result<()> {
        println!("Scenario: {}", s.name);
        let mut saved: HashMap<String, Value> = HashMap::new();
        for (n, step) in s.steps.iter().enumerate() {
            println!("  - {}", step.say);
            if let Some(n) = step.merchant_fails_next {
                self.merchant.fail_next.store(n, Ordering::SeqCst);
            }
            if let Some(minutes) = step.wait_scaled_minutes {
                tokio::time::sleep(Duration::from_secs(minutes * 60).mul_f64(TIME_SCALE)).await;
            }
            let Some(call) = &step.call else { continue };
            let call = interpolate(&Value::String(call.clone()), &saved);
            let call = call.as_str().unwrap_or_default();
            let (method, path) = call.split_once(' ').context("a call is METHOD /path")?;
            let method: reqwest::Method = method.parse().context("a call's method")?;
            let body = interpolate(step.body.as_ref().unwrap_or(&Value::Null), &saved);
            let res = self
                .http
                .request(method, format!("{}{path}", self.sandbox))
                .bearer_auth(TOKEN)
                // The Orders API asks every change for one; one per step.
                .header(
                    "x-idempotency-key",
                    format!("demo-{}-{n}-{}", std::process::id(), s.name.len()),
                )
                .json(&body)
                .send()
                .await
                .with_context(|| format!("{call}: the sandbox did not answer"))?;
            let status = res.status();
            let answer: Value = res.json().await.unwrap_or(Value::Null);
            anyhow::ensure!(status.is_success(), "{call} answered {status}: {answer}");
            if let Some(name) = &step.save_as {
                saved.insert(name.clone(), answer);
            }
        }
        for e in &s.expect {
            let e = Expect {
                // Events carry ids and amounts as strings: an id taken from
                // an earlier answer (a number there) is compared as text.
                matching: e.matching.as_ref().map(|m| {
                    interpolate(&Value::Object(m.clone()), &saved)
                        .as_object()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| match v {
                            Value::Number(n) => (k, Value::String(n.to_string())),
                            v => (k, v),
                        })
                        .collect()
                }),
                ..e.clone()
            };
            self.wait_for(&e).await?;
        }
        Ok(())
    }

    async fn wait_for(&self, e: &Expect) -> anyhow::Result<()> {
        let deadline = Instant::now() + EXPECT_WITHIN;
        loop {
            if let Some(found) = self.check(e).await? {
                println!("  ✓ {found}");
                return Ok(());
            }
            if Instant::now() > deadline {
                anyhow::bail!("nothing matched {e:?} within {} s", EXPECT_WITHIN.as_secs());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn check(&self, e: &Expect) -> anyhow::Result<Option<String>> {
        if let Some(text) = &e.mail {
            for entry in std::fs::read_dir(&self.spool)
                .into_iter()
                .flatten()
                .flatten()
            {
                let mail = std::fs::read_to_string(entry.path()).unwrap_or_default();
                if mail.contains(text.as_str()) {
                    let subject = mail
                        .lines()
                        .find_map(|l| l.strip_prefix("Subject: "))
                        .unwrap_or("")
                        .to_string();
                    return Ok(Some(format!("an e-mail in the spool: \"{subject}\"")));
                }
            }
            return Ok(None);
        }
        let Some(kind) = &e.event else {
            return Ok(None);
        };
        let events = self
            .store
            .list_events(Some(kind.clone()), None, store::MAX_LIMIT)
            .await?;
        for summary in events {
            let Some(detail) = self.store.get_event(summary.id.clone()).await? else {
                continue;
            };
            let data = &detail.body["data"];
            let matches = e
                .matching
                .as_ref()
                .is_none_or(|m| m.iter().all(|(k, v)| &data[k] == v));
            if !matches {
                continue;
            }
            if let Some(failures) = e.delivered_after_failures {
                let answers = self.merchant.answers(&summary.id);
                let refused = answers.iter().filter(|s| **s >= 500).count() as u32;
                if refused < failures || !answers.iter().any(|s| *s < 300) {
                    continue;
                }
                return Ok(Some(format!(
                    "{kind} {} delivered after {refused} refusal(s), same id every time",
                    summary.id
                )));
            }
            return Ok(Some(format!("{kind} {}", summary.id)));
        }
        Ok(None)
    }
}

/// The merchant's endpoint: says what it receives; can refuse the next N.
#[derive(Default)]
struct Merchant {
    fail_next: AtomicU32,
    answers: Mutex<HashMap<String, Vec<u16>>>,
}

impl Merchant {
    fn answers(&self, event_id: &str) -> Vec<u16> {
        self.answers
            .lock()
            .map(|a| a.get(event_id).cloned().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Handler for Merchant {
    fn handle(
        &self,
        req: Request<Incoming>,
        _peer: SocketAddr,
    ) -> impl std::future::Future<Output = Response<response::Body>> + Send {
        let id = req
            .headers()
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let refuse = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let status = if refuse {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        if let Ok(mut a) = self.answers.lock() {
            a.entry(id.clone()).or_default().push(status.as_u16());
        }
        async move {
            let body = req
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let kind = event["type"].as_str().unwrap_or("?");
            if refuse {
                println!(
                    "    merchant endpoint: answered 503 to {kind} {id} (pointhook will retry)"
                );
            } else {
                println!("    merchant endpoint: received {kind} {id}");
            }
            response::json(status, "{}")
        }
    }
}
