//! The command line: parses arguments, sets up logging, runs a command, and
//! maps every failure to one line on stderr and an exit code (64 for bad
//! configuration, so systemd's `RestartPreventExitStatus=64` holds).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

mod alerts;
mod ask;
mod client;
mod destinations;
mod event_lines;
mod explain;
mod fraud;
mod holds;
mod inspect;
mod items;
mod maintenance;
mod operators;
mod orders;
mod paging;
mod platform_orders;
mod process;
mod progress;
mod reconcile;
mod render;
mod sandbox;
mod scenario;
mod trigger;

use pointhook::config::{Account, Config, ConfigError, LogFormat};
use pointhook::store::{Location, Store};
use pointhook::{App, Options};
pub(crate) use process::cancel_on_signal;
use process::init_tracing;

/// `EX_USAGE`: the configuration is wrong; restarting will not help.
const EXIT_CONFIG: u8 = 64;

/// Where the service's configuration is looked for by default.
const DEFAULT_CONFIG: &str = "/etc/pointhook/pointhook.toml";

#[derive(Debug, Parser)]
#[command(
    name = "pointhook",
    version,
    about = "Receives Mercado Pago's notifications, stores them durably and decides once",
    after_help = "--config FILE (or POINTHOOK_CONFIG=FILE, set once for a shell) names the \
                  configuration every command that reads the store or serves takes; \
                  relative paths in it are relative to its directory. Only serve, \
                  check-config, reconcile and platform-orders read the secret files. \
                  `sandbox --config FILE` reads the sandbox's own settings. docs/cli.md has \
                  the rest."
)]
struct Cli {
    /// The configuration file [default: /etc/pointhook/pointhook.toml]
    #[arg(
        long,
        short,
        global = true,
        env = "POINTHOOK_CONFIG",
        value_name = "FILE"
    )]
    config: Option<PathBuf>,
    /// Log format (overrides [log] format).
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Receive notifications (and run the worker unless [worker] enabled = false).
    Serve,
    /// Validate a configuration and print what is in effect, secrets masked.
    CheckConfig,
    /// Apply the database migrations and exit (safe to run from several
    /// hosts at once).
    Migrate {
        /// The store to migrate, a SQLite file or a postgres:// URL, instead
        /// of the configuration's.
        #[arg(long, value_name = "FILE_OR_URL")]
        store: Option<String>,
    },
    /// Copy every row of a store into another, empty one (a SQLite file or
    /// a postgres:// URL), with every instance stopped; counts are verified.
    CopyStore {
        #[arg(long, value_name = "FILE_OR_URL")]
        from: String,
        #[arg(long, value_name = "FILE_OR_URL")]
        to: String,
    },
    /// Find what changed on the platform in a window with no notification
    /// received, and enqueue its jobs (the running server works them).
    Reconcile(reconcile::ReconcileArgs),
    /// Copy the database to PATH, consistently, while the server runs.
    Backup {
        /// A new file; only its owner may read it.
        path: PathBuf,
    },
    /// Delete finished deliveries, jobs, events and API call records older
    /// than a period (never unfinished work, never decisions).
    Prune {
        /// e.g. 30d, 12h; at least 96h.
        #[arg(long, value_parser = humantime::parse_duration)]
        older_than: std::time::Duration,
    },
    /// Read the notifications received.
    #[command(subcommand)]
    Deliveries(inspect::Deliveries),
    /// Read jobs; run dead ones again.
    #[command(subcommand)]
    Jobs(inspect::Jobs),
    /// An order's state and history; the orders in a state.
    #[command(subcommand)]
    Orders(orders::Orders),
    /// Why an order is where it is: found by any id it is known by, its
    /// notifications, API answers, decisions with their reasons, events.
    Explain(explain::ExplainArgs),
    /// Orders of the Orders API (ORD…): cancel, refund.
    #[command(subcommand)]
    PlatformOrders(platform_orders::PlatformOrders),
    /// Read events; deliver one again.
    #[command(subcommand)]
    Events(inspect::Events),
    /// Where events go: list, show, enable, disable, recover since a time.
    #[command(subcommand)]
    Destinations(destinations::Destinations),
    /// Standard Webhooks secrets for destinations.
    #[command(subcommand)]
    Secret(destinations::SecretCommand),
    /// Fraud alerts held for a person: list, show, confirm (cancel or
    /// refund), dismiss.
    #[command(subcommand)]
    Fraud(fraud::Fraud),
    /// Decisions held for a person, every kind: list, show, approve,
    /// reject.
    #[command(subcommand)]
    Holds(holds::Holds),
    /// What needs a person, as typed items, and an action on one.
    #[command(subcommand)]
    Items(items::Items),
    /// Who may sign in to the console: add, list, remove, reset.
    #[command(subcommand)]
    Operators(operators::Operators),
    /// Telling a person: send a test message to every [[alerts]] channel.
    #[command(subcommand)]
    Alerts(alerts::Alerts),
    /// Run the local emulator of the platform (its settings file, if any,
    /// is --config).
    Sandbox(sandbox::SandboxArgs),
    /// The integrator configuration (device events by e-mail).
    #[command(subcommand)]
    Integrator(client::Integrator),
    /// Create payments through the API.
    #[command(subcommand)]
    Payments(client::Payments),
    /// Send one notification shaped like the platform's to any receiver.
    Notify(client::Notify),
    /// The sandbox and pointhook wired together, running the scenarios of
    /// fixtures/scenarios/, then serving until Ctrl-C.
    Demo {
        /// Stop after the scenarios (exit 1 if one did not pass).
        #[arg(long)]
        exit_after_scenarios: bool,
    },
}

