use super::*;

const MINIMAL: &str = r#"
[storage]
path = "x.db"
[api]
base_url = "http://127.0.0.1:1"
[[accounts]]
name = "default"
access_token = "tok"
"#;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml(text, Vec::<(String, String)>::new())
}

fn parse_env(text: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_toml(
        text,
        vars.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    )
}

#[test]
fn sample_config_parses() {
    let text = include_str!("../../../../sample-config.toml");
    let config = parse(text).expect("sample-config.toml must parse");
    assert_eq!(config.server.path, "/notifications");
    assert_eq!(config.server.max_body_bytes, 65_536);
    assert_eq!(config.worker.max_attempts, 12);
    assert_eq!(config.accounts[0].name, "default");
}

/// The packaged configuration is written from the sample when the package
/// is built (`scripts/packaged-config.sh`, run by `scripts/deb.sh`): the
/// sample's every line, its database path alone in the unit's state
/// directory. Nothing to keep in step by hand.
#[test]
fn the_packaged_config_is_the_sample_with_its_database_in_var_lib() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = std::process::Command::new("sh")
        .arg(format!("{root}/scripts/packaged-config.sh"))
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let packaged = String::from_utf8(out.stdout).unwrap();
    let config = parse(&packaged).expect("the packaged configuration must parse");
    assert_eq!(
        config.storage.path.as_deref(),
        Some(std::path::Path::new("/var/lib/pointhook/pointhook.db"))
    );
    let sample = include_str!("../../../../sample-config.toml");
    let changed: Vec<(&str, &str)> = sample
        .lines()
        .zip(packaged.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed,
        [(
            "path = \"pointhook.db\"",
            "path = \"/var/lib/pointhook/pointhook.db\""
        )]
    );
    assert_eq!(sample.lines().count(), packaged.lines().count());
}

#[test]
fn sample_config_values_are_the_defaults() {
    let sample = parse(include_str!("../../../../sample-config.toml")).unwrap();
    let minimal = parse(MINIMAL).unwrap();
    assert_eq!(
        toml::to_string(&sample.server).unwrap(),
        toml::to_string(&minimal.server).unwrap()
    );
    assert_eq!(
        toml::to_string(&sample.worker).unwrap(),
        toml::to_string(&minimal.worker).unwrap()
    );
    assert_eq!(sample.api.timeout_secs, minimal.api.timeout_secs);
    assert_eq!(
        sample.api.payment_intent_path,
        minimal.api.payment_intent_path
    );
}

#[test]
fn minimal_config_needs_only_the_required_keys() {
    let c = parse(MINIMAL).unwrap();
    assert!(c.worker.enabled);
    assert!(c.admin.is_none());
    assert!(c.fulfillment.is_none());
}

#[test]
fn every_section_is_accepted() {
    let text = format!(
        "{MINIMAL}
[fulfillment]
url = \"http://127.0.0.1:9000/events\"
secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"
[admin]
listen = \"127.0.0.1:0\"
token = \"0123456789abcdef0123456789abcdef\"
[worker]
enabled = false
"
    );
    let c = parse(&text).unwrap();
    assert!(!c.worker.enabled);
    assert!(c.admin.is_some());
}

#[test]
fn missing_required_keys_are_named() {
    let e = parse("[api]\nbase_url = \"http://x\"\n[[accounts]]\nname=\"a\"\naccess_token=\"t\"")
        .unwrap_err();
    assert!(e.to_string().contains("storage"), "{e}");
    let e =
        parse("[storage]\npath=\"x\"\n[[accounts]]\nname=\"a\"\naccess_token=\"t\"").unwrap_err();
    assert!(e.to_string().contains("api"), "{e}");
    let e = parse("[storage]\npath=\"x\"\n[api]\nbase_url=\"http://x\"\n").unwrap_err();
    assert!(e.to_string().contains("accounts"), "{e}");
    let e = parse(&MINIMAL.replace("access_token = \"tok\"", "")).unwrap_err();
    assert_eq!(e.key, "accounts[0].access_token");
}

#[test]
fn unknown_fields_are_named() {
    let e = parse(&format!("{MINIMAL}\n[server]\nlisten_addr = \"x\"\n")).unwrap_err();
    assert_eq!(e.key, "server.listen_addr");
}

