//! Holds (`rules::holds`): an account turns a kind on with its own key,
//! and a key that names no setting is refused by name. Each kind's own
//! walk (held, approved, rejected) follows below it.

use crate::helpers::*;

/// The account's keys are checked by hand now that the kinds' settings
/// sit among them: a misspelt one still stops the start, named.
#[test]
fn an_account_key_that_is_no_setting_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = TestConfig {
        accounts: "[[accounts]]\nname = \"default\"\naccess_token = \"tok\"\n\
                   fraud_unauthenticated_blocks_per_hoor = 5\n"
            .into(),
        backend: crate::backends::Backend::Sqlite,
        ..Default::default()
    };
    let path = dir.path().join("pointhook.toml");
    std::fs::write(&path, config.toml(&dir.path().join("db.sqlite"))).unwrap();
    let err = pointhook::config::Config::load(&path)
        .and_then(|c| c.resolve_accounts())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("accounts[0].fraud_unauthenticated_blocks_per_hoor")
            && err.contains("unknown key"),
        "{err}"
    );
}