/// Why a command failed, which decides the exit code.
enum Failure {
    Config(ConfigError),
    Runtime(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Runtime(e)
    }
}

pub fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    // POINTHOOK_CONFIG names pointhook's configuration; the sandbox reads
    // a settings file only when one is given on its command line.
    let sandbox_settings =
        matches.value_source("config") == Some(clap::parser::ValueSource::CommandLine);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let config = cli
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
    let result = match cli.command {
        Command::Serve => serve(&config, cli.log_format),
        Command::CheckConfig => check_config(&config),
        Command::Migrate { store } => migrate(&config, store.as_deref()),
        Command::CopyStore { from, to } => copy_store(&from, &to),
        Command::Reconcile(args) => load_for_platform(&config).and_then(|(config, accounts)| {
            runtime()?.block_on(reconcile::run(config, accounts, args))?;
            Ok(())
        }),
        Command::PlatformOrders(cmd) => load_for_platform(&config).and_then(|(c, accounts)| {
            let c = &c;
            opened(c, |store| async move {
                platform_orders::run(c, accounts, &store, cmd).await
            })
        }),
        Command::Backup { path } => with_store(&config, |store| async move {
            maintenance::backup(&store, &path).await
        }),
        Command::Prune { older_than } => with_store(&config, |store| async move {
            maintenance::prune(&store, older_than).await
        }),
        Command::Deliveries(cmd) => with_store(&config, |store| async move {
            inspect::deliveries(&store, cmd).await
        }),
        Command::Jobs(cmd) => {
            with_store(
                &config,
                |store| async move { inspect::jobs(&store, cmd).await },
            )
        }
        Command::Orders(cmd) => load(&config).and_then(|c| {
            let accounts = c.accounts.iter().map(|a| a.name.clone()).collect();
            opened(&c, |store| async move {
                orders::run(&store, accounts, cmd).await
            })
        }),
        Command::Explain(args) => load(&config).and_then(|c| {
            let accounts = c.accounts.iter().map(|a| a.name.clone()).collect();
            opened(&c, |store| async move {
                explain::run(&store, accounts, args).await
            })
        }),
        Command::Events(cmd) => with_store(&config, |store| async move {
            inspect::events(&store, cmd).await
        }),
        Command::Destinations(cmd) => with_store(&config, |store| async move {
            destinations::run(&store, cmd).await
        }),
        Command::Secret(cmd) => {
            destinations::secret(cmd);
            Ok(())
        }
        Command::Fraud(cmd) => with_store(
            &config,
            |store| async move { fraud::run(&store, cmd).await },
        ),
        Command::Holds(cmd) => with_store(
            &config,
            |store| async move { holds::run(&store, cmd).await },
        ),
        Command::Items(cmd) => with_store(
            &config,
            |store| async move { items::run(&store, cmd).await },
        ),
        Command::Operators(cmd) => {
            with_store(
                &config,
                |store| async move { operators::run(&store, cmd).await },
            )
        }
        Command::Alerts(cmd) => {
            load(&config).and_then(|c| Ok(runtime()?.block_on(alerts::run(c, cmd))?))
        }
        Command::Integrator(cmd) => client::integrator(cmd).map_err(Failure::Runtime),
        Command::Payments(cmd) => client::payments(cmd).map_err(Failure::Runtime),
        Command::Notify(cmd) => client::notify(cmd).map_err(Failure::Runtime),
        Command::Demo {
            exit_after_scenarios,
        } => demo(exit_after_scenarios, cli.log_format),
        Command::Sandbox(args) => {
            init_tracing(cli.log_format.unwrap_or_default(), "info");
            let settings = cli.config.as_deref().filter(|_| sandbox_settings);
            sandbox::run(args, settings).map_err(Failure::Runtime)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Config(e)) => {
            eprintln!("pointhook: configuration error: {e}");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(Failure::Runtime(e)) => {
            eprintln!("pointhook: {}", said_once(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, each said once: a cause whose
/// words its context already ends with (an error that prints its source
/// and also returns it) is not repeated.
fn said_once(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        // One line: a cause's own lines (a parser's excerpt) joined.
        let text = cause
            .to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let text = pointhook_common::text::printable(&text).into_owned();
        if line.is_empty() {
            line = text;
        } else if !line.ends_with(&text) {
            line = format!("{line}: {text}");
        }
    }
    line
}

/// The configuration at `path`, checked, its secret files left unread: the
/// operator's commands read and act on the store, and need no platform
/// token.
fn load(path: &Path) -> Result<Config, Failure> {
    Config::load(path).map_err(Failure::Config)
}

/// The configuration with every secret file read and checked: for `serve`
/// and `check-config`.
fn load_whole(path: &Path) -> Result<Config, Failure> {
    let config = load(path)?;
    config.check_secrets().map_err(Failure::Config)?;
    Ok(config)
}

/// The configuration with the accounts' tokens read: for the commands
/// that call the platform's API.
fn load_for_platform(path: &Path) -> Result<(Config, Vec<Account>), Failure> {
    let config = load(path)?;
    let accounts = config.resolve_accounts().map_err(Failure::Config)?;
    Ok((config, accounts))
}

/// Runs `f` on the store named by the configuration at `path`, opened as a
/// client next to whatever serves it (with the configuration's event
/// policy, so it knows whether events are delivered anywhere).
fn with_store<F, Fut>(path: &Path, f: F) -> Result<(), Failure>
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    opened(&load(path)?, f)
}

/// `with_store` for a configuration already loaded (a command that also
/// needs the accounts' names reads the file once).
fn opened<F, Fut>(config: &Config, f: F) -> Result<(), Failure>
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let location = config.location().map_err(Failure::Config)?;
    let events = config.event_policy();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let store = Store::open_client(&location, pointhook::rules::decision_rules(events))
            .await
            .context("cannot open the database")?;
        f(store).await
    })?;
    Ok(())
}

