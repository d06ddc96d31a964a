//! `GET /` on the admin listener: a small server-rendered status page (no
//! JavaScript) with the health of storage, the API and the merchant's
//! endpoint, jobs by state with dead ones first and a retry button, and the
//! recent deliveries and events. Browsers sign in with Basic auth (any user
//! name, the admin token as password); the retry form carries a token
//! derived from the admin token, so another site cannot post it.

use std::fmt::Write;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::store::admin::{
    self, DeliveryFilter, DeliverySummary, EventSummary, Health, JobSummary, MetricsSnapshot,
};

pub struct Page {
    pub storage_ok: Result<(), String>,
    pub health: Health,
    pub counts: MetricsSnapshot,
    pub dead: Vec<JobSummary>,
    pub active: Vec<JobSummary>,
    pub deliveries: Vec<DeliverySummary>,
    pub events: Vec<EventSummary>,
}

/// The form token for `secret` (the admin token).
pub fn csrf_token(secret: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any size");
    mac.update(b"pointhook status page form");
    hex::encode(mac.finalize().into_bytes())
}

/// Everything but the storage check, read in one go.
pub fn load(conn: &rusqlite::Connection, now: i64) -> rusqlite::Result<Page> {
    let mut active = admin::list_jobs(conn, Some(crate::domain::JobState::Running), 20)?;
    active.extend(admin::list_jobs(
        conn,
        Some(crate::domain::JobState::Pending),
        20,
    )?);
    Ok(Page {
        storage_ok: Ok(()),
        health: admin::health(conn)?,
        counts: admin::metrics_snapshot(conn, now)?,
        dead: admin::list_jobs(conn, Some(crate::domain::JobState::Dead), 50)?,
        active,
        deliveries: admin::list_deliveries(
            conn,
            &DeliveryFilter {
                limit: 20,
                ..Default::default()
            },
        )?,
        events: admin::list_events(conn, None, None, 20)?,
    })
}

pub fn render(page: &Page, csrf: &str) -> String {
    let mut h = String::with_capacity(16 * 1024);
    h.push_str(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>pointhook status</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>\
         body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#222}h1{font-size:1.4rem}\
         h2{font-size:1.1rem;margin-top:1.6rem}table{border-collapse:collapse;width:100%}\
         th,td{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #ddd;vertical-align:top}\
         .ok{color:#176e2b}.bad{color:#b00020;font-weight:600}.muted{color:#777}\
         button{font:inherit;padding:.1rem .6rem}</style></head><body><h1>pointhook status</h1>",
    );

    h.push_str("<h2>Health</h2><table>");
    let storage = match &page.storage_ok {
        Ok(()) => "<span class=\"ok\">writable</span>".to_string(),
        Err(e) => format!("<span class=\"bad\">not writable: {}</span>", esc(e)),
    };
    row(&mut h, &["storage", &storage]);
    let api = match &page.health.last_api_call {
        None => "<span class=\"muted\">no call yet</span>".to_string(),
        Some(f) => {
            let class = if (200..300).contains(&f.status) {
                "ok"
            } else {
                "bad"
            };
            let status = if f.status == 0 {
                "no answer".to_string()
            } else {
                f.status.to_string()
            };
            format!(
                "<span class=\"{class}\">last call {} {} → {status}</span> at {}",
                esc(&f.endpoint),
                esc(&f.resource_id),
                esc(&f.at)
            )
        }
    };
    row(&mut h, &["platform API", &api]);
    let merchant = match (
        &page.health.merchant_failing,
        &page.health.last_delivered_at,
    ) {
        (Some(e), _) => format!("<span class=\"bad\">failing: {}</span>", esc(e)),
        (None, Some(at)) => format!(
            "<span class=\"ok\">last event delivered at {}</span>",
            esc(at)
        ),
        (None, None) => "<span class=\"muted\">nothing delivered yet</span>".to_string(),
    };
    row(&mut h, &["merchant endpoint", &merchant]);
    let backlog = format!("{} waiting", page.counts.outbox_backlog);
    row(&mut h, &["outbox", &backlog]);
    h.push_str("</table>");

    h.push_str("<h2>Jobs</h2><p>");
    for (state, n) in &page.counts.jobs {
        let class = if *state == "dead" && *n > 0 {
            " class=\"bad\""
        } else {
            ""
        };
        let _ = write!(h, "<span{class}>{state}: {n}</span> &nbsp; ");
    }
    h.push_str("</p><table><tr><th>id</th><th>state</th><th>key</th><th>account</th><th>attempts</th><th>next run</th><th>last error</th><th></th></tr>");
    for j in page.dead.iter().chain(&page.active) {
        let button = if j.state == "dead" {
            format!(
                "<form method=\"post\" action=\"/jobs/{}/retry\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                 <button type=\"submit\" id=\"retry-{}\">retry</button></form>",
                j.id, j.id
            )
        } else {
            String::new()
        };
        let state = if j.state == "dead" {
            "<span class=\"bad\">dead</span>".to_string()
        } else {
            esc(j.state)
        };
        row(
            &mut h,
            &[
                &j.id.to_string(),
                &state,
                &esc(&j.key),
                &esc(&j.account),
                &j.attempts.to_string(),
                &esc(j.next_run.as_deref().unwrap_or("")),
                &esc(j.last_error.as_deref().unwrap_or("")),
                &button,
            ],
        );
    }
    h.push_str("</table>");

    h.push_str("<h2>Recent deliveries</h2><table><tr><th>id</th><th>received</th><th>account</th><th>kind</th><th>topic</th><th>resource</th><th>job</th></tr>");
    for d in &page.deliveries {
        row(
            &mut h,
            &[
                &d.id.to_string(),
                &esc(&d.received_at),
                &esc(&d.account),
                d.kind,
                &esc(&d.topic),
                &esc(&d.resource_id),
                &esc(d.job_key.as_deref().unwrap_or("(ignored)")),
            ],
        );
    }
    h.push_str("</table>");

    h.push_str("<h2>Recent events</h2><table><tr><th>id</th><th>type</th><th>subject</th><th>state</th><th>attempts</th><th>created</th><th>last error</th></tr>");
    for e in &page.events {
        row(
            &mut h,
            &[
                &esc(&e.id),
                &esc(&e.event_type),
                &esc(&e.subject),
                e.state,
                &e.attempts.to_string(),
                &esc(&e.created_at),
                &esc(e.last_error.as_deref().unwrap_or("")),
            ],
        );
    }
    h.push_str("</table></body></html>\n");
    h
}

fn row(h: &mut String, cells: &[&str]) {
    h.push_str("<tr>");
    for c in cells {
        let _ = write!(h, "<td>{c}</td>");
    }
    h.push_str("</tr>");
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<script>\"x\"&'"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;"
        );
    }
}
