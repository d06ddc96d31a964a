//! Slow clients, floods and too many connections cannot take the endpoint.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::*;

#[tokio::test]
async fn the_rate_limit_answers_429_when_on() {
    let app =
        spawn_app_with(TestConfig::default().extra("[server]\nrate_limit_per_ip = 3\n")).await;
    let mut statuses = Vec::new();
    for i in 1..=6 {
        let res = app.post(&format!("topic=payment&id={i}"), &[], None).await;
        if res.status() == 429 {
            assert_eq!(res.headers()["retry-after"], "1");
        }
        statuses.push(res.status().as_u16());
    }
    assert_eq!(&statuses[..3], [200, 200, 200]);
    assert!(statuses[3..].contains(&429), "{statuses:?}");
    let (_, body) = answer(app.post("topic=payment&id=1", &[], None).await).await;
    assert_eq!(body["error"], "rate_limited");
    app.stop().await;
}

/// On by default, far above what one merchant's platform sends: an
/// ordinary burst passes.
#[tokio::test]
async fn the_rate_limit_is_on_by_default_far_above_real_traffic() {
    let config = pointhook::config::Config::from_toml(
        "[storage]\npath = \"x.db\"\n[api]\nbase_url = \"http://127.0.0.1:1\"\n\
         [[accounts]]\nname = \"default\"\naccess_token = \"t\"\n",
        Vec::new(),
    )
    .unwrap();
    assert_eq!(config.server.rate_limit_per_ip, 1000);
    let app = spawn_app().await;
    for i in 1..=50 {
        assert_eq!(
            app.post(&format!("topic=payment&id={i}"), &[], None)
                .await
                .status(),
            200
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let app =
        spawn_app_with(TestConfig::default().extra("[server]\nread_timeout_secs = 1\n")).await;
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(b"POST /notifications?topic=payment&id=1 HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    // Closed (or answered 408) by the server well before this test's own limit.
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
    let n = read
        .expect("server closes a slow-header connection")
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(n == 0 || text.starts_with("HTTP/1.1 408"), "{text}");
    app.stop().await;
}

#[tokio::test]
async fn a_body_that_never_arrives_is_408() {
    let app =
        spawn_app_with(TestConfig::default().extra("[server]\nread_timeout_secs = 1\n")).await;
    let response = raw_exchange(
        app.addr,
        b"POST /notifications?topic=payment&id=1 HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n{",
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(response.contains("read_timeout"), "{response}");
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 0);
    app.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let app = spawn_app_with(TestConfig::default().extra("[server]\nmax_connections = 1\n")).await;
    // One idle keep-alive connection holds the only slot.
    let mut holder = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    holder
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let n = holder.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));

    // A second connection gets through the kernel's backlog and sends its
    // request.
    let mut waiting = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    waiting
        .write_all(b"POST /notifications?topic=payment&id=1 HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
        .await
        .unwrap();
    // The server answers the holder again after that request was sent...
    holder
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let n = holder.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // ...and still has not taken the waiting connection.
    let mut early = [0u8; 1];
    assert!(
        matches!(waiting.try_read(&mut early), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "served beyond max_connections"
    );
    drop(holder);
    let n = tokio::time::timeout(Duration::from_secs(5), waiting.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(app.count("SELECT count(*) FROM deliveries"), 1);
    app.stop().await;
}

/// One address cannot hold every slot: past its cap a new connection is
/// closed at once, and a freed place can be taken again.
#[tokio::test]
async fn one_address_has_a_cap_on_open_connections() {
    let app =
        spawn_app_with(TestConfig::default().extra("[server]\nmax_connections_per_ip = 2\n")).await;
    let open = || async {
        let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 256];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .unwrap()
            .unwrap_or(0);
        (s, String::from_utf8_lossy(&buf[..n]).into_owned())
    };
    let (first, a) = open().await;
    let (_second, b) = open().await;
    assert!(a.starts_with("HTTP/1.1 200") && b.starts_with("HTTP/1.1 200"));
    let (_, c) = open().await;
    assert_eq!(c, "", "the third is closed unanswered");
    drop(first);
    // The place is freed once the server sees the close.
    wait_for("the freed place", async || {
        open().await.1.starts_with("HTTP/1.1 200")
    })
    .await;
    app.stop().await;
}