#[test]
fn bad_values_are_named() {
    let e = parse(&format!(
        "{MINIMAL}\n[server]\nlisten = \"not an address\"\n"
    ))
    .unwrap_err();
    assert_eq!(e.key, "server.listen");
    let e = parse(&MINIMAL.replace("http://127.0.0.1:1", "ftp://x")).unwrap_err();
    assert_eq!(e.key, "api.base_url");
    let e = parse(&MINIMAL.replace("http://127.0.0.1:1", "no url")).unwrap_err();
    assert_eq!(e.key, "api.base_url");
    let e = parse(&format!("{MINIMAL}\n[server]\npath = \"n\"\n")).unwrap_err();
    assert_eq!(e.key, "server.path");
    let e = parse(&format!("{MINIMAL}\n[admin]\nlisten = \"127.0.0.1:1\"\n")).unwrap_err();
    assert_eq!(e.key, "admin.token");
    let e = parse(&format!("{MINIMAL}\n[log]\nlevel = \"info,[\"\n")).unwrap_err();
    assert_eq!(e.key, "log.level");
    let e = parse("not toml [").unwrap_err();
    assert_eq!(e.key, "config");
}

#[test]
fn duplicate_account_names_are_refused() {
    let text = format!("{MINIMAL}\n[[accounts]]\nname = \"default\"\naccess_token = \"t2\"\n");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.key, "accounts[1].name");
}

#[test]
fn env_overrides_apply_and_are_checked() {
    let c = parse_env(
        MINIMAL,
        &[
            ("POINTHOOK_SERVER_MAX_BODY_BYTES", "1024"),
            ("POINTHOOK_SERVER_LISTEN", "127.0.0.1:9999"),
            ("POINTHOOK_WORKER_ENABLED", "false"),
            ("POINTHOOK_ACCOUNTS_0_ACCESS_TOKEN", "12345"),
            ("POINTHOOK_API_BASE_URL", "http://127.0.0.1:2"),
            ("POINTHOOK_ACCESS_TOKEN", "client commands only"),
            ("HOME", "/root"),
        ],
    )
    .unwrap();
    assert_eq!(c.server.max_body_bytes, 1024);
    assert_eq!(c.server.listen.port(), 9999);
    assert!(!c.worker.enabled);
    assert_eq!(
        c.accounts[0].access_token.as_ref().unwrap().expose(),
        "12345"
    );
    assert_eq!(c.api.base_url.as_str(), "http://127.0.0.1:2/");

    let e = parse_env(MINIMAL, &[("POINTHOOK_SERVER_NOPE", "1")]).unwrap_err();
    assert_eq!(e.key, "server.nope");
    let e = parse_env(MINIMAL, &[("POINTHOOK_ACCOUNTS_5_NAME", "x")]).unwrap_err();
    assert!(e.key.contains("POINTHOOK_ACCOUNTS_5_NAME"), "{e}");
}

#[test]
fn env_can_add_an_account() {
    let c = parse_env(
        MINIMAL,
        &[
            ("POINTHOOK_ACCOUNTS_1_NAME", "shop-2"),
            ("POINTHOOK_ACCOUNTS_1_ACCESS_TOKEN", "t2"),
        ],
    )
    .unwrap();
    assert_eq!(c.accounts[1].name, "shop-2");
}

#[test]
fn secrets_are_masked_when_printed() {
    let text = MINIMAL.replace("\"tok\"", "\"very-secret-token\"");
    let c = parse(&text).unwrap();
    let printed = c.to_masked_toml();
    assert!(!printed.contains("very-secret-token"), "{printed}");
    assert!(printed.contains("***"), "{printed}");
}

#[test]
fn secrets_are_read_from_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "from-file\n").unwrap();
    let text = MINIMAL.replace(
        "access_token = \"tok\"",
        &format!("access_token_file = {:?}", file.display().to_string()),
    );
    let c = parse(&text).unwrap();
    let accounts = c.resolve_accounts().unwrap();
    assert_eq!(accounts[0].access_token.expose(), "from-file");

    let missing = MINIMAL.replace(
        "access_token = \"tok\"",
        "access_token_file = \"/nonexistent/token\"",
    );
    let e = parse(&missing).unwrap_err();
    assert_eq!(e.key, "accounts[0].access_token_file");

    let both = MINIMAL.replace(
        "access_token = \"tok\"",
        "access_token = \"a\"\naccess_token_file = \"/x\"",
    );
    assert_eq!(parse(&both).unwrap_err().key, "accounts[0].access_token");
}

