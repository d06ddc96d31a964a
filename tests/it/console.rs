//! The operator console over real HTTP: sign-in and sessions, CSRF, the
//! audit (console, API, CLI), the operators CLI, the inbox, a review
//! confirmed with its second confirmation, the search and the timeline,
//! and paging.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pointhook_common::clock::ManualClock;
use reqwest::redirect::Policy;

use crate::helpers::*;
use crate::platform::*;

on_both_backends!(
    sign_in_opens_a_session_that_ends_on_sign_out_reset_and_idleness,
    every_action_needs_the_session_csrf_token,
    actions_are_audited_with_who_from_console_api_and_cli,
    the_inbox_shows_what_needs_a_person_and_says_when_nothing_does,
    a_held_review_is_confirmed_with_a_second_confirmation_naming_the_refund,
    an_order_is_found_by_its_payment_and_shows_its_timeline,
    lists_page_with_a_cursor,
    a_filter_past_the_scan_window_goes_on_where_it_stopped,
);

pub const TOKEN: &str = "admin-secret-for-the-console-tests";
pub const PASSWORD: &str = "a long enough password";

/// A browser without JavaScript: a session cookie and the forms' token.
pub struct Browser {
    pub base: String,
    http: reqwest::Client,
    cookie: Option<String>,
    pub csrf: String,
}

impl Browser {
    pub fn new(app: &TestApp) -> Browser {
        Browser::at(format!(
            "http://{}",
            app.admin_addr.expect("an admin listener")
        ))
    }

    /// A browser of the console at `base` (`http://HOST:PORT`).
    pub fn at(base: String) -> Browser {
        pointhook_common::tls::install_default_provider();
        Browser {
            base,
            http: reqwest::Client::builder()
                .redirect(Policy::none())
                .build()
                .unwrap(),
            cookie: None,
            csrf: String::new(),
        }
    }

    fn with_cookie(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.cookie {
            Some(c) => req.header("cookie", c),
            None => req,
        }
    }

    /// Status, location and body of a GET; keeps the page's form token.
    pub async fn get(&mut self, path: &str) -> (u16, String, String) {
        let res = self
            .with_cookie(self.http.get(format!("{}{path}", self.base)))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let location = header(&res, "location");
        let body = res.text().await.unwrap();
        if let Some(t) = form_token(&body) {
            self.csrf = t;
        }
        (status, location, body)
    }

    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.with_cookie(self.http.post(format!("{}{path}", self.base)))
            .form(form)
            .send()
            .await
            .unwrap()
    }

    /// Posts a form with the page's token and follows the redirect once.
    pub async fn act(&mut self, path: &str, form: &[(&str, &str)]) -> (u16, String) {
        let csrf = self.csrf.clone();
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(form);
        let res = self.post(path, &all).await;
        let status = res.status().as_u16();
        if status == 303 {
            let to = header(&res, "location");
            let (_, _, body) = self.get(&to).await;
            return (303, body);
        }
        (status, res.text().await.unwrap())
    }

    pub async fn sign_in(&mut self, name: &str, password: &str) -> reqwest::Response {
        let (status, _, _) = self.get("/login").await;
        assert_eq!(status, 200);
        let login_cookie = self.last_login_cookie().await;
        let csrf = self.csrf.clone();
        let res = self
            .http
            .post(format!("{}/login", self.base))
            .header("cookie", login_cookie)
            .form(&[("name", name), ("password", password), ("csrf", &csrf)])
            .send()
            .await
            .unwrap();
        if let Some(c) = set_cookie(&res, "pointhook_session") {
            self.cookie = Some(c);
        }
        res
    }

    async fn last_login_cookie(&mut self) -> String {
        let res = self
            .http
            .get(format!("{}/login", self.base))
            .send()
            .await
            .unwrap();
        let cookie = set_cookie(&res, "pointhook_login").expect("the login form sets a cookie");
        let body = res.text().await.unwrap();
        self.csrf = form_token(&body).unwrap();
        cookie
    }
}