fn check_config(path: &Path) -> Result<(), Failure> {
    let config = load_whole(path)?;
    for warning in config.warnings() {
        eprintln!("pointhook: WARNING: {warning}");
    }
    print!("{}", config.to_masked_toml());
    Ok(())
}

fn migrate(path: &Path, store: Option<&str>) -> Result<(), Failure> {
    let location = match store {
        Some(s) => Location::parse(s),
        None => load(path)?.location().map_err(Failure::Config)?,
    };
    let version = runtime()?
        .block_on(Store::migrate(&location))
        .context("cannot migrate the database")?;
    println!("{}: schema version {version}", location.describe());
    Ok(())
}

fn copy_store(from: &str, to: &str) -> Result<(), Failure> {
    let (from, to) = (Location::parse(from), Location::parse(to));
    runtime()?.block_on(maintenance::copy_store(&from, &to))?;
    Ok(())
}

/// The runtime of a one-shot command.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn serve(path: &Path, log_format: Option<LogFormat>) -> Result<(), Failure> {
    let config = load_whole(path)?;
    init_tracing(log_format.unwrap_or(config.log.format), &config.log.level);
    for warning in config.warnings() {
        tracing::warn!("{warning}");
        eprintln!("pointhook: WARNING: {warning}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone())?);
        let listener = tokio::net::TcpListener::bind(config.server.listen)
            .await
            .with_context(|| {
                format!("cannot listen on {} (server.listen)", config.server.listen)
            })?;
        let app = App::new(config, listener, Options::default()).await?;
        app.run(shutdown).await
    })?;
    Ok(())
}

fn demo(exit_after_scenarios: bool, log_format: Option<LogFormat>) -> Result<(), Failure> {
    // The demo speaks for itself; logs only say what went wrong.
    // A destination the demo keeps down: its failures are narrated, not logged.
    init_tracing(
        log_format.unwrap_or_default(),
        "warn,pointhook::outbox=error",
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let passed = runtime.block_on(async {
        let shutdown = CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone())?);
        crate::demo::run(exit_after_scenarios, shutdown).await
    })?;
    if passed {
        Ok(())
    } else {
        Err(Failure::Runtime(anyhow::anyhow!(
            "a demo scenario did not pass"
        )))
    }
}
