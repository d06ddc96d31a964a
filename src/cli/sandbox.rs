//! `pointhook sandbox`: run the emulator; `pointhook sandbox log`: print
//! its delivery log; `pointhook sandbox trigger`: `trigger`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use clap::{Args, Subcommand};
use tokio_util::sync::CancellationToken;

use pointhook_common::clock::{Clock, ManualClock, SystemClock};
use pointhook_sandbox::MailSettings;
use pointhook_sandbox::quirks::QuirkSet;
use pointhook_sandbox::{AccountSpec, Reach, Sandbox, SandboxFile, SandboxSettings};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SandboxArgs {
    #[command(subcommand)]
    cmd: Option<SandboxCmd>,
    /// Where to listen [default: 127.0.0.1:8090].
    #[arg(long, env = "POINTHOOK_SANDBOX_LISTEN")]
    listen: Option<SocketAddr>,
    /// 1.0 is real time; 0.01 makes 15 minutes 9 seconds [default: 1.0].
    #[arg(long)]
    time_scale: Option<f64>,
    /// An access token to accept (repeatable); without one, one is made up
    /// and printed.
    #[arg(long = "token")]
    tokens: Vec<String>,
    /// The account's IPN URL, as set in the dashboard [default: where
    /// `pointhook serve` listens by default,
    /// http://127.0.0.1:8080/notifications].
    #[arg(long, env = "POINTHOOK_SANDBOX_NOTIFICATION_URL")]
    notification_url: Option<String>,
    /// Where payment-intent webhooks go; activates Point Integrations events.
    #[arg(long)]
    webhook_url: Option<String>,
    /// Sign webhooks with this secret (x-signature).
    #[arg(long)]
    webhook_secret: Option<String>,
    /// Keep state in this SQLite file (in memory otherwise).
    #[arg(long)]
    state: Option<PathBuf>,
    /// Write device e-mails here as .eml files [default: sandbox-mail].
    #[arg(long)]
    mail_spool: Option<PathBuf>,
    /// Send device e-mails through this SMTP server (HOST:PORT) instead.
    #[arg(long)]
    smtp: Option<String>,
    /// Retry webhooks with their first signature instead of signing each
    /// attempt anew (to test a receiver's timestamp tolerance).
    #[arg(long)]
    resend_first_signature: bool,
    /// `manual`: the sandbox's clock starts at the current time and moves
    /// only through `POST /sandbox/clock/advance`.
    #[arg(long, value_enum, default_value_t = ClockKind::System)]
    clock: ClockKind,
    /// Switch on one of the platform's quirks for every account
    /// (repeatable): eventual_consistency_ms=MS, twins, out_of_order,
    /// duplicates, unsigned (each takes =false too).
    #[arg(long = "quirk", value_name = "NAME[=VALUE]")]
    quirks: Vec<String>,
    /// Allow a listen address other than loopback, any `Host`, and
    /// notification URLs other than loopback (the sandbox accepts made-up
    /// tokens and serves payments: keep it off shared networks).
    #[arg(long)]
    public: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ClockKind {
    /// The operating system's clock.
    System,
    /// A clock testers advance.
    Manual,
}

#[derive(Debug, Subcommand)]
enum SandboxCmd {
    /// Run a fixture (a bundled flow by name, or a file) against a running
    /// sandbox; --list names the bundled ones.
    Trigger(super::trigger::TriggerArgs),
    /// Print every dispatch and its attempts.
    Log {
        /// The sandbox to ask.
        #[arg(long, default_value = "http://127.0.0.1:8090")]
        url: String,
        /// An account's access token (the control API takes one).
        #[arg(long, env = "POINTHOOK_SANDBOX_TOKEN")]
        token: String,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: SandboxArgs, config: Option<&Path>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match args.cmd {
        Some(SandboxCmd::Log { url, token, json }) => {
            return runtime.block_on(print_log(&url, &token, json));
        }
        Some(SandboxCmd::Trigger(t)) => return runtime.block_on(super::trigger::run(t)),
        None => {}
    }
    let file: SandboxFile = match config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            toml::from_str(&text)
                .with_context(|| format!("{} is not a sandbox configuration", path.display()))?
        }
        None => SandboxFile::default(),
    };
    let listen: SocketAddr = args
        .listen
        .or(file.listen)
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8090)));
    anyhow::ensure!(
        listen.ip().is_loopback() || args.public,
        "the sandbox listens on loopback only ({listen} is not): add --public to serve it elsewhere"
    );
    let mut accounts = file.accounts;
    let mut made_up = None;
    // Accounts made from the flags notify pointhook's default address unless
    // told otherwise: the platform would send nothing without a URL set in
    // its dashboard, and a newcomer's first `serve` listens there.
    let notification_url = args
        .notification_url
        .clone()
        .unwrap_or_else(default_notification_url);
    if accounts.is_empty() || !args.tokens.is_empty() {
        let mut tokens = args.tokens.clone();
        if tokens.is_empty() {
            let t = format!("TEST-{}", pointhook_sandbox::random_token());
            made_up = Some(t.clone());
            tokens.push(t);
        }
        for (i, token) in tokens.into_iter().enumerate() {
            accounts.push(AccountSpec {
                name: if i == 0 {
                    "default".into()
                } else {
                    format!("default-{}", i + 1)
                },
                token,
                notification_url: Some(notification_url.clone()),
                webhook_url: args.webhook_url.clone(),
                webhook_secret: args.webhook_secret.clone(),
                email: None,
                groups: None,
                devices: Vec::new(),
            });
        }
    }
    let mail = match &args.smtp {
        Some(server) => {
            let (host, port) = server
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.to_string(), p.parse().ok()?)))
                .with_context(|| format!("--smtp {server:?}: expected HOST:PORT"))?;
            MailSettings::Smtp { host, port }
        }
        None => MailSettings::Spool(
            args.mail_spool
                .clone()
                .unwrap_or_else(|| PathBuf::from("sandbox-mail")),
        ),
    };
    let mut quirks = QuirkSet::default();
    for flag in &args.quirks {
        quirks = quirks.parse_flag(flag).map_err(anyhow::Error::msg)?;
    }
    let clock: Arc<dyn Clock> = match args.clock {
        ClockKind::System => Arc::new(SystemClock),
        ClockKind::Manual => Arc::new(ManualClock::new(SystemTime::now())),
    };
    let settings = SandboxSettings {
        time_scale: args.time_scale.or(file.time_scale).unwrap_or(1.0),
        state: args.state.or(file.state),
        accounts,
        dispatch_loop: true,
        mail,
        resend_first_signature: args.resend_first_signature,
        reach: if args.public {
            Reach::Public
        } else {
            Reach::Loopback
        },
    };
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        let addr = listener.local_addr()?;
        let sandbox = Sandbox::new(settings.clone(), clock, format!("http://{addr}")).await?;
        if quirks != QuirkSet::default() {
            sandbox.set_quirks(None, quirks).await?;
        }
        println!(
            "sandbox listening on http://{addr} (time scale {}{})",
            settings.time_scale,
            if args.clock == ClockKind::Manual {
                "; manual clock: POST /sandbox/clock/advance"
            } else {
                ""
            }
        );
        if let Some(t) = made_up {
            println!("access token: {t}");
        }
        for a in &settings.accounts {
            println!(
                "account {}: notifications to {}",
                a.name,
                a.notification_url
                    .as_deref()
                    .unwrap_or("(no notification_url)")
            );
        }
        let shutdown = CancellationToken::new();
        tokio::spawn(super::cancel_on_signal(shutdown.clone())?);
        sandbox.serve(listener, shutdown).await;
        Ok(())
    })
}

