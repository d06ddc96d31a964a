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
