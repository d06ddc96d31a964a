//! Finding the official SDKs and running the scripts of `tests/sdk/` with
//! them, for the tests of both the sandbox's crate and pointhook (each
//! includes this file with `#[path]`). An SDK that is not installed skips
//! its test with one line, unless `POINTHOOK_TEST_SDK_REQUIRED=1` (as
//! `.ci/run` sets it), which fails it instead.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// The workspace's root: the nearest folder above the crate with a
/// `Cargo.lock`.
pub fn workspace() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("Cargo.lock").exists())
        .unwrap_or(&here)
        .to_path_buf()
}

/// A script of `tests/sdk/`.
pub fn script(name: &str) -> PathBuf {
    workspace().join("tests/sdk").join(name)
}

/// `path` when it exists; else `None` after one line, or a failure when
/// the SDKs are required.
fn installed(path: PathBuf, what: &str, variable: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    if std::env::var("POINTHOOK_TEST_SDK_REQUIRED").as_deref() == Ok("1") {
        panic!(
            "POINTHOOK_TEST_SDK_REQUIRED=1 but {} does not exist (set {variable} to {what})",
            path.display()
        );
    }
    eprintln!("skipped: no {what} at {} (set {variable})", path.display());
    None
}

/// The interpreter with the official Python SDK installed: the path in
/// `POINTHOOK_TEST_SDK_PYTHON`, else `target/sdk-venv/bin/python`.
pub fn sdk_python() -> Option<PathBuf> {
    let path = std::env::var_os("POINTHOOK_TEST_SDK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/sdk-venv/bin/python"));
    installed(
        path,
        "a Python with the mercadopago SDK installed",
        "POINTHOOK_TEST_SDK_PYTHON",
    )
}

/// The `node_modules` folder holding the official Node SDK: the path in
/// `POINTHOOK_TEST_SDK_NODE_MODULES`, else `target/sdk-node/node_modules`.
pub fn sdk_node_modules() -> Option<PathBuf> {
    let path = std::env::var_os("POINTHOOK_TEST_SDK_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/sdk-node/node_modules"));
    installed(
        path.join("mercadopago"),
        "a node_modules folder with the mercadopago package",
        "POINTHOOK_TEST_SDK_NODE_MODULES",
    )
    .map(|_| path)
}

/// A child process that is killed if the test ends (or panics) first.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Runs `program script` with `env`, killed after `limit`: its status,
/// standard output and standard error.
pub fn run_script(
    program: &Path,
    script: &Path,
    env: &[(&str, String)],
    limit: Duration,
) -> (ExitStatus, String, String) {
    let out = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (out.path().join("stdout"), out.path().join("stderr"));
    let mut cmd = Command::new(program);
    cmd.arg(script)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = Child(cmd.spawn().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the SDK script ran longer than {limit:?}: {}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status,
        std::fs::read_to_string(&stdout).unwrap(),
        std::fs::read_to_string(&stderr).unwrap(),
    )
}

/// The last line a script printed, as JSON (its summary).
pub fn summary(stdout: &str, stderr: &str) -> serde_json::Value {
    serde_json::from_str(stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("no summary from the script ({e}): {stdout}\n{stderr}"))
}
