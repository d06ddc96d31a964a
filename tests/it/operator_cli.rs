//! The command line a person uses, through the real binary: reads that
//! need no platform token, paths relative to the configuration file, pages
//! with a footer, colour only for a terminal, orders by state, each error
//! said once.

use std::path::Path;

use crate::helpers::*;
use crate::platform::FakeApi;

/// A configuration in `dir/conf/pointhook.toml` whose every path is
/// relative, and whose secret files do not exist.
fn relative_config(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("conf/data")).unwrap();
    std::fs::write(
        dir.join("conf/pointhook.toml"),
        "[storage]\npath = \"data/p.db\"\n[api]\nbase_url = \"http://127.0.0.1:1\"\n\
         [[accounts]]\nname = \"default\"\naccess_token_file = \"secrets/token\"\n\
         [fulfillment]\nurl = \"http://127.0.0.1:1/events\"\nsecret_file = \"secrets/whsec\"\n\
         [admin]\ntoken_file = \"secrets/admin\"\n",
    )
    .unwrap();
    "conf/pointhook.toml".into()
}

/// The reads and a person's actions open the store without the platform's
/// token (on the packaged install only root reads it); what calls the
/// platform, or serves, still needs it and says which file is missing.
#[test]
fn reads_need_no_platform_token() {
    let dir = tempfile::tempdir().unwrap();
    let config = relative_config(dir.path());
    let (ok, _, err) = cli_in(dir.path(), &["migrate", "--config", &config], &[]);
    assert!(ok, "{err}");
    for args in [
        &["jobs", "list"][..],
        &["deliveries", "list", "--kind", "reconcile"],
        &["events", "list"],
        &["fraud", "list", "--all"],
        &["orders", "list", "--state", "at_risk"],
        &["destinations", "list"],
        &["operators", "list"],
    ] {
        let mut args = args.to_vec();
        args.extend(["--config", &config]);
        let (ok, out, err) = cli_in(dir.path(), &args, &[]);
        assert!(ok, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        assert!(!out.is_empty(), "{args:?}");
    }
    for args in [
        &["check-config"][..],
        &["reconcile", "--since", "2026-01-01T00:00:00Z"],
    ] {
        let mut args = args.to_vec();
        args.extend(["--config", &config]);
        let (ok, _, err) = cli_in(dir.path(), &args, &[]);
        assert!(!ok, "{args:?}");
        assert!(
            err.contains("accounts[0].access_token_file")
                && err.contains(&dir.path().join("conf/secrets/token").display().to_string()),
            "{args:?}: {err}"
        );
    }
}

/// `--config sub/x.toml` (or `POINTHOOK_CONFIG`) means the same store from
/// any directory: its relative paths start where the file is.
#[test]
fn relative_paths_are_relative_to_the_configuration_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = relative_config(dir.path());
    let (ok, _, err) = cli_in(dir.path(), &["migrate", "--config", &config], &[]);
    assert!(ok, "{err}");
    assert!(dir.path().join("conf/data/p.db").exists());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let (ok, out, err) = cli_in(
        &elsewhere,
        &["jobs", "list", "--config", "../conf/pointhook.toml"],
        &[],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "(none)\n");
    let absolute = dir.path().join(&config).display().to_string();
    let (ok, out, err) = cli_in(
        &elsewhere,
        &["deliveries", "list"],
        &[("POINTHOOK_CONFIG", &absolute)],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "(none)\n");
    assert!(!elsewhere.join("data").exists());
    // A secret file beside the configuration is found there too.
    std::fs::create_dir(dir.path().join("conf/secrets")).unwrap();
    for (file, text) in [
        ("token", "tok"),
        (
            "whsec",
            "whsec_cG9pbnRob29rLWRlbW8tbWVyY2hhbnQtc2VjcmV0ISE=",
        ),
        ("admin", "an-admin-token-of-at-least-32-characters"),
    ] {
        std::fs::write(dir.path().join("conf/secrets").join(file), text).unwrap();
    }
    let (ok, out, err) = cli_in(&elsewhere, &["check-config", "--config", &absolute], &[]);
    assert!(ok, "{err}");
    let db = dir.path().join("conf/data/p.db").display().to_string();
    assert!(out.contains(&format!("path = {db:?}")), "{out}");
}

/// A store that is not there is said once: where, and why.
#[test]
fn an_error_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = relative_config(dir.path());
    let (ok, out, err) = cli_in(dir.path(), &["jobs", "list", "--config", &config], &[]);
    assert!(!ok && out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    let db = dir.path().join("conf/data/p.db").display().to_string();
    assert!(err.contains(&format!("no database at {db}")), "{err}");
    let parts: Vec<&str> = err.trim_end().split(": ").collect();
    let mut unique = parts.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), parts.len(), "a cause said twice: {err}");
}

