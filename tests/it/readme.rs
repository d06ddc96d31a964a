//! The README's and docs' commands, run as written so they stay true: the
//! README's shell blocks (all but `demo` and `cargo test`, which CI runs
//! anyway) with the built binary for `cargo run --release --`, in a copy of
//! the checkout's `sample-config.toml`, on free ports given through the
//! environment; and every `pointhook` command docs/cli.md and
//! docs/deploy.md name, checked against the binary's own `--help`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::KillOnDrop;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BIN: &str = env!("CARGO_BIN_EXE_pointhook");
const RUN: &str = "cargo run --release -- ";

/// The lines of every ```sh block of a Markdown file, continuations joined,
/// comments cut.
fn shell_lines(markdown: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    let mut pending = String::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            inside = !inside && line.trim() == "```sh";
            continue;
        }
        if !inside {
            continue;
        }
        let line = match line.find(" #") {
            Some(i) => &line[..i],
            None => line,
        };
        match line.trim_end().strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line.trim_end());
                if !pending.trim().is_empty() {
                    lines.push(pending.trim().to_string());
                }
                pending.clear();
            }
        }
    }
    lines
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What the README's commands need to run side by side with other tests:
/// their ports, from the environment, nothing from the caller's shell.
fn command(dir: &Path, args: &[&str], env: &[(String, String)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(dir);
    for k in ["POINTHOOK_CONFIG", "RUST_LOG", "POINTHOOK_SANDBOX_TOKEN"] {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// Runs `args` to the end in at most 60 s: (success, stdout, stderr).
fn run(dir: &Path, args: &[&str], env: &[(String, String)]) -> (bool, String, String) {
    let child = command(dir, args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => {
            let out = out.unwrap();
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("`pointhook {}` did not finish in 60 s", args.join(" "));
        }
    }
}

/// Starts a command that keeps serving and waits until `ready` is printed
/// (stdout or stderr), at most 30 s.
fn start(dir: &Path, args: &[&str], env: &[(String, String)], ready: &str) -> KillOnDrop {
    let mut child = command(dir, args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let child = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(ready) => return child,
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    panic!(
        "`pointhook {}` never said {ready:?}:\n{}",
        args.join(" "),
        seen.join("\n")
    );
}

/// `operators add` asks for a password on a terminal: typed there (util-linux
/// `script` gives it one), twice.
fn on_a_terminal(dir: &Path, args: &[&str], env: &[(String, String)], input: &str) -> String {
    use std::io::Write;
    let line = format!("{BIN} {}", args.join(" "));
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("POINTHOOK_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux script, for a pseudo-terminal");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_readme_runs_as_written() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(ROOT).join("sample-config.toml"),
        dir.path().join("sample-config.toml"),
    )
    .unwrap();
    let (sandbox, server) = (free_port(), free_port());
    let env: Vec<(String, String)> = [
        ("POINTHOOK_SANDBOX_LISTEN", format!("127.0.0.1:{sandbox}")),
        (
            "POINTHOOK_SANDBOX_URL",
            format!("http://127.0.0.1:{sandbox}"),
        ),
        (
            "POINTHOOK_SANDBOX_NOTIFICATION_URL",
            format!("http://127.0.0.1:{server}/notifications"),
        ),
        ("POINTHOOK_SERVER_LISTEN", format!("127.0.0.1:{server}")),
        (
            "POINTHOOK_API_BASE_URL",
            format!("http://127.0.0.1:{sandbox}"),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();

    let mut running = Vec::new();
    let mut ran = Vec::new();
    for line in shell_lines(&readme) {
        if line == "cargo test" || line == "cargo run --release -- demo" {
            continue;
        }
        let rest = line
            .strip_prefix(RUN)
            .unwrap_or_else(|| panic!("a README command not run through the binary: {line}"));
        assert!(
            !rest.contains(['"', '\'', '$', '|', '>']),
            "the README's commands are plain words: {line}"
        );
        let args: Vec<&str> = rest.split_whitespace().collect();
        let dir = dir.path();
        match args.as_slice() {
            ["sandbox", flag, ..] if flag.starts_with("--") => {
                running.push(start(dir, &args, &env, "sandbox listening on"));
            }
            ["serve", ..] => {
                running.push(start(dir, &args, &env, "pointhook serving"));
            }
            ["operators", "add", ..] => {
                let shown = on_a_terminal(
                    dir,
                    &args,
                    &env,
                    "a long enough password\n".repeat(2).as_str(),
                );
                assert!(shown.contains("operator ana added"), "{line}: {shown}");
            }
            ["deliveries", "list", ..] => {
                // The trigger's notification comes a moment after its payment.
                let deadline = Instant::now() + Duration::from_secs(20);
                loop {
                    let (ok, out, err) = run(dir, &args, &env);
                    assert!(ok, "{line}: {out}{err}");
                    if out.contains("payment") {
                        break;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "{line}: the sandbox's notification never arrived: {out}"
                    );
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
            _ => {
                let (ok, out, err) = run(dir, &args, &env);
                assert!(ok, "{line}:\n{out}{err}");
            }
        }
        ran.push(args[0].to_string());
    }
    for needed in [
        "sandbox",
        "serve",
        "check-config",
        "operators",
        "deliveries",
    ] {
        assert!(
            ran.iter().any(|r| r == needed),
            "the README runs `{needed}`: {ran:?}"
        );
    }
    drop(running);
}

/// The sandbox started as the README starts it notifies where `serve`
/// listens with the sample configuration.
#[test]
fn the_sandbox_notifies_where_the_sample_configuration_listens() {
    let sample: toml::Value = toml::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("sample-config.toml")).unwrap(),
    )
    .unwrap();
    let expected = format!(
        "notifications to http://{}{}",
        sample["server"]["listen"].as_str().unwrap(),
        sample["server"]["path"].as_str().unwrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let env = vec![(
        "POINTHOOK_SANDBOX_LISTEN".to_string(),
        "127.0.0.1:0".to_string(),
    )];
    let _sandbox = start(
        dir.path(),
        &["sandbox", "--token", "TEST-sandbox-token"],
        &env,
        &expected,
    );
}

/// A documented command's words and flags, as `pointhook … --help` knows
/// them: (the command's words, the flags named).
fn synopsis(line: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    let mut path: Vec<Vec<String>> = vec![Vec::new()];
    let mut flags = Vec::new();
    let mut in_path = true;
    for w in words {
        let bare = w.trim_matches(|c| c == '[' || c == ']');
        if in_path
            && bare
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-' || c == '|')
            && !bare.starts_with('-')
            && !bare.is_empty()
        {
            // `destinations list|show`: one command each.
            let alternatives: Vec<&str> = bare.split('|').collect();
            path = path
                .iter()
                .flat_map(|p| {
                    alternatives.iter().map(move |a| {
                        let mut p = p.clone();
                        p.push(a.to_string());
                        p
                    })
                })
                .collect();
            continue;
        }
        in_path = false;
        for part in bare.split('|') {
            if let Some(flag) = part.strip_prefix("--") {
                let flag = flag.split('=').next().unwrap_or(flag);
                flags.push(format!("--{flag}"));
            }
        }
    }
    path.into_iter().map(|p| (p, flags.clone())).collect()
}

#[test]
fn the_docs_commands_exist_with_their_flags() {
    let mut checked = 0;
    for doc in ["docs/cli.md", "docs/deploy.md"] {
        let text = std::fs::read_to_string(Path::new(ROOT).join(doc)).unwrap();
        for line in shell_lines(&text) {
            let line = line.trim_start_matches("sudo ");
            if !line.starts_with("pointhook ") || line.split_whitespace().any(|w| w == "…") {
                continue;
            }
            for (words, flags) in synopsis(line) {
                // A value the synopsis names in lower case (`prune --older-than 30d`)
                // ends the words: keep only the leading commands `--help` accepts.
                let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
                let help = loop {
                    let mut with = args.clone();
                    with.push("--help");
                    let out = Command::new(BIN).args(&with).output().unwrap();
                    if out.status.success() || args.is_empty() {
                        break String::from_utf8_lossy(&out.stdout).into_owned();
                    }
                    args.pop();
                };
                assert!(!args.is_empty(), "{doc}: `{line}` is no command");
                for flag in &flags {
                    assert!(
                        help.contains(flag.as_str()),
                        "{doc}: `{line}`: `pointhook {}` has no {flag}",
                        args.join(" ")
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "{checked} commands checked");
}
