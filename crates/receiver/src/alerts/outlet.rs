//! One channel's queue and the task that empties it: each message sent
//! within the timeout and recorded in the audit (actor `alerts`), one at
//! a time and in order, so a dead SMTP server delays only its own
//! e-mails. Handing a message over never waits: a full queue drops it,
//! counted and logged.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Channel;
use super::outgoing::Outgoing;
use crate::domain::{Action, AuditOutcome, Via};
use crate::metrics::SharedMetrics;
use crate::store::console_views::NewAudit;
use crate::store::{Store, unix_ms};
use pointhook_common::clock::Clock;

/// Messages waiting for one channel at most.
const QUEUE: usize = 256;

/// A message for one channel, with what the audit says of it.
#[derive(Debug, Clone)]
pub struct Queued {
    pub out: Outgoing,
    /// What it is about: the incident's key, or `alerts:KIND` for several.
    pub item: String,
    pub resolved: bool,
}

/// Where the alerter hands a channel its messages.
pub struct Outlet {
    pub describe: String,
    kind: &'static str,
    tx: mpsc::Sender<Queued>,
}

/// A channel's task, until it is started.
pub struct Sender {
    channel: Channel,
    rx: mpsc::Receiver<Queued>,
}

/// What every channel's task shares.
#[derive(Clone)]
pub struct Shared {
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub metrics: SharedMetrics,
    pub timeout: Duration,
}

pub fn outlet(channel: Channel) -> (Outlet, Sender) {
    let (tx, rx) = mpsc::channel(QUEUE);
    (
        Outlet {
            describe: channel.describe(),
            kind: channel.kind(),
            tx,
        },
        Sender { channel, rx },
    )
}

impl Outlet {
    /// Queues `m`; never waits.
    pub fn hand(&self, m: Queued, metrics: &SharedMetrics) {
        if let Err(e) = self.tx.try_send(m) {
            metrics.alert_sent(self.kind, "dropped");
            tracing::warn!(
                channel = %self.describe,
                error = %e,
                "an alert was dropped: its channel's queue is full or stopped"
            );
        }
    }
}

impl Sender {
    /// Sends what is queued, one message at a time, until `stop`.
    pub async fn run(mut self, s: Shared, stop: CancellationToken) {
        loop {
            let m = tokio::select! {
                m = self.rx.recv() => match m {
                    Some(m) => m,
                    None => return,
                },
                () = stop.cancelled() => return,
            };
            tokio::select! {
                () = self.send(&s, m) => {}
                () = stop.cancelled() => return,
            }
        }
    }

    async fn send(&self, s: &Shared, m: Queued) {
        let describe = self.channel.describe();
        let now = || unix_ms(s.clock.now());
        let audit = s
            .store
            .begin_audit(NewAudit {
                at: now(),
                actor: "alerts".into(),
                via: Via::Alerts,
                action: Action::Alert,
                item: m.item.clone(),
                account: None,
                order_id: None,
                detail: format!(
                    "{} to {describe}: {}",
                    if m.resolved { "resolution" } else { "alert" },
                    m.out.text
                ),
            })
            .await;
        let sent = self.channel.send(&m.out, s.timeout).await;
        let (outcome, result) = match &sent {
            Ok(()) => (AuditOutcome::Done, "sent".to_string()),
            Err(e) => (AuditOutcome::Failed, e.to_string()),
        };
        s.metrics.alert_sent(
            self.channel.kind(),
            if sent.is_ok() { "sent" } else { "failed" },
        );
        match &sent {
            Ok(()) => tracing::info!(channel = %describe, item = %m.item, "alert sent"),
            Err(e) => {
                tracing::warn!(channel = %describe, item = %m.item, error = %e, "an alert was not sent")
            }
        }
        match audit {
            Ok(id) => {
                if let Err(e) = s.store.end_audit(id, outcome, result, now()).await {
                    tracing::warn!(audit_id = id, error = %e, "an alert's outcome was not recorded");
                }
            }
            Err(e) => tracing::warn!(error = %e, "an alert was not recorded in the audit"),
        }
    }
}
