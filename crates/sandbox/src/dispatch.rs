//! Dispatch on the platform's schedule: the first attempt waits 22 s for an
//! answer; retries go 15 min, 30 min, 6 h, 48 h and 96 h after the first
//! dispatch, each waiting 5 s; then it gives up. Only 200 or 201
//! acknowledges. Every offset and window is scaled by the time scale (a
//! window never shorter than 100 ms).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::Sandbox;
use super::db::DispatchState;
use super::quirks;
use super::shapes::Outgoing;
use super::sql_enum::sql_enum;
use pointhook_common::clock::rfc3339;

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
const IDLE_MAX: Duration = Duration::from_secs(1);

/// The shape a dispatch was sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum Form {
    Ipn = 1,
    Webhook = 2,
    IntentWebhook = 3,
}

sql_enum!(Form {
    Ipn,
    Webhook,
    IntentWebhook,
});

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Ipn => "ipn",
            Form::Webhook => "webhook",
            Form::IntentWebhook => "intent_webhook",
        }
    }
}

/// Queues `out` for its first attempt now, with whatever the account's
/// quirks do to it (`quirks`).
pub fn enqueue(
    conn: &Connection,
    account: &str,
    out: &Outgoing,
    now: i64,
) -> rusqlite::Result<i64> {
    // A dropped notification is logged, never sent: the platform's loss.
    let state = if super::db::take_drop(conn, &out.topic)? {
        DispatchState::Dropped
    } else {
        DispatchState::Pending
    };
    let q = quirks::effective(conn, account)?;
    let mut out = out.clone();
    if state == DispatchState::Pending {
        quirks::before_queue(conn, &q, &mut out, now)?;
    }
    let id = conn.query_row(
        "INSERT INTO dispatches (account, url, form, topic, resource_id, body, headers, first_at, next_due_at, state)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9) RETURNING id",
        params![account, out.url, out.form, out.topic, out.resource_id, out.body.to_string(), headers_json(&out.headers), now, state],
        |r| r.get(0),
    )?;
    if state == DispatchState::Pending {
        quirks::after_queue(conn, &q, account, id, &out, now)?;
    }
    Ok(id)
}

/// Headers as the `dispatches` table keeps them: a JSON object.
pub(super) fn headers_json(headers: &[(String, String)]) -> String {
    serde_json::Value::Object(
        headers
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect(),
    )
    .to_string()
}

struct Due {
    id: i64,
    url: String,
    topic: String,
    body: String,
    headers: Vec<(String, String)>,
    /// The account's secret, to sign each attempt anew.
    secret: Option<String>,
    resource_id: String,
    first_at: i64,
    attempt: u32,
}