/// Every list shows one page and says how many more there are and how to
/// see them; the last page says nothing; a page past 500 rows is refused
/// with the reason, never cut silently.
#[tokio::test]
async fn a_list_pages_with_a_footer() {
    let app = spawn_app().await;
    for id in 1..=7 {
        let query = format!("topic=merchant_order&id={id}");
        assert_eq!(app.post(&query, &[], None).await.status(), 200);
    }
    let ids = |out: &str| -> Vec<i64> {
        out.lines()
            .skip(1)
            .filter(|l| !l.contains(" more: "))
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect()
    };
    let (ok, out, err) = cli(&app, &["deliveries", "list", "--limit", "3"]);
    assert!(ok, "{err}");
    assert_eq!(ids(&out), [7, 6, 5], "{out}");
    assert_eq!(out.lines().last(), Some("4 more: --before 5"), "{out}");
    let (ok, out, err) = cli(
        &app,
        &["deliveries", "list", "--limit", "3", "--before", "5"],
    );
    assert!(ok, "{err}");
    assert_eq!(ids(&out), [4, 3, 2], "{out}");
    assert_eq!(out.lines().last(), Some("1 more: --before 2"), "{out}");
    let (ok, out, _) = cli(
        &app,
        &["deliveries", "list", "--limit", "3", "--before", "2"],
    );
    assert!(ok);
    assert_eq!(ids(&out), [1]);
    assert!(!out.contains("more"), "{out}");
    // A full last page has no footer either.
    let (ok, out, _) = cli(&app, &["deliveries", "list", "--limit", "7"]);
    assert!(ok && !out.contains("more"), "{out}");

    // Jobs page the same way, their cursor given whole.
    let (ok, out, err) = cli(&app, &["jobs", "list", "--limit", "4"]);
    assert!(ok, "{err}");
    let footer = out.lines().last().unwrap();
    let before = footer.strip_prefix("3 more: --before ").expect(&out);
    let (ok, out, err) = cli(&app, &["jobs", "list", "--limit", "4", "--before", before]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 4, "a header and the 3 left: {out}");

    // As JSON, stdout stays one array; the footer goes to stderr.
    let (ok, out, err) = cli(&app, &["deliveries", "list", "--limit", "2", "--json"]);
    assert!(ok);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(err, "5 more: --before 6\n");

    let (ok, _, err) = cli(&app, &["deliveries", "list", "--limit", "501"]);
    assert!(!ok && err.contains("1 to 500"), "{err}");
    app.stop().await;
}

/// States are coloured for a person at a terminal, never in a pipe, and
/// never under `NO_COLOR`.
#[tokio::test]
async fn states_are_coloured_only_where_they_show() {
    let app = spawn_app().await;
    app.post("topic=merchant_order&id=1", &[], None).await;
    let dir = app.config_path.parent().unwrap().to_path_buf();
    let config = app.config_path.display().to_string();
    let list = |env: &[(&str, &str)]| {
        let (ok, out, err) = cli_in(&dir, &["jobs", "list", "--config", &config], env);
        assert!(ok, "{err}");
        out
    };
    let yellow = "\u{1b}[33mpending\u{1b}[0m";
    assert!(list(&[("CLICOLOR_FORCE", "1")]).contains(yellow));
    let plain = list(&[]);
    assert!(
        plain.contains("pending") && !plain.contains('\u{1b}'),
        "{plain}"
    );
    let no_color = list(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!no_color.contains('\u{1b}'), "{no_color}");
    app.stop().await;
}

