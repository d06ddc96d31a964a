//! Input: `METHOD " " PATH_AND_QUERY "\n" BODY` (no newline: the whole input
//! is the request line and the body is empty). A METHOD that is not one of
//! GET, POST, PUT, PATCH, DELETE picks one of them from its bytes (and then
//! the whole first line is the path); a path without a leading `/` gets one;
//! bytes that cannot stand in a request line are percent-encoded.
//!
//! Each input is one HTTP/1.1 request over a fresh TCP connection to a real
//! sandbox (in memory, manual clock, one account with token `fuzz`, a device
//! and webhook/IPN URLs at a closed port), with `Authorization: Bearer fuzz`
//! and an `x-idempotency-key`. The answer must be a well-formed HTTP
//! response, and no 5xx but 503; a panic in a connection task aborts the
//! process. The sandbox keeps state between inputs (what one request
//! creates, the next may read), so it is started anew every `RESTART_EVERY`
//! inputs and armed faults are cleared after each.
#![no_main]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use pointhook_common::clock::ManualClock;
use pointhook_sandbox::MailSettings;
use pointhook_sandbox::{AccountSpec, Sandbox, SandboxSettings};
use tokio_util::sync::CancellationToken;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const RESTART_EVERY: u64 = 2000;
const READ_TIMEOUT: Duration = Duration::from_secs(5);

struct Running {
    addr: SocketAddr,
    sandbox: Arc<Sandbox>,
    shutdown: CancellationToken,
    inputs: u64,
}

struct Harness {
    rt: tokio::runtime::Runtime,
    running: Mutex<Option<Running>>,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        // A panic in a connection task is caught by tokio; abort so libFuzzer
        // sees it as a crash.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            std::process::abort();
        }));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        Harness {
            rt,
            running: Mutex::new(None),
        }
    })
}

fn start(rt: &tokio::runtime::Runtime) -> Running {
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mail = std::env::temp_dir().join(format!("pointhook-fuzz-mail-{}", std::process::id()));
        let account = AccountSpec {
            name: "fuzz".into(),
            token: "fuzz".into(),
            // Port 1 on loopback: nothing listens, a dispatch fails at once.
            notification_url: Some("http://127.0.0.1:1/notifications".into()),
            webhook_url: Some("http://127.0.0.1:1/webhooks".into()),
            webhook_secret: Some("fuzz-secret".into()),
            email: Some("fuzz@example.test".into()),
            groups: None,
            devices: vec!["FUZZ_DEVICE__0001".into()],
        };
        let sandbox = Sandbox::new(
            SandboxSettings {
                time_scale: 1.0,
                state: None,
                accounts: vec![account],
                dispatch_loop: false,
                mail: MailSettings::Spool(mail),
                resend_first_signature: false,
                reach: pointhook_sandbox::Reach::Loopback,
            },
            Arc::new(ManualClock::new(SystemTime::now())),
            format!("http://{addr}"),
        )
        .await
        .expect("sandbox starts");
        let shutdown = CancellationToken::new();
        tokio::spawn(sandbox.clone().serve(listener, shutdown.clone()));
        Running {
            addr,
            sandbox,
            shutdown,
            inputs: 0,
        }
    })
}

/// Method, path-and-query (fit for a request line) and body of an input.
fn split(data: &[u8]) -> (&'static str, String, &[u8]) {
    let (line, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (method, target) = match line.iter().position(|&b| b == b' ') {
        Some(i) => match METHODS.iter().find(|m| m.as_bytes() == &line[..i]) {
            Some(m) => (*m, &line[i + 1..]),
            None => (pick(line), line),
        },
        None => (pick(line), line),
    };
    let mut path = String::with_capacity(target.len() + 1);
    if target.first() != Some(&b'/') {
        path.push('/');
    }
    for &b in target {
        if b.is_ascii_graphic() && b != b'#' {
            path.push(b as char);
        } else {
            path.push_str(&format!("%{b:02X}"));
        }
    }
    (method, path, body)
}

fn pick(line: &[u8]) -> &'static str {
    let h = line.iter().fold(0usize, |h, &b| h.wrapping_mul(31) ^ b as usize);
    METHODS[h % METHODS.len()]
}

fn request(addr: SocketAddr, method: &str, path: &str, body: &[u8], key: u64) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connect to the sandbox");
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(READ_TIMEOUT)).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer fuzz\r\n\
         x-idempotency-key: fuzz-{key}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    // The server may answer (and close) before reading the whole body.
    let _ = s.write_all(&req);
    let mut answer = Vec::new();
    match s.read_to_end(&mut answer) {
        Ok(_) => {}
        // Reset after an early answer: what arrived is still the answer.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !answer.is_empty() => {}
        Err(e) => panic!("{method} {path}: no answer within {READ_TIMEOUT:?} ({e}); got {:?}",
            String::from_utf8_lossy(&answer)),
    }
    answer
}

/// The status of a well-formed HTTP/1.1 response (panics if it is not one).
fn status(answer: &[u8], method: &str, path: &str) -> u16 {
    let text = String::from_utf8_lossy(answer);
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("{method} {path}: no end of headers in {text:?}"));
    let head = &text[..head_end.min(text.len())];
    let status_line = head.lines().next().unwrap_or("");
    let code = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .filter(|c| c.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("{method} {path}: bad status line {status_line:?}"));
    for h in head.lines().skip(1) {
        assert!(h.contains(':'), "{method} {path}: bad header line {h:?}");
    }
    code.parse().unwrap()
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    let mut running = h.running.lock().unwrap();
    if running.as_ref().is_none_or(|r| r.inputs >= RESTART_EVERY) {
        if let Some(old) = running.take() {
            old.shutdown.cancel();
        }
        *running = Some(start(&h.rt));
    }
    let r = running.as_mut().unwrap();
    r.inputs += 1;
    let (method, path, body) = split(data);
    let answer = request(r.addr, method, &path, body, r.inputs);
    let code = status(&answer, method, &path);
    // Faults armed through /sandbox/faults answer with the status they name
    // (a 500 on purpose); they apply to later calls only, so clear them here.
    r.sandbox.faults().clear();
    r.sandbox.faults().set_read_delay(Duration::ZERO);
    assert!(
        code < 500 || code == 503,
        "{method} {path} answered {code}: {}",
        String::from_utf8_lossy(&answer)
    );
});
