//! `LISTEN/NOTIFY`: a hint that another instance queued a job or an event,
//! so a worker or an outbox wakes at once instead of at its next poll.
//! Polling stays behind it: a lost notification only costs a second.

use std::sync::Arc;
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

/// Listens on one connection of its own until `stop`, reconnecting after a
/// second when it drops.
pub async fn run(config: Config, jobs: Arc<Notify>, events: Arc<Notify>, stop: CancellationToken) {
    loop {
        let session = async {
            match tls::connector(&config)? {
                Some(tls) => session(&config, tls, &jobs, &events).await,
                None => session(&config, NoTls, &jobs, &events).await,
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

/// One connection's life: LISTEN, then wake whoever a notification names.
async fn session<T: MakeTlsConnect<Socket>>(
    config: &Config,
    tls: T,
    jobs: &Notify,
    events: &Notify,
) -> Result<(), StoreError> {
    let (client, mut connection) = config.connect(tls).await?;
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let sql = format!("LISTEN {JOBS}; LISTEN {EVENTS};");
    let listening = client.batch_execute(&sql);
    // The connection must be polled for the LISTEN to be answered.
    tokio::pin!(listening);
    let mut listened = false;
    loop {
        tokio::select! {
            r = &mut listening, if !listened => {
                r?;
                listened = true;
            }
            m = messages.next() => match m {
                Some(Ok(AsyncMessage::Notification(n))) => match n.channel() {
                    JOBS => jobs.notify_one(),
                    EVENTS => events.notify_one(),
                    _ => {}
                },
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
        }
    }
}