fn header(res: &reqwest::Response, name: &str) -> String {
    res.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// `name=value` of the Set-Cookie named `name`.
fn set_cookie(res: &reqwest::Response, name: &str) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| v.split(';').next().unwrap().to_string())
}

pub fn form_token(html: &str) -> Option<String> {
    html.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .map(str::to_string)
}

pub async fn with_operator(app: &TestApp, name: &str) {
    let hash = pointhook::operators::hash(PASSWORD).unwrap();
    assert!(
        app.store
            .add_operator(name.into(), hash, pointhook_common::clock::unix_ms_now())
            .await
            .unwrap()
    );
}

/// An app with an admin listener and one operator, `ana`, signed in.
pub async fn signed_in(tc: TestConfig) -> (TestApp, Browser) {
    // The tests' clocks move hours at a time: sessions outlast them.
    let app = spawn_app_with(TestConfig {
        admin_token: Some(TOKEN.into()),
        admin: "session_idle_secs = 100000000".into(),
        ..tc
    })
    .await;
    with_operator(&app, "ana").await;
    let mut b = Browser::new(&app);
    let res = b.sign_in("ana", PASSWORD).await;
    assert_eq!(res.status(), 303);
    (app, b)
}

/// A dead job (the API refuses the merchant order) and its id.
async fn dead_job(api: &FakeApi, app: &TestApp, clock: &ManualClock, order: &str) -> i64 {
    dead_jobs(api, app, clock, &[order]).await[0]
}

/// Jobs that die together, of the same cause.
async fn dead_jobs(api: &FakeApi, app: &TestApp, clock: &ManualClock, orders: &[&str]) -> Vec<i64> {
    for order in orders {
        api.fail_next(&format!("/merchant_orders/{order}"), 1000, status(500))
            .await;
        app.post(&format!("topic=merchant_order&id={order}"), &[], None)
            .await;
    }
    for _ in 0..8 {
        app.run_jobs().await;
        clock.advance(Duration::from_secs(400));
    }
    orders
        .iter()
        .map(|order| {
            assert_eq!(
                app.job(&format!("merchant_order:{order}")).0,
                JobState::Dead
            );
            app.count(&format!(
                "SELECT id FROM jobs WHERE job_key = 'merchant_order:{order}'"
            ))
        })
        .collect()
}