/// A configuration file's relative paths start at its directory, and its
/// secret files are read only when something needs them: the operator's
/// reads load a configuration whose token file they cannot read.
#[test]
fn a_loaded_file_reads_paths_beside_it_and_secrets_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(
        dir.path().join("sub/secret"),
        "whsec_cG9pbnRob29rLWRlbW8tbWVyY2hhbnQtc2VjcmV0ISE=",
    )
    .unwrap();
    let path = dir.path().join("sub/c.toml");
    let text = MINIMAL.replace("access_token = \"tok\"", "access_token_file = \"gone\"")
        + "[fulfillment]\nurl = \"http://127.0.0.1:9/e\"\nsecret_file = \"secret\"\n";
    std::fs::write(&path, &text).unwrap();
    let c = Config::load(&path).unwrap();
    assert_eq!(
        c.location().unwrap(),
        crate::store::Location::Sqlite(dir.path().join("sub/x.db"))
    );
    assert!(c.event_policy().delivers());
    assert_eq!(c.destinations().unwrap()[0].keys.len(), 1);
    let e = c.check_secrets().unwrap_err();
    assert_eq!(e.key, "accounts[0].access_token_file");
    assert!(e.message.contains("sub/gone"), "{e}");
}

#[test]
fn the_admin_token_has_at_least_32_characters() {
    let with = |token: &str| parse(&format!("{MINIMAL}[admin]\ntoken = {token:?}\n"));
    let e = with(&"x".repeat(31)).unwrap_err();
    assert_eq!(e.key, "admin.token");
    assert!(e.message.contains("at least 32"), "{}", e.message);
    assert!(with(&"x".repeat(32)).is_ok());
    // Characters, not bytes.
    assert!(with(&"é".repeat(31)).is_err());
}

#[test]
fn a_numeric_secret_from_the_environment_keeps_its_digits() {
    let c = parse_env(
        &(MINIMAL.to_string() + "[admin]\ntoken = \"0123456789abcdef0123456789abcdef\"\n"),
        &[
            ("POINTHOOK_ADMIN_TOKEN", "00000000000000000000000000000042"),
            ("POINTHOOK_ACCOUNTS_0_ACCESS_TOKEN", "007"),
        ],
    )
    .unwrap();
    assert_eq!(
        c.admin_token().unwrap().unwrap().expose(),
        "00000000000000000000000000000042"
    );
    assert_eq!(
        c.resolve_accounts().unwrap()[0].access_token.expose(),
        "007"
    );
}

#[test]
fn a_fulfillment_secret_must_be_a_standard_webhooks_secret() {
    let text = MINIMAL.to_string()
        + "[fulfillment]\nurl = \"http://127.0.0.1:1/e\"\nsecret = \"whsec_not base64!\"\n";
    let e = parse(&text).unwrap_err();
    assert_eq!(e.key, "fulfillment.secret");
    let ok = MINIMAL.to_string()
        + "[fulfillment]\nurl = \"http://127.0.0.1:1/e\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
    assert!(parse(&ok).is_ok());
}

#[test]
fn the_printed_config_masks_url_credentials_and_queries() {
    let text = MINIMAL.replace(
        "base_url = \"http://127.0.0.1:1\"",
        "base_url = \"https://user:pw@api.example/?key=k\"",
    ) + "[fulfillment]\nurl = \"https://merchant.example/hook?token=t\"\nunsigned = true\n";
    let c = parse(&text).unwrap();
    let shown = c.to_masked_toml();
    assert!(
        !shown.contains("pw") && !shown.contains("key=k") && !shown.contains("token=t"),
        "{shown}"
    );
    assert!(
        shown.contains("https://***:***@api.example/?***"),
        "{shown}"
    );
}

#[test]
fn likely_mistakes_are_warned_of() {
    let text = MINIMAL.replace("access_token = \"tok\"", "access_token = \"TEST-123\"");
    let warnings = parse(&text).unwrap().warnings();
    assert!(warnings.iter().any(|w| w.contains("TEST-")), "{warnings:?}");
    let text = MINIMAL.replace("http://127.0.0.1:1", "http://api.example.com");
    let warnings = parse(&text).unwrap().warnings();
    assert!(
        warnings.iter().any(|w| w.contains("plain http")),
        "{warnings:?}"
    );
    assert!(parse(MINIMAL).unwrap().warnings().is_empty());
}

