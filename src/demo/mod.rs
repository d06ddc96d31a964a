//! `pointhook demo`: the sandbox, pointhook and a small merchant endpoint
//! (`merchant`) wired together on loopback with temporary state; runs the
//! scenarios (`scenario`: every bundled trigger, then the demo's own of
//! `fixtures/scenarios/`), says what happens in plain words and checks what
//! pointhook decided (`check`), then keeps serving and prints the lines to
//! try it by hand. The operator console serves too, with a one-time
//! operator whose random password is printed; a second destination
//! ("warehouse") is down for good, and once the scenarios ran the demo says
//! what they left for a person (a held review, an order at risk, the
//! failing destination) and where to click. Ctrl-C stops all.

mod check;
mod merchant;
mod scenario;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use check::Checker;
use merchant::Merchant;
use pointhook::config::Config;
use pointhook::{App, Options};
use pointhook_common::clock::SystemClock;
use pointhook_common::serve::{Limits, serve_with};
use pointhook_sandbox::{AccountSpec, MailSettings, Reach, Sandbox, SandboxSettings};

const TOKEN: &str = "TEST-demo-token";
/// Signs the sandbox's webhooks, so its fraud-alert webhook is authenticated
/// (an IPN alert alone would be held for a person).
const WEBHOOK_SECRET: &str = "demo-webhook-secret";
/// Fast enough that a 15-minute retry takes under 2 seconds.
const TIME_SCALE: f64 = 0.002;

/// The console's one-time operator.
const OPERATOR: &str = "demo";

/// 32 random hex digits: the admin token, the operator's password.
fn random_hex() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// How to run this binary again from where the demo was started (a
/// checkout has no `pointhook` on the PATH): its path, relative when it is
/// below the current directory.
fn this_binary() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "cargo run --release --".into();
    };
    match std::env::current_dir().map(|cwd| exe.strip_prefix(cwd).map(|p| p.to_path_buf())) {
        Ok(Ok(relative)) => format!("./{}", relative.display()),
        _ => exe.display().to_string(),
    }
}

/// Runs the demo; `Ok(false)` when a scenario did not turn out as expected.
pub async fn run(exit_after_scenarios: bool, shutdown: CancellationToken) -> anyhow::Result<bool> {
    let scenarios = scenario::all()?;
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let bind = || tokio::net::TcpListener::bind("127.0.0.1:0");
    let (ph_listener, sb_listener, merchant_listener, admin_listener) =
        (bind().await?, bind().await?, bind().await?, bind().await?);
    let ph_addr = ph_listener.local_addr()?;
    let console = format!("http://{}/", admin_listener.local_addr()?);
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
                webhook_secret: Some(WEBHOOK_SECRET.into()),
                email: Some("merchant@shop.example".into()),
                groups: None,
                devices: Vec::new(),
            }],
            dispatch_loop: true,
            mail: MailSettings::Spool(spool.clone()),
            resend_first_signature: false,
            reach: Reach::Loopback,
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
         webhook_secret = \"{WEBHOOK_SECRET}\"\n\
         [fulfillment]\nurl = \"http://{merchant_addr}/events\"\nsecret = \"whsec_cG9pbnRob29rLWRlbW8tbWVyY2hhbnQtc2VjcmV0ISE=\"\n\
         [[destinations]]\nname = \"warehouse\"\nurl = \"http://{merchant_addr}{warehouse}\"\nunsigned = true\n\
         types = [\"order.released\"]\n\
         [admin]\nlisten = \"{admin}\"\ntoken = \"{token}\"\n",
        db = dir.path().join("pointhook.db").display().to_string(),
        admin = admin_listener.local_addr()?,
        warehouse = merchant::WAREHOUSE,
        token = random_hex(),
    );
    std::fs::write(&config_path, &toml).context("cannot write the demo configuration")?;
    let config = Config::from_toml(&toml, Vec::new())?;
    let options = Options {
        admin_listener: Some(admin_listener),
        ..Options::default()
    };
    let app = App::new(config, ph_listener, options).await?;
    let store = app.store().clone();
    let password = random_hex();
    let hash = {
        let password = password.clone();
        tokio::task::spawn_blocking(move || pointhook::operators::hash(&password)).await??
    };
    store
        .add_operator(OPERATOR.into(), hash, pointhook::store::unix_ms_now())
        .await
        .context("cannot add the demo's operator")?;
    let app_task = tokio::spawn(app.run(shutdown.clone()));

    println!("pointhook demo");
    println!("  pointhook receives at {notifications}");
    println!("  the sandbox (the platform's stand-in) serves {sb_url}, time scale {TIME_SCALE}");
    println!("  the merchant's endpoint listens at http://{merchant_addr}/events");
    println!(
        "  the operator console: {console} (sign in as {OPERATOR}, password {password}; for this run only)"
    );
    println!();

    let checker = Checker::new(&sb_url, TOKEN, merchant.clone(), store.clone(), spool);
    let mut passed = 0;
    for s in &scenarios {
        match checker.run(s).await {
            Ok(()) => {
                passed += 1;
                println!("  => passed\n");
            }
            Err(e) => println!("  => FAILED: {e:#}\n"),
        }
    }
    let all = passed == scenarios.len();
    println!("{passed} of {} scenarios passed", scenarios.len());
    println!();
    needs_you(&store, &console).await?;

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
        let me = this_binary();
        println!("  export POINTHOOK_CONFIG={}", config_path.display());
        println!("  {me} events list");
        println!("  {me} jobs list --state dead");
        println!("  {me} fraud list");
        println!("  {me} sandbox log --url {sb_url} --token {TOKEN}");
        println!("  open {console} and sign in as {OPERATOR}");
        println!("Ctrl-C stops them all.");
        shutdown.cancelled().await;
    }
    shutdown.cancel();
    let _ = tokio::join!(app_task, sandbox_task, merchant_task);
    drop(dir);
    Ok(all)
}

/// What the scenarios left for a person, and where to click for each.
async fn needs_you(store: &pointhook::store::Store, console: &str) -> anyhow::Result<()> {
    use pointhook::domain::Review;
    use pointhook::store::console_views::OrderList;
    let console = console.trim_end_matches('/');
    println!("What needs a person now (the console's inbox, {console}/):");
    for r in store.reviews(Some(Review::Held), None, 10).await? {
        println!(
            "  - fraud review {} held: an alert nobody signed blocked merchant order {}; \
             confirm or dismiss it at {console}/fraud-reviews/{}",
            r.id,
            r.merchant_order_id.as_deref().unwrap_or("unknown"),
            r.id
        );
    }
    for o in store.order_list(OrderList::AtRisk, None, 10).await?.rows {
        println!(
            "  - merchant order {} at risk: released, then charged back; its timeline at \
             {console}/orders/{}?account={}&kind=merchant_order",
            o.order_id, o.order_id, o.account
        );
    }
    let now = pointhook::store::unix_ms_now();
    for d in store.destinations(now).await? {
        if d.failing_since.is_some() || d.state == "disabled" {
            println!(
                "  - destination {} failing (its endpoint answers 503): {console}/destinations/{}",
                d.name, d.name
            );
        }
    }
    Ok(())
}
