//! The workspace's boundaries, as the manifests declare them: the receiver
//! never depends on the sandbox, and what they share depends on neither.

use std::path::Path;

/// The names of every dependency table (`[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]`) of a crate's manifest.
fn dependencies(krate: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("crates/{krate}/Cargo.toml"));
    let manifest: toml::Table = std::fs::read_to_string(&path)
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ["dependencies", "dev-dependencies", "build-dependencies"]
        .iter()
        .filter_map(|t| manifest.get(*t)?.as_table())
        .flat_map(|t| t.keys().cloned())
        .collect()
}

#[test]
fn the_receiver_never_depends_on_the_sandbox() {
    let receiver = dependencies("receiver");
    assert!(
        receiver.contains(&"pointhook-common".to_string()),
        "{receiver:?}"
    );
    assert!(
        !receiver.iter().any(|d| d.contains("sandbox")),
        "{receiver:?}"
    );
    let common = dependencies("common");
    assert!(
        !common
            .iter()
            .any(|d| d.starts_with("pointhook") && d != "pointhook-common"),
        "{common:?}"
    );
    // The store's boundary holds in the shared crate too: no database.
    assert!(
        !common.iter().any(|d| matches!(
            d.as_str(),
            "rusqlite" | "tokio-postgres" | "deadpool-postgres"
        )),
        "{common:?}"
    );
}

/// What `cargo tree` says the rules crate builds with, on its own.
fn rules_tree(features: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "-p",
            "pointhook-rules",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(features.iter().flat_map(|f| ["--features", *f]))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The rules are pure because the compiler cannot find anything else: built
/// on its own, the rules crate has no runtime, database or HTTP crate to
/// call. Its storage features (the stored enums' conversions, which the
/// store turns on) are the only way one comes in.
#[test]
fn the_rules_crate_builds_without_a_runtime_a_database_or_http() {
    let forbidden = [
        "tokio",
        "rusqlite",
        "tokio-postgres",
        "postgres-types",
        "hyper",
        "axum",
        "reqwest",
        "lettre",
        "deadpool-postgres",
    ];
    let crates: Vec<String> = rules_tree(&[])
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(crates.iter().any(|c| c == "pointhook-common"), "{crates:?}");
    for f in forbidden {
        assert!(
            !crates.iter().any(|c| c == f),
            "the rules crate builds with {f}: {crates:?}"
        );
    }
    // The check sees what a feature brings, so it would see a leak.
    assert!(
        rules_tree(&["sqlite"])
            .lines()
            .any(|l| l.starts_with("rusqlite "))
    );
}
