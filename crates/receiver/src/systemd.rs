//! Talking to systemd (`Type=notify`): READY=1 once storage is open and
//! the listeners are bound, STOPPING=1 when shutdown starts, and WATCHDOG=1
//! pings while storage takes writes, when the unit sets `WatchdogSec=`.
//! Without `NOTIFY_SOCKET` every call is a no-op.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio_util::sync::CancellationToken;

use crate::store::Store;

pub fn ready() {
    send(&[NotifyState::Ready, NotifyState::Status("serving")]);
}

pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("draining")]);
}

/// Pings the watchdog at half its interval for as long as storage is
/// writable; a stuck or broken process stops pinging and systemd restarts it.
pub async fn watchdog(store: Store, shutdown: CancellationToken) {
    let Some(interval) = sd_notify::watchdog_enabled() else {
        return;
    };
    let every = (interval / 2).max(Duration::from_millis(100));
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = shutdown.cancelled() => return,
        }
        match tokio::time::timeout(every, store.check_writable()).await {
            Ok(Ok(())) => send(&[NotifyState::Watchdog]),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "storage is not writable: not pinging the watchdog")
            }
            Err(_) => tracing::error!("storage did not answer: not pinging the watchdog"),
        }
    }
}

fn send(state: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(state) {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}
