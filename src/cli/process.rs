//! What the process itself needs: its logs (`RUST_LOG` or the configured
//! level, text or JSON) and the one shutdown path signals start.

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

use pointhook::config::LogFormat;

/// SIGTERM or SIGINT starts the one shutdown path. The receivers exist
/// before this returns, so before the caller binds its listener: tokio
/// drops a signal that arrives while its handler is installed but no
/// receiver is subscribed, and a receiver made in a task spawned next to
/// the listener left a process deaf to a SIGTERM sent just as it came up.
pub(crate) fn cancel_on_signal(
    shutdown: CancellationToken,
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = int.recv() => tracing::info!("SIGINT: shutting down"),
        }
        shutdown.cancel();
    })
}

pub(super) fn init_tracing(format: LogFormat, level: &str) {
    // RUST_LOG wins when it parses; its parser panics on some non-ASCII
    // input, which no directive needs.
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| v.is_ascii())
        .and_then(|v| EnvFilter::try_new(v).ok());
    let filter = from_env
        .or_else(|| EnvFilter::try_new(level).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: journald and log files
        // would keep the escape codes as text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        // A log line that cannot be written (journald restarted, the pipe
        // gone) is lost; reporting that on stderr too would panic whatever
        // task logged it, the signal handler included.
        .log_internal_errors(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