#[test]
fn fraud_alerts_are_held_unless_an_account_opts_into_act_which_is_warned_of() {
    let accounts = parse(MINIMAL).unwrap().resolve_accounts().unwrap();
    assert_eq!(
        accounts[0].policy.fraud_unauthenticated,
        crate::domain::UnauthenticatedAlerts::Hold
    );
    assert_eq!(accounts[0].policy.fraud_blocks_per_hour, 10);
    let text = format!("{MINIMAL}fraud_unauthenticated = \"act\"\n");
    let warnings = parse(&text).unwrap().warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("fraud_unauthenticated") && w.contains("without a person")),
        "{warnings:?}"
    );
}

/// Found by fuzzing: the filter parser panicked on these; now a named error.
#[test]
fn a_log_level_that_is_not_ascii_is_an_error_not_a_panic() {
    for level in ["info, é=debug", " [s{é}]"] {
        let e = parse_env(MINIMAL, &[("POINTHOOK_LOG_LEVEL", level)]).unwrap_err();
        assert_eq!(e.key, "log.level", "{level}");
    }
    assert!(parse_env(MINIMAL, &[("POINTHOOK_LOG_LEVEL", "info,pointhook=debug")]).is_ok());
}

/// Durations far past sense are refused before any arithmetic on them.
#[test]
fn durations_and_sizes_have_upper_bounds() {
    for (var, key) in [
        ("POINTHOOK_STORAGE_RETENTION_DAYS", "storage.retention_days"),
        (
            "POINTHOOK_SERVER_READ_TIMEOUT_SECS",
            "server.read_timeout_secs",
        ),
        ("POINTHOOK_WORKER_LEASE_SECS", "worker.lease_secs"),
    ] {
        let e = parse_env(MINIMAL, &[(var, "9000000000000000000")]).unwrap_err();
        assert_eq!(e.key, key);
        assert!(e.to_string().contains("at most"), "{e}");
    }
    let text = MINIMAL.to_string()
        + "[fulfillment]\nurl = \"http://127.0.0.1:1/e\"\ngive_up_after_hours = 9000000000000000\n";
    assert_eq!(
        parse(&text).unwrap_err().key,
        "fulfillment.give_up_after_hours"
    );
}

#[test]
fn max_in_flight_is_between_one_and_1024() {
    let with = |n: &str| {
        MINIMAL.to_string()
            + &format!(
                "[fulfillment]\nurl = \"http://127.0.0.1:1/e\"\nunsigned = true\nmax_in_flight = {n}\n"
            )
    };
    for bad in ["0", "1025"] {
        let e = parse(&with(bad)).unwrap_err();
        assert_eq!(e.key, "fulfillment.max_in_flight", "{bad}: {e}");
    }
    let c = parse(&with("4")).unwrap();
    assert_eq!(c.fulfillment.unwrap().max_in_flight, 4);
    let default =
        MINIMAL.to_string() + "[fulfillment]\nurl = \"http://127.0.0.1:1/e\"\nunsigned = true\n";
    assert_eq!(
        parse(&default).unwrap().fulfillment.unwrap().max_in_flight,
        64
    );
}

#[test]
fn reconciliation_follows_the_worker_and_its_window_outlasts_the_grace() {
    let c = parse(MINIMAL).unwrap();
    assert!(c.reconcile_enabled());
    assert_eq!(
        (
            c.reconcile.interval_secs,
            c.reconcile.lookback_secs,
            c.reconcile.grace_secs
        ),
        (300, 3600, 600)
    );
    let ingest = parse_env(MINIMAL, &[("POINTHOOK_WORKER_ENABLED", "false")]).unwrap();
    assert!(!ingest.reconcile_enabled());
    let short = MINIMAL.to_string() + "[reconcile]\nlookback_secs = 900\n";
    let e = parse(&short).unwrap_err();
    assert_eq!(e.key, "reconcile.lookback_secs");
    assert!(
        e.to_string()
            .contains("more than grace_secs + interval_secs (900)"),
        "{e}"
    );
    let e = parse_env(MINIMAL, &[("POINTHOOK_RECONCILE_INTERVAL_SECS", "0")]).unwrap_err();
    assert_eq!(e.key, "reconcile.interval_secs");
}
