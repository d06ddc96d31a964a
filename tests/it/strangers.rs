//! The admin listener against strangers, over real HTTP: a request naming
//! another `Host` (DNS rebinding) is answered 421 before anything else is
//! read; a flood of wrong passwords from one address never keeps the
//! right password from another address out; `next` and `back` never lead
//! off the listener (nor to a 500); a stalled body is answered 408 and
//! frees its connection.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::redirect::Policy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::console::{Browser, PASSWORD, form_token, with_operator};
use crate::helpers::*;

const TOKEN: &str = "admin-secret-for-the-stranger-tests";

async fn console(extra: &str) -> TestApp {
    console_with(extra, "").await
}

/// With `admin`: more keys of `[admin]`.
async fn console_with(extra: &str, admin: &str) -> TestApp {
    let app = spawn_app_with(
        TestConfig {
            admin_token: Some(TOKEN.into()),
            admin: admin.into(),
            ..TestConfig::default()
        }
        .extra(extra),
    )
    .await;
    with_operator(&app, "alice").await;
    app
}

/// Writes `request` whole and reads the answer until the server closes or
/// `within` passes.
async fn exchange(addr: SocketAddr, request: &[u8], within: Duration) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(within, stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_foreign_host_is_answered_421_before_its_body_is_read() {
    let app = console("").await;
    let addr = app.admin_addr.unwrap();
    let port = addr.port();
    // The rebinding page's request: its own name in Host and Origin, a
    // body announced and never sent. Answered at once, not after a wait.
    let started = Instant::now();
    let answer = exchange(
        addr,
        format!(
            "POST /login HTTP/1.1\r\nhost: rebind.evil.example:{port}\r\norigin: http://rebind.evil.example:{port}\r\n\
             content-type: application/x-www-form-urlencoded\r\ncontent-length: 100\r\nconnection: close\r\n\r\nname=a"
        )
        .as_bytes(),
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 421"), "{answer}");
    assert!(answer.contains("misdirected_request"), "{answer}");
    assert!(
        !answer.to_ascii_lowercase().contains("set-cookie"),
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    for host in [
        "evil.example".to_string(),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        format!("evil.example@127.0.0.1:{port}"),
    ] {
        let answer = exchange(
            addr,
            format!("GET /metrics HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {TOKEN}\r\nconnection: close\r\n\r\n").as_bytes(),
            Duration::from_secs(5),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 421"), "{host}: {answer}");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
    ] {
        let answer = exchange(
            addr,
            format!("GET /login HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n").as_bytes(),
            Duration::from_secs(5),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{host}: {answer}");
    }
    // The browser's own requests (reqwest names 127.0.0.1:PORT) sign in.
    let mut b = Browser::new(&app);
    assert_eq!(b.sign_in("alice", PASSWORD).await.status(), 303);
    app.stop().await;
}

#[tokio::test]
async fn public_urls_host_is_answered_too() {
    let app = console_with("", "public_url = \"https://console.shop.example\"").await;
    let addr = app.admin_addr.unwrap();
    let answer = exchange(
        addr,
        b"GET /login HTTP/1.1\r\nhost: console.shop.example\r\nconnection: close\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    app.stop().await;
}

/// A client of the console from `from` (127.0.0.2: a stranger on the
/// same machine).
fn client_from(from: &str) -> reqwest::Client {
    pointhook_common::tls::install_default_provider();
    reqwest::Client::builder()
        .redirect(Policy::none())
        .local_address(from.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// The sign-in form's cookie and token, for a client that posts many.
async fn login_form(http: &reqwest::Client, base: &str) -> (String, String) {
    let res = http.get(format!("{base}/login")).send().await.unwrap();
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("pointhook_login="))
        .map(|v| v.split(';').next().unwrap().to_string())
        .unwrap();
    let token = form_token(&res.text().await.unwrap()).unwrap();
    (cookie, token)
}

#[tokio::test]
async fn a_flood_from_one_address_never_keeps_the_right_password_out() {
    let app = console("").await;
    let base = format!("http://{}", app.admin_addr.unwrap());
    // The right password with nobody else signing in, for comparison.
    let started = Instant::now();
    assert_eq!(
        Browser::new(&app).sign_in("alice", PASSWORD).await.status(),
        303
    );
    let alone = started.elapsed();
    let stranger = client_from("127.0.0.2");
    let (cookie, token) = login_form(&stranger, &base).await;
    let sent = Arc::new(AtomicUsize::new(0));
    let checked = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let until = Instant::now() + Duration::from_secs(4);
    // Three connections' worth of wrong guesses, for alice and for a name
    // that does not exist, bounded in time and in count.
    let flood: Vec<_> = (0..3)
        .map(|i| {
            let (http, base, cookie, token) = (
                stranger.clone(),
                base.clone(),
                cookie.clone(),
                token.clone(),
            );
            let (sent, checked, refused) = (sent.clone(), checked.clone(), refused.clone());
            tokio::spawn(async move {
                let name = if i == 0 { "alice" } else { "nobody" };
                while Instant::now() < until && sent.load(Ordering::Relaxed) < 20_000 {
                    sent.fetch_add(1, Ordering::Relaxed);
                    let res = http
                        .post(format!("{base}/login"))
                        .header("cookie", &cookie)
                        .form(&[
                            ("name", name),
                            ("password", "wrong guess"),
                            ("csrf", &token),
                        ])
                        .send()
                        .await
                        .unwrap();
                    match res.status().as_u16() {
                        401 => checked.fetch_add(1, Ordering::Relaxed),
                        429 => refused.fetch_add(1, Ordering::Relaxed),
                        other => panic!("the flood was answered {other}"),
                    };
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut latencies = Vec::new();
    for _ in 0..3 {
        let mut alice = Browser::new(&app);
        let started = Instant::now();
        let res = alice.sign_in("alice", PASSWORD).await;
        latencies.push(started.elapsed());
        assert_eq!(res.status(), 303, "alice refused during the flood");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for f in flood {
        f.await.unwrap();
    }
    let (sent, checked, refused) = (
        sent.load(Ordering::Relaxed),
        checked.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
    );
    eprintln!(
        "flood from 127.0.0.2: {sent} attempts sent in 4 s, {checked} checked (401), {refused} refused (429); \
         alice from 127.0.0.1 signed in 3 of 3, in {latencies:?} (alone: {alone:?})"
    );
    assert!(refused > 0 && checked > 0, "{sent} {checked} {refused}");
    assert!(
        checked < 100,
        "a flood is not checked as fast as it is sent: {checked}"
    );
    // Refusals are counted, by reason.
    let metrics = app
        .client
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("pointhook_console_sign_in_refusals_total{reason=\"address\"}"),
        "{metrics}"
    );
    // Four wrong passwords for alice from one address: that address waits
    // before its next try at her name, even with the right password, and
    // she still signs in from hers.
    let guesser = client_from("127.0.0.3");
    let (cookie, token) = login_form(&guesser, &base).await;
    let attempt = async |password: &str| {
        guesser
            .post(format!("{base}/login"))
            .header("cookie", &cookie)
            .form(&[("name", "alice"), ("password", password), ("csrf", &token)])
            .send()
            .await
            .unwrap()
    };
    for _ in 0..4 {
        assert_eq!(attempt("wrong guess").await.status(), 401);
    }
    let res = attempt(PASSWORD).await;
    assert_eq!(res.status(), 429);
    assert!(res.headers().contains_key("retry-after"));
    let mut alice = Browser::new(&app);
    assert_eq!(alice.sign_in("alice", PASSWORD).await.status(), 303);
    app.stop().await;
}

#[tokio::test]
async fn next_and_back_never_lead_off_the_listener() {
    let app = console("").await;
    for next in [
        "/\t/evil.example/",
        "/\r\n/evil.example/",
        "/\n\rSet-Cookie: x=1",
        "/\\evil.example/",
        "\\\\evil.example/",
        "//evil.example/",
        "https://evil.example/",
        "/ /evil.example",
    ] {
        let mut b = Browser::new(&app);
        let (status, _, page) = b
            .get(&format!(
                "/login?next={}",
                form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
            ))
            .await;
        assert_eq!(status, 200);
        assert!(!page.contains("evil.example"), "{next:?} kept in the form");
        // The form posts `next` as given, whatever the page kept.
        let (cookie, token) = login_form(&client_from("127.0.0.1"), &b.base).await;
        let res = client_from("127.0.0.1")
            .post(format!("{}/login", b.base))
            .header("cookie", cookie)
            .form(&[
                ("name", "alice"),
                ("password", PASSWORD),
                ("csrf", token.as_str()),
                ("next", next),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303, "{next:?}");
        assert_eq!(res.headers()["location"], "/", "{next:?}");
    }
    // A path of the listener is followed.
    let mut b = Browser::new(&app);
    b.sign_in("alice", PASSWORD).await;
    let (status, _, _) = b.get("/").await;
    assert_eq!(status, 200);
    for (back, to) in [
        ("/\t/evil.example/", "/?done="),
        ("/\r\nx", "/?done="),
        ("//evil.example", "/?done="),
        ("/\\evil.example", "/?done="),
        ("https://evil.example/", "/?done="),
        ("/orders?state=at_risk", "/orders?done="),
    ] {
        let csrf = b.csrf.clone();
        let res = b
            .post(
                "/acknowledge",
                &[
                    ("csrf", csrf.as_str()),
                    ("item", "missed:1"),
                    ("back", back),
                ],
            )
            .await;
        assert_eq!(res.status(), 303, "{back:?}");
        let location = res.headers()["location"].to_str().unwrap().to_string();
        assert!(location.starts_with(to), "{back:?} → {location}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_stalled_body_is_answered_408_and_cannot_hold_the_listener() {
    let app = console("[server]\nread_timeout_secs = 1\nmax_connections = 4\n").await;
    let addr = app.admin_addr.unwrap();
    let host = format!("127.0.0.1:{}", addr.port());
    let stall = format!(
        "POST /login HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/x-www-form-urlencoded\r\n\
         content-length: 100\r\n\r\nname=a"
    );
    let started = Instant::now();
    let answer = exchange(addr, stall.as_bytes(), Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("read_timeout"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // As many stalled requests as there are connection slots: /login still
    // answers, once their time is up.
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(stall.as_bytes()).await.unwrap();
        held.push(s);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let answer = exchange(
        addr,
        format!("GET /login HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n").as_bytes(),
        Duration::from_secs(8),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    drop(held);
    app.stop().await;
}
