//! `LISTEN/NOTIFY` between instances: a hint that one queued a job or an
//! event, so the workers and outboxes of the others wake at once instead of
//! at their next poll. Polling stays behind it: a lost notification only
//! costs a second.
//!
//! The notifications are sent here, on the listening connection, after the
//! data's commit, never inside a data transaction: PostgreSQL holds a lock
//! on the whole database's notification queue from a notifying commit's
//! start to its end, its WAL flush included, so notifying transactions
//! commit one at a time and share no flush. Here they are asynchronous
//! commits of one statement, at most one every few milliseconds, carrying
//! every wake-up asked for since the last.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Config, NoTls, Socket};
use tokio_util::sync::CancellationToken;

use super::tls;
use crate::store::StoreError;

pub const JOBS: &str = "pointhook_jobs";
pub const EVENTS: &str = "pointhook_events";

/// Sends every channel of `$1` its notification: one statement for both.
pub const NOTIFY: &str = "SELECT pg_notify(c, '') FROM unnest($1::text[]) AS c";

/// The least time between two sends: under load, what is asked within it
/// goes out in one statement (another instance wakes at most this much
/// later; this instance's own are woken in-process at once).
const PACE: Duration = Duration::from_millis(5);

/// What a notification says may be due.
#[derive(Debug, Clone, Copy)]
pub enum Channel {
    Jobs,
    Events,
}

impl Channel {
    pub fn name(self) -> &'static str {
        match self {
            Channel::Jobs => JOBS,
            Channel::Events => EVENTS,
        }
    }
}

/// The wake-ups this instance owes the others, sent by the listener.
#[derive(Default)]
pub struct Broadcast {
    jobs: AtomicBool,
    events: AtomicBool,
    asked: Notify,
}

impl Broadcast {
    /// Something on `channel` may be due: call after its commit.
    pub fn ask(&self, channel: Channel) {
        let flag = match channel {
            Channel::Jobs => &self.jobs,
            Channel::Events => &self.events,
        };
        flag.store(true, Ordering::Release);
        // A permit is kept while the listener is busy sending: not lost.
        self.asked.notify_one();
    }

    /// The channels asked for since the last take.
    fn take(&self) -> Vec<&'static str> {
        [(&self.jobs, JOBS), (&self.events, EVENTS)]
            .into_iter()
            .filter(|(asked, _)| asked.swap(false, Ordering::AcqRel))
            .map(|(_, channel)| channel)
            .collect()
    }
}

/// Who in this instance a notification from another one wakes.
pub struct Wakers {
    pub jobs: Arc<Notify>,
    pub events: Arc<Notify>,
}

/// Listens and sends on one connection of its own until `stop`,
/// reconnecting after a second when it drops.
pub async fn run(mut config: Config, local: Wakers, out: Arc<Broadcast>, stop: CancellationToken) {
    // Named apart from the pool's connections, for whoever reads
    // pg_stat_activity.
    let name = format!(
        "{} (listener)",
        config.get_application_name().unwrap_or("pointhook")
    );
    config.application_name(&name);
    loop {
        let session = async {
            match tls::connector(&config)? {
                Some(tls) => session(&config, tls, &local, &out).await,
                None => session(&config, NoTls, &local, &out).await,
            }
        };
        tokio::select! {
            ended = session => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "notification listener dropped; reconnecting");
                }
            }
            () = stop.cancelled() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// One connection's life: LISTEN, then wake whoever a notification from
/// another instance names, and send what this one owes.
async fn session<T: MakeTlsConnect<Socket>>(
    config: &Config,
    tls: T,
    local: &Wakers,
    out: &Broadcast,
) -> Result<(), StoreError> {
    let (client, mut connection) = config.connect(tls).await?;
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let setup = async {
        // A wake-up need not be durable, so its commit does not wait for
        // the WAL flush (and holds the queue's lock only for a moment).
        let sql = format!("SET synchronous_commit = off; LISTEN {JOBS}; LISTEN {EVENTS};");
        client.batch_execute(&sql).await?;
        let notify = client.prepare(NOTIFY).await?;
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await?
            .try_get(0)?;
        Ok::<_, tokio_postgres::Error>((notify, pid))
    };
    // The connection must be polled for any statement to be answered.
    tokio::pin!(setup);
    let mut ready = None;
    let mut sending = None;
    let mut earliest = tokio::time::Instant::now();
    loop {
        tokio::select! {
            r = &mut setup, if ready.is_none() => ready = Some(r?),
            r = async {
                match sending.as_mut() {
                    Some(send) => send.await,
                    None => std::future::pending().await,
                }
            }, if sending.is_some() => {
                sending = None;
                r?;
            }
            () = out.asked.notified(), if ready.is_some() && sending.is_none() => {
                let Some((notify, _)) = &ready else { continue };
                let (notify, client) = (notify.clone(), &client);
                let at = earliest.max(tokio::time::Instant::now());
                earliest = at + PACE;
                sending = Some(Box::pin(async move {
                    tokio::time::sleep_until(at).await;
                    // Whatever was asked meanwhile goes out in this one.
                    match out.take() {
                        channels if channels.is_empty() => Ok(0),
                        channels => client.execute(&notify, &[&channels]).await,
                    }
                }));
            }
            m = messages.next() => match m {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    // This instance woke its own already.
                    if ready.as_ref().is_some_and(|(_, pid)| *pid == n.process_id()) {
                        continue;
                    }
                    match n.channel() {
                        JOBS => local.jobs.notify_one(),
                        EVENTS => local.events.notify_one(),
                        _ => {}
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
        }
    }
}
