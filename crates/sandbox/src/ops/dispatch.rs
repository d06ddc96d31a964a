//! Dispatch on the platform's schedule: the first attempt waits 22 s for an
//! answer; retries go 15 min, 30 min, 6 h, 48 h and 96 h after the first
//! dispatch, each waiting 5 s; then it gives up. Only 200 or 201
//! acknowledges. Every offset and window is scaled by the time scale (a
//! window never shorter than 100 ms).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::sandbox::Sandbox;
use super::shapes;
use crate::model::{DispatchState, LogEntry};
use crate::state::dispatches::{self, Attempted, Due};

/// After the first dispatch, when each retry goes.
pub const RETRY_OFFSETS: [Duration; 5] = [
    Duration::from_secs(15 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(6 * 3600),
    Duration::from_secs(48 * 3600),
    Duration::from_secs(96 * 3600),
];
pub const FIRST_WINDOW: Duration = Duration::from_secs(22);
pub const RETRY_WINDOW: Duration = Duration::from_secs(5);
/// No window is shorter, however small the time scale.
const MIN_WINDOW: Duration = Duration::from_millis(100);

impl Sandbox {
    /// Sends every attempt due now and waits for their outcomes; returns
    /// how many were sent.
    pub(crate) async fn send_due(self: &Arc<Self>) -> anyhow::Result<usize> {
        let now = self.now();
        let due = self
            .db
            .call(move |tx| dispatches::take_due(tx, now))
            .await?;
        let n = due.len();
        // The notifications of one resource to one URL go one after the
        // other, in the order they fell due (so held-back ones really
        // arrive late); the others side by side.
        let mut lanes: Vec<Vec<Due>> = Vec::new();
        let mut lane_of: HashMap<(String, String), usize> = HashMap::new();
        for d in due {
            let key = (d.url.clone(), d.resource_id.clone());
            match lane_of.get(&key).and_then(|&i| lanes.get_mut(i)) {
                Some(lane) => lane.push(d),
                None => {
                    lane_of.insert(key, lanes.len());
                    lanes.push(vec![d]);
                }
            }
        }
        let mut sends = tokio::task::JoinSet::new();
        for lane in lanes {
            let me = self.clone();
            sends.spawn(async move {
                for d in lane {
                    if let Err(e) = me.attempt(d).await {
                        tracing::error!(error = %e, "cannot record a dispatch attempt");
                    }
                }
            });
        }
        while sends.join_next().await.is_some() {}
        Ok(n)
    }

    async fn attempt(&self, mut d: Due) -> anyhow::Result<()> {
        // Each attempt is signed anew, as the platform does (unless the
        // sandbox was told to resend the first signature).
        if d.attempt > 1
            && !self.resend_first_signature
            && let Some(secret) = &d.secret
            && d.headers.iter().any(|(k, _)| k == "x-signature")
        {
            let data_id = url::Url::parse(&d.url).ok().and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "data.id")
                    .map(|(_, v)| v.into_owned())
            });
            let now_secs = (self.now() / 1000).max(0) as u64;
            shapes::resign(&mut d.headers, secret, data_id.as_deref(), now_secs);
        }
        // A notification that counts its retries (`X-Retry`) says which one it is.
        if let Some((_, n)) = d.headers.iter_mut().find(|(k, _)| k == "x-retry") {
            *n = (d.attempt - 1).to_string();
        }
        let window = self
            .scaled(if d.attempt == 1 {
                FIRST_WINDOW
            } else {
                RETRY_WINDOW
            })
            .max(MIN_WINDOW);
        let mut request = self.http.post(&d.url).timeout(window).body(d.body.clone());
        for (k, v) in &d.headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let at = self.now();
        let started = Instant::now();
        let (status, error) = match request.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                // The answer counts once it is complete, within the window.
                match tokio::time::timeout(window.saturating_sub(started.elapsed()), r.bytes())
                    .await
                {
                    Ok(Ok(_)) => (Some(status), None),
                    _ => (
                        None,
                        Some("the answer did not complete within the window".to_string()),
                    ),
                }
            }
            Err(e) if e.is_timeout() => (None, Some("no answer within the window".to_string())),
            Err(e) => (None, Some(format!("cannot connect: {e}"))),
        };
        let latency = started.elapsed().as_millis() as i64;
        let acked = matches!(status, Some(200 | 201));
        // A fraud alert's webhook is never sent again.
        let retried = d.topic != shapes::FRAUD_WEBHOOK;
        let next = (!acked && retried)
            .then(|| RETRY_OFFSETS.get(d.attempt as usize - 1))
            .flatten()
            .map(|offset| d.first_at + self.scaled(*offset).as_millis() as i64);
        let state = match (acked, next) {
            (true, _) => DispatchState::Acked,
            (false, Some(_)) => DispatchState::Pending,
            (false, None) => DispatchState::GivenUp,
        };
        tracing::info!(dispatch = d.id, attempt = d.attempt, url = %d.url, status, acked, latency_ms = latency, "sandbox dispatch");
        let attempted = Attempted {
            id: d.id,
            n: d.attempt,
            at,
            status,
            acked,
            latency_ms: latency,
            error,
            state,
            next_due_at: next,
            headers: d.headers,
        };
        self.db
            .call(move |tx| dispatches::record_attempt(tx, &attempted))
            .await?;
        Ok(())
    }

    /// When the next pending attempt falls due.
    pub(crate) async fn next_dispatch(&self) -> anyhow::Result<Option<i64>> {
        Ok(self.db.call(|tx| dispatches::next_due_at(tx, None)).await?)
    }

    /// Every dispatch with its attempts, newest first.
    pub async fn delivery_log(&self, limit: usize) -> anyhow::Result<Vec<LogEntry>> {
        Ok(self.db.call(move |tx| dispatches::log(tx, limit)).await?)
    }
}