async fn sign_in_opens_a_session_that_ends_on_sign_out_reset_and_idleness() {
    let app = spawn_app_with(TestConfig {
        admin_token: Some(TOKEN.into()),
        admin: "session_idle_secs = 600".into(),
        ..Default::default()
    })
    .await;
    with_operator(&app, "ana").await;
    let mut b = Browser::new(&app);
    // Not signed in: reads go to the sign-in page, writes are refused.
    let (status, location, _) = b.get("/jobs?state=dead").await;
    assert_eq!(
        (status, location.as_str()),
        (303, "/login?next=%2Fjobs%3Fstate%3Ddead")
    );
    assert_eq!(
        b.post("/jobs/1/retry", &[("csrf", "x")]).await.status(),
        401
    );
    // Basic credentials (the old status page's) open nothing.
    let res = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/", b.base))
        .basic_auth("ops", Some(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    // A wrong password, an unknown name.
    assert_eq!(b.sign_in("ana", "not the password").await.status(), 401);
    assert_eq!(b.sign_in("bob", PASSWORD).await.status(), 401);
    // The right one: a strict, script-proof cookie.
    let res = b.sign_in("ana", PASSWORD).await;
    assert_eq!(res.status(), 303);
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|v| v.starts_with("pointhook_session="))
        .unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    let (status, _, html) = b.get("/").await;
    assert_eq!(status, 200);
    assert!(html.contains("ana") && html.contains("Needs you"));
    // Signing out ends it.
    let csrf = b.csrf.clone();
    assert_eq!(b.post("/logout", &[("csrf", &csrf)]).await.status(), 303);
    assert_eq!(b.get("/").await.0, 303);
    // A new password ends every session of the operator.
    b.sign_in("ana", PASSWORD).await;
    assert_eq!(b.get("/").await.0, 200);
    let hash = pointhook::operators::hash("another long password").unwrap();
    assert!(
        app.store
            .reset_operator("ana".into(), hash, 0)
            .await
            .unwrap()
    );
    assert_eq!(b.get("/").await.0, 303);
    // A session unused past session_idle_secs ends.
    b.sign_in("ana", "another long password").await;
    assert_eq!(b.get("/").await.0, 200);
    app.sql
        .execute("UPDATE sessions SET seen_at = seen_at - 601000", &[]);
    assert_eq!(b.get("/").await.0, 303);
    assert_eq!(app.count("SELECT count(*) FROM sessions"), 0);
    app.stop().await;
}

async fn every_action_needs_the_session_csrf_token() {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri()).clock(clock.clone())).await;
    let job = dead_job(&api, &app, &clock, "777").await;
    let path = format!("/jobs/{job}/retry");
    assert_eq!(b.post(&path, &[]).await.status(), 403, "no token");
    assert_eq!(b.post(&path, &[("csrf", "forged")]).await.status(), 403);
    assert_eq!(app.job("merchant_order:777").0, JobState::Dead);
    // Another operator's token is not this session's.
    with_operator(&app, "bob").await;
    let mut other = Browser::new(&app);
    other.sign_in("bob", PASSWORD).await;
    other.get("/").await;
    assert_ne!(other.csrf, b.csrf);
    b.get("/").await;
    assert_eq!(b.post(&path, &[("csrf", &other.csrf)]).await.status(), 403);
    // A cross-site form, even with the token.
    let res = b
        .with_cookie(b.http.post(format!("{}{path}", b.base)))
        .header("sec-fetch-site", "cross-site")
        .form(&[("csrf", b.csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    // The page's own token works.
    let (status, html) = b.act(&path, &[]).await;
    assert_eq!(status, 303);
    assert!(html.contains("pending again"), "{html}");
    assert_eq!(app.job("merchant_order:777").0, JobState::Pending);
    app.stop().await;
}

async fn actions_are_audited_with_who_from_console_api_and_cli() {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri()).clock(clock.clone())).await;
    let first = dead_job(&api, &app, &clock, "701").await;
    let second = dead_job(&api, &app, &clock, "702").await;
    let third = dead_job(&api, &app, &clock, "703").await;
    b.get("/").await;
    b.act(&format!("/jobs/{first}/retry"), &[]).await;
    let (status, _) = app
        .admin("POST", &format!("/api/jobs/{second}/retry"), TOKEN)
        .await;
    assert_eq!(status, 200);
    let (ok, _, err) = cli_async(&app, &["jobs", "retry", &third.to_string()]).await;
    assert!(ok, "{err}");
    // A refusal is recorded too.
    let (status, _) = app
        .admin("POST", &format!("/api/jobs/{second}/retry"), TOKEN)
        .await;
    assert_eq!(status, 409);
    let (_, audit) = app.admin("GET", "/api/audit", TOKEN).await;
    let rows = audit.as_array().unwrap();
    let who: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|a| {
            (
                a["actor"].as_str().unwrap(),
                a["via"].as_str().unwrap(),
                a["item"].as_str().unwrap(),
                a["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_default();
    let second_item = format!("job:{second}");
    assert_eq!(who[0], ("api", "api", second_item.as_str(), "refused"));
    assert_eq!(who[1].1, "cli");
    if !user.is_empty() {
        assert_eq!(who[1].0, user);
    }
    assert_eq!(who[2], ("api", "api", second_item.as_str(), "done"));
    assert_eq!(
        who[3],
        ("ana", "console", format!("job:{first}").as_str(), "done")
    );
    assert!(
        rows[3]["detail"]
            .as_str()
            .unwrap()
            .contains("merchant_order:701")
    );
    // Shown on the item's page, on /audit and on the order's timeline.
    let (_, _, html) = b.get(&format!("/jobs/{first}")).await;
    assert!(html.contains("<strong>ana</strong>"), "{html}");
    let (_, _, html) = b.get("/audit").await;
    assert!(html.contains("<strong>api</strong>") && html.contains("<strong>ana</strong>"));
    let (_, _, html) = b.get("/orders/701").await;
    assert!(html.contains("class=\"action\""), "{html}");
    app.stop().await;
}

/// `operators add|list|remove|reset` through the real binary.
#[tokio::test]
async fn the_operators_cli_adds_lists_resets_and_removes() {
    let app = spawn_app_with(TestConfig {
        admin_token: Some(TOKEN.into()),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, format!("{PASSWORD}\nignored second line\n")).unwrap();
    let pw = pw.to_str().unwrap();
    let (ok, out, err) = cli_async(&app, &["operators", "add", "ana", "--password-file", pw]).await;
    assert!(ok, "{err}");
    assert!(out.contains("added"), "{out}");
    let (ok, _, err) = cli_async(&app, &["operators", "add", "ana", "--password-file", pw]).await;
    assert!(!ok && err.contains("exists already"), "{err}");
    let short = dir.path().join("short");
    std::fs::write(&short, "short\n").unwrap();
    let (ok, _, err) = cli_async(
        &app,
        &[
            "operators",
            "add",
            "bob",
            "--password-file",
            short.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!ok && err.contains("12 to 1024"), "{err}");
    let (ok, _, err) = cli_async(&app, &["operators", "add", "a b", "--password-file", pw]).await;
    assert!(!ok && err.contains("operator name"), "{err}");
    // The hash is argon2id, never the password.
    let stored = app
        .sql
        .value("SELECT password_hash FROM operators", &[])
        .text();
    assert!(stored.starts_with("$argon2id$") && !stored.contains(PASSWORD));
    let mut b = Browser::new(&app);
    assert_eq!(b.sign_in("ana", PASSWORD).await.status(), 303);
    let (ok, out, _) = cli_async(&app, &["operators", "list"]).await;
    assert!(
        ok && out.contains("ana") && out.contains("1 session(s)"),
        "{out}"
    );
    let new = dir.path().join("new");
    std::fs::write(&new, "a different long password\n").unwrap();
    let (ok, _, err) = cli_async(
        &app,
        &[
            "operators",
            "reset",
            "ana",
            "--password-file",
            new.to_str().unwrap(),
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(b.get("/").await.0, 303, "the reset ended the session");
    assert_eq!(b.sign_in("ana", PASSWORD).await.status(), 401);
    assert_eq!(
        b.sign_in("ana", "a different long password").await.status(),
        303
    );
    let (ok, _, err) = cli_async(&app, &["operators", "remove", "ana"]).await;
    assert!(ok, "{err}");
    assert_eq!(b.get("/").await.0, 303);
    let (ok, _, err) = cli_async(&app, &["operators", "remove", "ana"]).await;
    assert!(!ok && err.contains("no operator"), "{err}");
    app.stop().await;
}

async fn the_inbox_shows_what_needs_a_person_and_says_when_nothing_does() {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri()).clock(clock.clone())).await;
    let (_, _, html) = b.get("/").await;
    assert!(html.contains("Nothing needs you."), "{html}");
    dead_jobs(&api, &app, &clock, &["801", "802", "803"]).await;
    // A change reconciliation found with no notification.
    app.sql.execute(
        &format!(
            "INSERT INTO deliveries (received_at, account, kind, topic, resource_id, query,
                 headers, remote_addr, fingerprint, signature, job_key)
             VALUES (1, 'default', {}, 'payment', '99', '', '{{}}', '', $1, 0, 'payment:99')",
            pointhook::domain::Kind::Reconcile as i16
        ),
        &[SqlValue::Bytes(vec![1; 32])],
    );
    let (status, _, html) = b.get("/").await;
    assert_eq!(status, 200);
    assert!(!html.contains("Nothing needs you."));
    assert!(
        html.contains("3 dead: server error 500 on merchant_order"),
        "{html}"
    );
    assert!(html.contains("Retry all 3"));
    assert!(html.contains("Notifications the platform never sent (1)"));
    // Retry the group at once, then acknowledge the missed one.
    let hour = html
        .split("name=\"hour\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let (status, html) = b
        .act(
            "/jobs/retry-group",
            &[
                ("class", "server error 500"),
                ("endpoint", "merchant_order"),
                ("hour", &hour),
            ],
        )
        .await;
    assert_eq!(status, 303);
    assert!(html.contains("3 of 3 pending again"), "{html}");
    let missed = app.count("SELECT id FROM deliveries WHERE resource_id = '99'");
    let item = format!("missed:{missed}");
    let (status, html) = b.act("/acknowledge", &[("item", &item)]).await;
    assert_eq!(status, 303);
    assert!(html.contains("Nothing needs you."), "{html}");
    assert_eq!(
        app.count("SELECT count(*) FROM audit WHERE item LIKE 'job:%'"),
        3
    );
    app.stop().await;
}

const ORDER: &str = "4945357007";
const PAYMENT: &str = "23064274473";

/// A held alert on an approved payment of 250: its page says "refund
/// 250", the first confirm asks again naming it, the second runs it.
async fn a_held_review_is_confirmed_with_a_second_confirmation_naming_the_refund() {
    let api = FakeApi::start().await;
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let (app, mut b) = signed_in(TestConfig {
        accounts: format!(
            "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\nwebhook_secret = \"{SECRET}\"\n"
        ),
        ..TestConfig::default().api(&api.uri()).clock(clock.clone())
    })
    .await;
    // Half paid: not released, so the alert is held rather than too late.
    api.payment(PAYMENT, "approved", "250.00", Some(ORDER));
    api.order(ORDER, "500.00", &[(PAYMENT, "250.00", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    app.post_fixture(&fixture("ipn-fraud-alert.json")).await;
    app.run_jobs().await;
    let (_, _, html) = b.get("/").await;
    assert!(html.contains("Fraud alerts held for you (1)"), "{html}");
    assert!(
        html.contains("refund 250.00 to the buyer; cannot be undone"),
        "{html}"
    );
    let id = app.count("SELECT id FROM fraud_reviews");
    let path = format!("/fraud-reviews/{id}/confirm");
    let (status, html) = b.act(&path, &[]).await;
    assert_eq!(status, 200, "asks again");
    assert!(html.contains("Refund 250.00"), "{html}");
    assert!(api.changes().await.is_empty(), "nothing moved yet");
    let (status, html) = b.act(&path, &[("sure", "yes")]).await;
    assert_eq!(status, 303);
    assert!(html.contains("review-state\">confirmed"), "{html}");
    clock.advance(Duration::from_secs(60));
    app.run_jobs().await;
    let changes = api.changes().await;
    assert_eq!(changes.len(), 1, "one refund");
    assert_eq!(changes[0].1, format!("/v1/payments/{PAYMENT}/refunds"));
    let (_, _, html) = b.get(&format!("/fraud-reviews/{id}")).await;
    assert!(html.contains("<strong>ana</strong>"), "the audit shows who");
    app.stop().await;
}

async fn an_order_is_found_by_its_payment_and_shows_its_timeline() {
    let api = FakeApi::start().await;
    let (app, mut b) = signed_in(TestConfig::default().api(&api.uri())).await;
    api.payment(PAYMENT, "approved", "100", Some(ORDER));
    api.order(ORDER, "100", &[(PAYMENT, "100", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    let (status, location, _) = b.get(&format!("/search?q={PAYMENT}")).await;
    assert_eq!(status, 303);
    assert!(
        location.starts_with(&format!("/orders/{ORDER}?")),
        "{location}"
    );
    let (status, _, html) = b.get(&location).await;
    assert_eq!(status, 200);
    let timeline = html.split("id=\"timeline\"").nth(1).unwrap();
    let notification = timeline.find("<strong>Notification</strong>").unwrap();
    let call = timeline.find("<strong>API answer</strong>").unwrap();
    let decision = timeline.find("order.released").unwrap();
    assert!(
        notification < call && call < decision,
        "oldest first: {timeline}"
    );
    assert!(timeline.contains("payment.updated"));
    // The decision says why, in the rule's words, with what it read.
    assert!(
        timeline.contains(&format!(
            "<p class=\"reason\">paid 100.00 of 100.00 from payment {PAYMENT} approved 100.00"
        )),
        "{timeline}"
    );
    let (_, _, html) = b.get("/search?q=nothing-of-that-name").await;
    assert!(html.contains("nothing-found"));
    app.stop().await;
}

async fn lists_page_with_a_cursor() {
    let (app, mut b) = signed_in(TestConfig::default()).await;
    for i in 0..120 {
        app.post(&format!("topic=merchant_order&id={}", 1000 + i), &[], None)
            .await;
    }
    let mut seen = Vec::new();
    let mut path = "/deliveries".to_string();
    loop {
        let (status, _, html) = b.get(&path).await;
        assert_eq!(status, 200);
        seen.extend(
            html.split("<a href=\"/deliveries/")
                .skip(1)
                .map(|s| s.split('"').next().unwrap().parse::<i64>().unwrap()),
        );
        match html.split("<a href=\"/deliveries?").nth(1) {
            Some(rest) => path = format!("/deliveries?{}", rest.split('"').next().unwrap()),
            None => break,
        }
        path = path.replace("&amp;", "&");
    }
    assert_eq!(seen.len(), 120, "every delivery once");
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest first");
    // A filter: only ipn deliveries of one topic.
    let (_, _, html) = b.get("/deliveries?kind=webhook").await;
    assert!(html.contains("None here."));
    app.stop().await;
}

/// 25,000 webhook deliveries after five IPNs: a filter for the IPNs finds
/// none in the first 20,000 rows read, and its "Older" link goes on from
/// where that page stopped.
async fn a_filter_past_the_scan_window_goes_on_where_it_stopped() {
    let (app, mut b) = signed_in(TestConfig::default()).await;
    let series = match &app.sql {
        TestDb::Sqlite(_) => {
            "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 25005)
             SELECT i FROM s"
        }
        TestDb::Postgres(_) => "SELECT generate_series(1, 25005) AS i",
    };
    app.sql.execute(
        &format!(
            "INSERT INTO deliveries (received_at, account, kind, topic, resource_id, query,
                 headers, remote_addr, fingerprint, signature)
             SELECT i, 'default', CASE WHEN i <= 5 THEN 1 ELSE 2 END, 'payment',
                    CAST(i AS TEXT), '', '{{}}', '', $1, 0
             FROM ({series}) g"
        ),
        &[SqlValue::Bytes(vec![7; 32])],
    );
    let (status, _, html) = b.get("/deliveries?kind=ipn").await;
    assert_eq!(status, 200);
    assert!(html.contains("None here."), "nothing in the window");
    let next = html
        .split("<a href=\"/deliveries?")
        .nth(1)
        .expect("an Older link")
        .split('"')
        .next()
        .unwrap()
        .replace("&#38;", "&");
    assert!(
        next.contains("before=5006"),
        "where the window ended: {next}"
    );
    let (_, _, html) = b.get(&format!("/deliveries?{next}")).await;
    let main = html.split("<main").nth(1).unwrap_or("");
    assert_eq!(main.matches("<a href=\"/deliveries/").count(), 5, "{main}");
    app.stop().await;
}
