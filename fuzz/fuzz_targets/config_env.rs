//! Input: environment overrides, one `NAME=VALUE` per line; each NAME gets
//! the `POINTHOOK_` prefix (a line without `=` is a name with an empty
//! value). A first line `@sample` applies them to sample-config.toml,
//! anything else to the minimal valid configuration of crates/receiver/src/config/tests.rs.
//! `Config::from_toml` must never panic; errors are fine.
//!
//! `*_FILE` keys name files that are read. So the fuzzer cannot make it read
//! /dev/zero or block on a pipe, their value is replaced by one of a few
//! known paths: a token file, an empty file, a directory, a missing file,
//! relative (from $CREDENTIALS_DIRECTORY) or absolute.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pointhook::config::Config;

const MINIMAL: &str = r#"
[storage]
path = "x.db"
[api]
base_url = "http://127.0.0.1:1"
[[accounts]]
name = "default"
access_token = "tok"
"#;

const SAMPLE: &str = include_str!("../../sample-config.toml");

/// The paths a `*_FILE` override may name.
fn files() -> &'static [String] {
    static FILES: OnceLock<Vec<String>> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir: PathBuf =
            std::env::temp_dir().join("pointhook-fuzz-config-files");
        std::fs::create_dir_all(dir.join("subdir")).unwrap();
        std::fs::write(dir.join("token"), "file-token\n").unwrap();
        std::fs::write(dir.join("empty"), "  \n").unwrap();
        std::fs::write(dir.join("binary"), b"\xff\xfe\x00tok").unwrap();
        // Relative `*_file` paths are read from here (systemd's LoadCredential=).
        // SAFETY: set once, before any other thread of this process reads the
        // environment (libFuzzer runs inputs on one thread).
        unsafe { std::env::set_var("CREDENTIALS_DIRECTORY", &dir) };
        let abs = |name: &str| dir.join(name).display().to_string();
        vec![
            "token".into(),
            "empty".into(),
            "binary".into(),
            "subdir".into(),
            "missing".into(),
            abs("token"),
            abs("empty"),
            abs("subdir"),
            abs("missing"),
            String::new(),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let files = files();
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n').peekable();
    let base = if lines.peek().is_some_and(|l| l.trim() == "@sample") {
        lines.next();
        SAMPLE
    } else {
        MINIMAL
    };
    let vars: Vec<(String, String)> = lines
        .take(64)
        .map(|line| {
            let (name, value) = line.split_once('=').unwrap_or((line, ""));
            let name = format!("POINTHOOK_{name}");
            let value = if name.to_ascii_lowercase().ends_with("_file") {
                let pick = value.bytes().fold(0usize, |h, b| h.wrapping_mul(31) ^ b as usize);
                files[pick % files.len()].clone()
            } else {
                value.to_string()
            };
            (name, value)
        })
        .collect();
    match Config::from_toml(base, vars) {
        Ok(config) => {
            let _ = config.to_masked_toml();
            let _ = config.resolve_accounts();
            let _ = config.admin_token();
            let _ = config.fulfillment_secret();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