/// Where `pointhook serve` takes notifications with no configuration of
/// its own: its default listen address and path.
fn default_notification_url() -> String {
    let server = pointhook::config::ServerConfig::default();
    format!("http://{}{}", server.listen, server.path)
}

async fn print_log(url: &str, token: &str, json: bool) -> anyhow::Result<()> {
    pointhook_common::tls::install_default_provider();
    let res = reqwest::Client::new()
        .get(format!("{}/sandbox/deliveries", url.trim_end_matches('/')))
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| format!("cannot reach the sandbox at {url}"))?;
    anyhow::ensure!(
        res.status().is_success(),
        "the sandbox answered {} (is the token one of its accounts'?)",
        res.status()
    );
    let log: serde_json::Value = res
        .json()
        .await
        .context("the sandbox answered something else than its log")?;
    if json {
        return super::render::say(&format!("{}\n", super::render::json(&log)));
    }
    for d in log.as_array().into_iter().flatten() {
        println!(
            "#{} {} {} {} {} -> {} [{}]",
            d["id"],
            text(&d["first_at"]),
            text(&d["form"]),
            text(&d["topic"]),
            text(&d["resource_id"]),
            text(&d["url"]),
            text(&d["state"])
        );
        for a in d["attempts"].as_array().into_iter().flatten() {
            let answer = match a["status"].as_u64() {
                Some(s) => s.to_string(),
                None => "timeout".into(),
            };
            println!(
                "    attempt {} at {}: {} in {} ms{}",
                a["n"],
                text(&a["at"]),
                answer,
                a["latency_ms"],
                if a["acked"] == true {
                    " (acknowledged)"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

/// A string of the sandbox's answer, escaped for the terminal.
fn text(v: &serde_json::Value) -> String {
    pointhook_common::text::printable(v.as_str().unwrap_or("")).into_owned()
}