/// `orders list --state` lists the orders the console lists under that
/// state, and `--help` names every state.
#[tokio::test]
async fn orders_are_listed_by_state() {
    let api = FakeApi::start().await;
    let app = spawn_app_with(TestConfig::default().api(&api.uri())).await;
    api.order(
        "4945357007",
        "250",
        &[("23064274473", "250", "approved")],
        None,
    );
    app.post("topic=merchant_order&id=4945357007", &[], None)
        .await;
    app.run_jobs().await;
    let (ok, out, err) = cli(&app, &["orders", "list", "--state", "released"]);
    assert!(ok, "{err}");
    assert!(out.contains("4945357007") && out.contains("250"), "{out}");
    for state in ["blocked", "at_risk", "released_before_fraud_alert"] {
        let (ok, out, err) = cli(&app, &["orders", "list", "--state", state]);
        assert!(ok, "{err}");
        assert_eq!(out, "(none)\n", "{state}");
    }
    // Without a state: every order.
    let (ok, out, err) = cli(&app, &["orders", "list"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("4945357007") && out.contains("CHANGED"),
        "{out}"
    );
    let (_, help, _) = cli(&app, &["orders", "list", "--help"]);
    for state in [
        "released",
        "awaiting_shipment",
        "blocked",
        "at_risk",
        "released_before_fraud_alert",
    ] {
        assert!(help.contains(state), "{state}: {help}");
    }
    app.stop().await;
}

/// From a pipe, with no terminal to ask on, `operators add` says in one
/// line how to give the password instead.
#[test]
fn adding_an_operator_without_a_terminal_names_the_password_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config_with(dir.path(), "[api]\nbase_url = \"http://127.0.0.1:1\"\n");
    let (ok, _, err) = cli_in(
        dir.path(),
        &["migrate", "--config", config.to_str().unwrap()],
        &[],
    );
    assert!(ok, "{err}");
    // setsid: no controlling terminal, as under cron or a pipe in CI.
    let out = std::process::Command::new("setsid")
        .arg("--wait")
        .arg(env!("CARGO_BIN_EXE_pointhook"))
        .args(["operators", "add", "ana", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::piped())
        .output()
        .expect("util-linux setsid");
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--password-file"), "{err}");
    assert!(!err.contains("os error"), "{err}");
}

/// With no `$USER` (a unit, a container), the audit names the OS user by
/// its name, not its uid.
#[tokio::test]
async fn the_audit_names_the_os_user_by_name() {
    let app = spawn_app().await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"))
        .args(["jobs", "retry", "999", "--config"])
        .arg(&app.config_path)
        .env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("SUDO_USER")
        .output()
        .unwrap();
    assert!(!out.status.success(), "no job 999");
    let actor: String = app
        .db()
        .query_row("SELECT actor FROM audit", [], |r| r.get(0))
        .unwrap();
    assert!(!actor.starts_with("uid "), "{actor}");
    let uid = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let name = passwd
        .lines()
        .find(|l| l.split(':').nth(2) == Some(&uid.to_string()))
        .and_then(|l| l.split(':').next())
        .unwrap();
    assert_eq!(actor, name);
    app.stop().await;
}

/// The demo serves the console with a one-time operator, and every line
/// it prints to try by hand runs from the checkout it was started in.
#[tokio::test]
async fn the_demo_serves_the_console_and_its_lines_work_from_a_checkout() {
    use std::io::{BufRead, BufReader};
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut demo = std::process::Command::new(env!("CARGO_BIN_EXE_pointhook"));
    demo.arg("demo")
        .current_dir(checkout)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut demo = KillOnDrop(demo.spawn().unwrap());
    let stdout = demo.0.stdout.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let last = line.starts_with("Ctrl-C");
            lines.push(line);
            if last {
                break;
            }
        }
        lines
    });
    let lines = tokio::time::timeout(std::time::Duration::from_secs(300), lines)
        .await
        .expect("the demo gets to serving")
        .unwrap();
    let text = lines.join("\n");
    assert!(text.contains("scenarios passed"), "{text}");

    // The console, signed in as the operator it printed.
    let console = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("the operator console: "))
        .expect(&text);
    let (url, rest) = console.split_once(' ').unwrap();
    let password = rest
        .split("password ")
        .nth(1)
        .and_then(|p| p.split(';').next())
        .expect(&text);
    let mut browser = crate::console::Browser::at(url.trim_end_matches('/').to_string());
    browser.sign_in("demo", password).await;
    let (status, _, page) = browser.get("/").await;
    assert_eq!(status, 200);
    assert!(page.contains("Sign out"), "signed in: {page}");

    // The lines to try: the configuration exported, then the binary by
    // its path from the checkout.
    let config = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("export POINTHOOK_CONFIG="))
        .expect(&text)
        .to_string();
    let tries: Vec<String> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.contains("/pointhook ") && !l.starts_with("curl"))
        .map(str::to_string)
        .collect();
    assert!(tries.len() >= 3, "{text}");
    for line in tries {
        assert!(!line.starts_with("pointhook "), "{line}");
        let out = tokio::task::spawn_blocking({
            let (line, config) = (line.clone(), config.clone());
            move || {
                std::process::Command::new("sh")
                    .args(["-c", &line])
                    .current_dir(checkout)
                    .env("POINTHOOK_CONFIG", config)
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The README fits on a few screens, and its first screen names the
/// platform and gives the two commands (the demo test above and CI run
/// them).
#[test]
fn the_readme_fits_and_its_first_screen_says_what_and_how() {
    let readme = include_str!("../../README.md");
    assert!(readme.lines().count() <= 250, "README.md is too long");
    let first = readme.lines().take(45).collect::<Vec<_>>().join("\n");
    for must in [
        "Mercado Pago",
        "```sh\ncargo run --release -- demo\n```",
        "```sh\ncargo test\n```",
    ] {
        assert!(first.contains(must), "{must:?} on the first screen");
    }
}

/// Where stderr is not a terminal (a cron job, the journal), a long
/// command still says how far it is, in plain lines, with its total.
#[tokio::test]
async fn long_commands_say_how_far_they_are_in_plain_lines() {
    let app = spawn_app().await;
    for id in 1..=3 {
        app.post(&format!("topic=merchant_order&id={id}"), &[], None)
            .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db").display().to_string();
    let (ok, out, err) = cli(&app, &["backup", &copy]);
    assert!(ok, "{err}");
    assert!(out.starts_with("backed up "), "{out}");
    let line = err.lines().next().expect("a progress line");
    let (done, total) = line
        .strip_prefix("backing up: ")
        .and_then(|l| l.strip_suffix(" pages"))
        .and_then(|l| l.split_once(" of "))
        .expect(line);
    assert!(done.parse::<u64>().unwrap() <= total.parse::<u64>().unwrap());
    assert!(!err.contains('\u{1b}'), "no bar drawn: {err:?}");
    let (ok, out, err) = cli(&app, &["prune", "--older-than", "30d"]);
    assert!(ok, "{err}");
    assert_eq!(err, "pruning: 0 of 0 rows\n");
    assert!(out.starts_with("pruned 0 deliveries"), "{out}");
    app.stop().await;
}

/// `fraud show` gives the evidence and what confirming does, amount
/// included; `fraud confirm` says it again and, with nobody at a terminal
/// to ask, moves money only with `--yes`.
#[tokio::test]
async fn a_confirm_that_moves_money_says_how_much_and_needs_a_yes() {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};
    const ORDER: &str = "4945357007";
    const PAYMENT: &str = "23064274473";
    let api = FakeApi::start().await;
    let clock = Arc::new(pointhook_common::clock::ManualClock::new(SystemTime::now()));
    let app = spawn_app_with(TestConfig {
        accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                   webhook_secret = \"a-webhook-secret\"\n"
            .into(),
        ..TestConfig::default().api(&api.uri()).clock(clock.clone())
    })
    .await;
    // Half paid: not released, so the alert is held for a person.
    api.payment(PAYMENT, "approved", "250.00", Some(ORDER));
    api.order(ORDER, "500.00", &[(PAYMENT, "250.00", "approved")], None);
    app.post(&format!("topic=payment&id={PAYMENT}"), &[], None)
        .await;
    app.run_jobs().await;
    app.post_fixture(&fixture("ipn-fraud-alert.json")).await;
    app.run_jobs().await;
    let id = app.count("SELECT id FROM fraud_reviews").to_string();
    let refund = "refund 250.00 to the buyer; cannot be undone";

    let (ok, out, err) = cli(&app, &["fraud", "show", &id]);
    assert!(ok, "{err}");
    for seen in [PAYMENT, ORDER, "approved", "500.00", "held"] {
        assert!(out.contains(seen), "{seen}: {out}");
    }
    assert!(out.contains(&format!("if confirmed: {refund}")), "{out}");
    let (ok, out, _) = cli(&app, &["fraud", "show", &id, "--json"]);
    assert!(ok);
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["if_confirmed"]["undo"], "refund");
    assert_eq!(shown["if_confirmed"]["amount"], "250.00");

    let (ok, out, err) = cli(&app, &["fraud", "confirm", &id]);
    assert!(!ok && out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(refund) && err.contains("--yes"), "{err}");
    clock.advance(Duration::from_secs(60));
    app.run_jobs().await;
    assert!(api.changes().await.is_empty(), "nothing moved");

    let (ok, out, err) = cli(&app, &["fraud", "confirm", &id, "--yes"]);
    assert!(ok, "{err}");
    assert_eq!(out, format!("fraud review {id} confirmed: {refund}\n"));
    clock.advance(Duration::from_secs(60));
    app.run_jobs().await;
    let changes = api.changes().await;
    assert_eq!(changes.len(), 1, "one refund");
    assert_eq!(changes[0].1, format!("/v1/payments/{PAYMENT}/refunds"));
    app.stop().await;
}
