//! The real binary's configuration commands: one clear line and exit 64 for
//! any bad configuration, secrets masked when printed.

use std::process::{Command, Output};

fn pointhook(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pointhook"));
    cmd.args(args).env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn write(dir: &tempfile::TempDir, text: &str) -> String {
    let path = dir.path().join("c.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const GOOD: &str = "[storage]\npath = \"x.db\"\n[api]\nbase_url = \"http://127.0.0.1:1\"\n\
                    [[accounts]]\nname = \"default\"\naccess_token = \"super-secret\"\n";

#[test]
fn check_config_prints_the_effective_config_with_secrets_masked() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, GOOD);
    let out = pointhook(&["check-config", "--config", &path], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("super-secret"), "{text}");
    assert!(
        text.contains("max_body_bytes = 65536"),
        "defaults shown: {text}"
    );
    assert!(text.contains("access_token = \"***\""), "{text}");
}

#[test]
fn the_sample_config_checks() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-config.toml");
    let out = pointhook(&["check-config", "--config", sample], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_configuration_is_one_line_and_exit_64() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "[api]\nbase_url = \"http://x\"\n[[accounts]]\nname=\"a\"\naccess_token=\"t\"\n",
            "storage",
        ),
        (&GOOD.replace("http://127.0.0.1:1", "::"), "api.base_url"),
        (
            &format!("{GOOD}[server]\nlisten = \"nowhere\"\n"),
            "server.listen",
        ),
        (&format!("{GOOD}[server]\ncolour = 1\n"), "server.colour"),
        (
            &GOOD.replace("access_token = \"super-secret\"", ""),
            "accounts[0].access_token",
        ),
        ("this is = not toml [", "config"),
        (
            &format!("{GOOD}[admin]\ntoken = \"0123456789abcdef0123456789abcde\"\n"),
            "admin.token",
        ),
    ];
    for (text, key) in cases {
        let path = write(&dir, text);
        for command in ["check-config", "serve", "migrate"] {
            let out = pointhook(&[command, "--config", &path], &[]);
            assert_eq!(out.status.code(), Some(64), "{command} {key}");
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
            assert!(stderr.contains(key), "{key} named in: {stderr}");
        }
    }
    let out = pointhook(&["serve", "--config", "/nonexistent/pointhook.toml"], &[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/pointhook.toml"));
}

/// A line TOML cannot read may hold a token: the error names where it is
/// (line and column), never what it says, on stderr and so in the journal.
#[test]
fn a_toml_syntax_error_names_the_place_not_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{GOOD}[admin]\ntoken = \"tok-4f9a1c-secret\" extra\n");
    let path = write(&dir, &text);
    let out = pointhook(&["check-config", "--config", &path], &[]);
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let line = text.lines().count();
    assert!(
        stderr.contains(&format!("line {line}, column 29")),
        "{stderr}"
    );
    assert!(!stderr.contains("4f9a1c"), "the line is echoed: {stderr}");
    assert!(!stderr.contains("extra"), "the line is echoed: {stderr}");
}

#[test]
fn environment_overrides_are_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, GOOD);
    let out = pointhook(
        &["check-config", "--config", &path],
        &[("POINTHOOK_SERVER_LISTEN", "127.0.0.1:7777")],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("127.0.0.1:7777"));
    let out = pointhook(
        &["check-config", "--config", &path],
        &[("POINTHOOK_SERVER_LISTEN", "bad")],
    );
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("server.listen"));
}

#[test]
fn migrate_creates_the_schema_and_is_repeatable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let path = write(&dir, &GOOD.replace("x.db", &db.display().to_string()));
    for _ in 0..2 {
        let out = pointhook(&["migrate", "--config", &path], &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("schema version"));
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let path = write(
        &dir,
        &format!(
            "{}[server]\nlisten = \"{}\"\n",
            GOOD.replace("x.db", &db.display().to_string()),
            taken.local_addr().unwrap()
        ),
    );
    let out = pointhook(&["serve", "--config", &path], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("cannot listen"), "{stderr}");
}

/// `check-config` (and `serve`) say out loud what is most likely a mistake.
#[test]
fn likely_mistakes_are_warned_of_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        &GOOD.replace("super-secret", "TEST-1234").replace(
            "http://127.0.0.1:1",
            "http://user:s3cr3t-pw-9@api.example.com/?k=v",
        ),
    );
    let out = pointhook(&["check-config", "--config", &path], &[]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("WARNING") && err.contains("TEST- access token"),
        "{err}"
    );
    assert!(err.contains("plain http"), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    // A password no temporary path can hold by chance (`/tmp/.tmpwB…`
    // once held "pw").
    assert!(
        !text.contains("s3cr3t-pw-9") && !text.contains("k=v"),
        "{text}"
    );
    assert!(!err.contains("s3cr3t-pw-9"), "{err}");
}

/// The sandbox accepts made-up tokens: it serves loopback unless told.
#[test]
fn the_sandbox_refuses_a_public_address_without_public() {
    let out = pointhook(&["sandbox", "--listen", "0.0.0.0:0"], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--public"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `since` that would overflow is refused, not wrapped.
#[test]
fn a_since_too_far_away_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        &GOOD.replace("x.db", &dir.path().join("x.db").display().to_string()),
    );
    assert!(
        pointhook(&["migrate", "--config", &path], &[])
            .status
            .success()
    );
    let out = pointhook(
        &[
            "deliveries",
            "list",
            "--since",
            "9223372036854775807",
            "--config",
            &path,
        ],
        &[],
    );
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--since"), "{err}");
}

/// A `RUST_LOG` the filter parser would panic on (found by fuzzing the same
/// parser through `log.level`) is ignored: the service starts.
#[test]
fn a_rust_log_that_is_not_ascii_does_not_stop_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        &("[server]\nlisten = \"127.0.0.1:0\"\n".to_string()
            + &GOOD.replace(
                "path = \"x.db\"",
                &format!("path = {:?}", dir.path().join("x.db").display().to_string()),
            )),
    );
    let mut served =
        crate::helpers::serve_binary(std::path::Path::new(&path), &[("RUST_LOG", " [s{é}]")]);
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(served.addr).unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "it serves: {answer}");
    }
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "still running with that RUST_LOG"
    );
    served.child.kill().unwrap();
    served.child.wait().unwrap();
}