impl Sandbox {
    /// Sends every attempt due now and waits for their outcomes; returns
    /// how many were sent.
    pub async fn run_due(self: &Arc<Self>) -> anyhow::Result<usize> {
        // Order steps first: the webhooks they queue go in this round.
        if let Err(e) = self.run_order_steps().await {
            tracing::error!(error = %e, "cannot run the orders' steps");
        }
        let now = self.now();
        let due = self
            .db
            .call(move |conn| {
                let tx = conn.transaction()?;
                let due: Vec<Due> = tx
                    .prepare(
                        "SELECT d.id, d.url, d.body, d.headers, d.first_at, d.attempts, d.topic,
                                a.webhook_secret, d.resource_id
                         FROM dispatches d LEFT JOIN accounts a ON a.name = d.account
                         WHERE d.state = ?1 AND d.next_due_at <= ?2 ORDER BY d.next_due_at, d.id",
                    )?
                    .query_map(params![DispatchState::Pending, now], |r| {
                        let headers: String = r.get(3)?;
                        let headers: serde_json::Map<String, serde_json::Value> =
                            serde_json::from_str(&headers).unwrap_or_default();
                        Ok(Due {
                            id: r.get(0)?,
                            url: r.get(1)?,
                            body: r.get(2)?,
                            headers: headers
                                .into_iter()
                                .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                                .collect(),
                            first_at: r.get(4)?,
                            attempt: r.get::<_, u32>(5)? + 1,
                            topic: r.get(6)?,
                            secret: r.get(7)?,
                            resource_id: r.get(8)?,
                        })
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                for d in &due {
                    tx.execute(
                        "UPDATE dispatches SET state = ?2 WHERE id = ?1",
                        params![d.id, DispatchState::Sending],
                    )?;
                }
                tx.commit()?;
                Ok(due)
            })
            .await?;
        let n = due.len();
        // The notifications of one resource to one URL go one after the
        // other, in the order they fell due (so held-back ones really
        // arrive late); the others side by side.
        let mut lanes: Vec<Vec<Due>> = Vec::new();
        let mut lane_of: std::collections::HashMap<(String, String), usize> =
            std::collections::HashMap::new();
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

    pub(super) async fn dispatch_forever(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            {
                let _round = self.rounds.lock().await;
                if let Err(e) = self.run_due().await {
                    tracing::error!(error = %e, "dispatcher failed");
                }
                if let Err(e) = self.send_due_mails().await {
                    tracing::error!(error = %e, "mailer failed");
                }
                if let Err(e) = self.run_terminals().await {
                    tracing::error!(error = %e, "emulated terminals failed");
                }
            }
            let next_dispatch = self
                .db
                .call(|c| {
                    c.query_row(
                        "SELECT min(next_due_at) FROM dispatches WHERE state = ?1",
                        [DispatchState::Pending],
                        |r| r.get::<_, Option<i64>>(0),
                    )
                })
                .await
                .ok()
                .flatten();
            let next_step = self.next_terminal_step().await.ok().flatten();
            let next = next_dispatch.into_iter().chain(next_step).min();
            // Sandbox time to real time: the clock moves at real speed.
            let wait =
                next.map_or(IDLE_MAX, |at| {
                    Duration::from_millis(
                        (at - self.now()).clamp(0, IDLE_MAX.as_millis() as i64) as u64
                    )
                });
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => return,
            }
        }
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
            super::shapes::resign(&mut d.headers, secret, data_id.as_deref(), now_secs);
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
        let retried = d.topic != super::shapes::FRAUD_WEBHOOK;
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
        // What was sent is kept: the log shows each attempt's signature.
        let sent_headers = headers_json(&d.headers);
        self.db
            .call(move |conn| {
                let tx = conn.transaction()?;
                tx.execute(
                    "INSERT INTO attempts (dispatch_id, n, at, status, acked, latency_ms, error)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![d.id, d.attempt, at, status, acked, latency, error],
                )?;
                tx.execute(
                    "UPDATE dispatches SET attempts = ?2, state = ?3, next_due_at = ?4, headers = ?5
                     WHERE id = ?1",
                    params![d.id, d.attempt, state, next, sent_headers],
                )?;
                tx.commit()
            })
            .await
    }

    /// Wakes the dispatcher: something was queued.
    pub(super) fn queued(&self) {
        self.wake.notify_one();
    }

    /// Every dispatch with its attempts, newest first.
    pub async fn delivery_log(&self, limit: usize) -> anyhow::Result<Vec<LogEntry>> {
        self.db.call(move |conn| delivery_log(conn, limit)).await
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    pub id: i64,
    pub account: String,
    pub url: String,
    pub form: &'static str,
    pub topic: String,
    pub resource_id: String,
    pub state: &'static str,
    pub first_at: String,
    pub next_attempt_at: Option<String>,
    pub attempts: Vec<AttemptEntry>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AttemptEntry {
    pub n: u32,
    pub at: String,
    /// `None`: no answer within the window.
    pub status: Option<u16>,
    pub acked: bool,
    pub latency_ms: i64,
    pub error: Option<String>,
}

fn delivery_log(conn: &mut Connection, limit: usize) -> rusqlite::Result<Vec<LogEntry>> {
    let mut entries: Vec<LogEntry> = conn
        .prepare(
            "SELECT id, account, url, form, topic, resource_id, state, first_at, next_due_at
             FROM dispatches ORDER BY id DESC LIMIT ?1",
        )?
        .query_map([limit as i64], |r| {
            let state: DispatchState = r.get(6)?;
            let form: Form = r.get(3)?;
            Ok(LogEntry {
                id: r.get(0)?,
                account: r.get(1)?,
                url: r.get(2)?,
                form: form.as_str(),
                topic: r.get(4)?,
                resource_id: r.get(5)?,
                state: state.as_str(),
                first_at: rfc3339(r.get(7)?),
                next_attempt_at: if state == DispatchState::Pending {
                    r.get::<_, Option<i64>>(8)?.map(rfc3339)
                } else {
                    None
                },
                attempts: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut stmt = conn.prepare(
        "SELECT n, at, status, acked, latency_ms, error FROM attempts WHERE dispatch_id = ?1 ORDER BY n",
    )?;
    for e in &mut entries {
        e.attempts = stmt
            .query_map([e.id], |r| {
                Ok(AttemptEntry {
                    n: r.get(0)?,
                    at: rfc3339(r.get(1)?),
                    status: r.get(2)?,
                    acked: r.get(3)?,
                    latency_ms: r.get(4)?,
                    error: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
    }
    Ok(entries)
}
