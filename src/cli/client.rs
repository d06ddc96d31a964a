//! Client commands that speak the platform's API shape, so they work against
//! the sandbox and, given a base URL and a real token, against the platform:
//! `integrator show|enable-email`, `payments create`, and `notify`, which
//! sends one notification shaped like the platform's to any receiver.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use pointhook::api::wire::PlatformError;
use pointhook_sandbox::ops::dispatch::{FIRST_WINDOW, RETRY_OFFSETS, RETRY_WINDOW};
use pointhook_sandbox::ops::shapes;

/// Where the API is and whose token to use.
#[derive(Debug, Clone, Args)]
pub struct ApiArgs {
    /// The platform API (the sandbox by default).
    #[arg(
        long,
        env = "POINTHOOK_API_BASE_URL",
        default_value = "http://127.0.0.1:8090"
    )]
    base_url: String,
    /// The account's access token.
    #[arg(long, env = "POINTHOOK_ACCESS_TOKEN", hide_env_values = true)]
    access_token: String,
}

#[derive(Debug, Subcommand)]
pub enum Integrator {
    /// The integrator configuration of the token's account.
    Show {
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Turn on device events by e-mail (they start 30 minutes later).
    EnableEmail {
        #[command(flatten)]
        api: ApiArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum Payments {
    /// Create a payment (`POST /v1/payments`).
    Create(CreatePayment),
}

#[derive(Debug, Args)]
pub struct CreatePayment {
    #[command(flatten)]
    api: ApiArgs,
    /// transaction_amount, e.g. 100.50.
    #[arg(long, allow_hyphen_values = true)]
    amount: String,
    /// The card token.
    #[arg(long)]
    token: String,
    #[arg(long, default_value = "")]
    description: String,
    #[arg(long, default_value_t = 1)]
    installments: u32,
    #[arg(long, default_value = "visa")]
    payment_method: String,
    #[arg(long)]
    issuer: Option<String>,
    #[arg(long)]
    notification_url: Option<String>,
    #[arg(long)]
    payer_email: String,
    #[arg(long, default_value = "DNI")]
    payer_id_type: String,
    #[arg(long)]
    payer_id_number: String,
}

#[derive(Debug, Args)]
pub struct Notify {
    /// The receiver.
    #[arg(long)]
    url: String,
    /// payment, merchant_order, chargebacks, point_integration_ipn, …
    #[arg(long, required_unless_present = "fraud_alert")]
    topic: Option<String>,
    #[arg(long, required_unless_present = "fraud_alert")]
    id: Option<String>,
    /// A fraud alert instead: the IPN `delivery_cancellation` (retried on
    /// the schedule with --schedule), or with --webhook the
    /// `stop_delivery_op_wh` webhook (never retried, as the platform does).
    #[arg(long, conflicts_with_all = ["topic", "id"], requires_all = ["order", "payment"])]
    fraud_alert: bool,
    /// The fraud alert's merchant order.
    #[arg(long, requires = "fraud_alert")]
    order: Option<String>,
    /// The fraud alert's payment.
    #[arg(long, requires = "fraud_alert")]
    payment: Option<String>,
    /// The webhook form (`?data.id=&type=` and a JSON body) instead of IPN.
    #[arg(long)]
    webhook: bool,
    /// Sign the webhook (`x-signature`) with this secret.
    #[arg(long, requires = "webhook")]
    secret: Option<String>,
    /// Retry on the platform's schedule until a 200 or 201.
    #[arg(long)]
    schedule: bool,
    /// Scale the schedule (0.01 makes 15 minutes 9 seconds).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
}

/// An id as the platform writes it: a number when it is one.
fn id_json(text: &str) -> Value {
    text.parse::<u64>()
        .map_or_else(|_| Value::from(text), Value::from)
}

fn client() -> anyhow::Result<reqwest::Client> {
    pointhook_common::tls::install_default_provider();
    Ok(reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The body on success, or one line with the platform's error.
async fn send(req: reqwest::RequestBuilder, what: &str) -> anyhow::Result<Value> {
    let res = req
        .send()
        .await
        .with_context(|| format!("{what}: cannot reach the API"))?;
    let status = res.status();
    let body = res
        .bytes()
        .await
        .with_context(|| format!("{what}: the answer broke off"))?;
    if status.is_success() {
        return serde_json::from_slice(&body)
            .with_context(|| format!("{what}: the answer is not JSON"));
    }
    let error: PlatformError = serde_json::from_slice(&body).unwrap_or_else(|_| PlatformError {
        message: Some(String::from_utf8_lossy(&body).chars().take(200).collect()),
        ..Default::default()
    });
    bail!("{what}: the platform answered {status}: {error}")
}

pub fn integrator(cmd: Integrator) -> anyhow::Result<()> {
    runtime()?.block_on(async {
        let http = client()?;
        let (api, patch) = match &cmd {
            Integrator::Show { api } => (api, false),
            Integrator::EnableEmail { api } => (api, true),
        };
        let url = format!(
            "{}/point/integration-api/integrator",
            api.base_url.trim_end_matches('/')
        );
        let req = if patch {
            http.patch(&url)
                .json(&json!({"event_channel_devices": ["email"]}))
        } else {
            http.get(&url)
        };
        let config = send(req.bearer_auth(&api.access_token), "integrator").await?;
        for key in [
            "id",
            "created_at",
            "updated_at",
            "notification_url_enabled",
            "event_channel_devices",
        ] {
            println!(
                "{key:<26}{}",
                pointhook_common::text::printable(&config[key].to_string())
            );
        }
        if patch {
            let updated = config["updated_at"]
                .as_str()
                .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
                .unwrap_or_else(SystemTime::now);
            let start = updated + Duration::from_secs(30 * 60);
            println!(
                "device e-mails start at {} (30 minutes after activation)",
                humantime::format_rfc3339_seconds(start)
            );
        }
        Ok(())
    })
}

pub fn payments(cmd: Payments) -> anyhow::Result<()> {
    let Payments::Create(p) = cmd;
    let amount: Value = serde_json::from_str(&p.amount)
        .ok()
        .filter(Value::is_number)
        .with_context(|| format!("--amount {:?} is not a number", p.amount))?;
    let mut body = json!({
        "transaction_amount": amount,
        "token": p.token,
        "description": p.description,
        "installments": p.installments,
        "payment_method_id": p.payment_method,
        "payer": {"email": p.payer_email, "identification": {"type": p.payer_id_type, "number": p.payer_id_number}},
    });
    if let Some(issuer) = &p.issuer {
        body["issuer_id"] = issuer
            .parse::<u64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(issuer.as_str()));
    }
    if let Some(url) = &p.notification_url {
        body["notification_url"] = json!(url);
    }
    runtime()?.block_on(async {
        let url = format!("{}/v1/payments", p.api.base_url.trim_end_matches('/'));
        let req = client()?
            .post(url)
            .bearer_auth(&p.api.access_token)
            .header("accept", "application/json")
            .header("x-idempotency-key", shapes::random_hex(16))
            .json(&body);
        let payment = send(req, "payment").await?;
        let field = |k: &str| {
            pointhook_common::text::printable(payment[k].as_str().unwrap_or("?")).into_owned()
        };
        println!(
            "id             {}",
            pointhook_common::text::printable(&payment["id"].to_string())
        );
        println!("status         {}", field("status"));
        println!("status_detail  {}", field("status_detail"));
        Ok(())
    })
}

pub fn notify(n: Notify) -> anyhow::Result<()> {
    anyhow::ensure!(n.time_scale > 0.0, "--time-scale must be positive");
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH)?;
    let now_iso = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let out = match (&n.order, &n.payment, &n.topic, &n.id) {
        (Some(order), Some(payment), _, _) => {
            let (order, payment) = (id_json(order), id_json(payment));
            let description = "Fraud risk detected: do not deliver";
            if n.webhook {
                shapes::fraud_alert_webhook(
                    &n.url,
                    &order,
                    &payment,
                    description,
                    n.secret.as_deref(),
                    &now_iso,
                    now.as_secs(),
                )
            } else {
                shapes::fraud_alert(&n.url, &order, &payment, description)
            }
        }
        (_, _, Some(topic), Some(id)) if n.webhook => shapes::webhook(
            &n.url,
            topic,
            id,
            now.as_millis() as i64,
            1,
            "updated",
            &now_iso,
            n.secret.as_deref(),
            now.as_secs(),
        ),
        (_, _, Some(topic), Some(id)) => shapes::ipn(&n.url, topic, id, &format!("/{topic}/{id}")),
        _ => bail!("give --topic and --id, or --fraud-alert with --order and --payment"),
    };
    // The fraud alert's webhook is never sent twice.
    let schedule = n.schedule && out.topic != shapes::FRAUD_WEBHOOK;
    runtime()?.block_on(async {
        let http = client()?;
        let started = Instant::now();
        let offsets: Vec<Duration> = std::iter::once(Duration::ZERO)
            .chain(RETRY_OFFSETS)
            .collect();
        let attempts = if schedule { offsets.len() } else { 1 };
        for (i, offset) in offsets.iter().take(attempts).enumerate() {
            let at = offset.mul_f64(n.time_scale);
            if let Some(wait) = at.checked_sub(started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
            let window = if i == 0 { FIRST_WINDOW } else { RETRY_WINDOW }
                .mul_f64(n.time_scale)
                .max(Duration::from_millis(10));
            let mut req = http
                .post(&out.url)
                .timeout(window)
                .body(out.body.to_string());
            for (k, v) in &out.headers {
                req = req.header(k.as_str(), v.as_str());
            }
            let sent = Instant::now();
            let (status, text) = match req.send().await {
                Ok(r) => {
                    let status = r.status().as_u16();
                    (Some(status), r.text().await.unwrap_or_default())
                }
                Err(e) if e.is_timeout() => (None, "no answer within the window".into()),
                Err(e) => (None, format!("cannot connect: {e}")),
            };
            let answer = status.map_or("no answer".to_string(), |s| s.to_string());
            println!(
                "attempt {} POST {} -> {answer} in {} ms {}",
                i + 1,
                pointhook_common::text::printable(&out.url),
                sent.elapsed().as_millis(),
                pointhook_common::text::printable(&text.chars().take(200).collect::<String>())
            );
            if matches!(status, Some(200 | 201)) {
                return Ok(());
            }
        }
        bail!("not acknowledged (only 200 or 201 counts)")
    })
}
