//! Tests of `config/alerts.rs`.

use crate::config::Config;

const BASE: &str = "[storage]\npath = \"x.db\"\n[api]\nbase_url = \"http://127.0.0.1:9\"\n\
                    [[accounts]]\nname = \"default\"\naccess_token = \"t\"\n";
const ADMIN: &str = "[admin]\ntoken = \"0123456789abcdef0123456789abcdef\"\n\
                     public_url = \"https://ph.example:8081\"\n";

fn load(extra: &str) -> Result<Config, String> {
    Config::from_toml(&format!("{extra}\n{BASE}"), Vec::new()).map_err(|e| e.to_string())
}

#[test]
fn channels_resolve_with_the_console_link() {
    let c = load(&format!(
        "{ADMIN}[[alerts]]\nkind = \"email\"\nto = [\"ops@shop.example\"]\n\
         [[alerts]]\nkind = \"webhook\"\nurl = \"https://chat.example/hook/T0/B0/secret\"\n\
         [smtp]\nhost = \"127.0.0.1\"\nstarttls = false\nfrom = \"ph@shop.example\"\n\
         [alert_rules]\ndestination_failing_secs = 2\n"
    ))
    .unwrap();
    let a = c.alerting().unwrap().unwrap();
    assert_eq!(a.channels.len(), 2);
    assert_eq!(a.public_url, "https://ph.example:8081/");
    assert_eq!(a.rules.destination_failing_secs, 2);
    assert_eq!(a.rules.digest_secs, 60, "defaults fill the rest");
    assert!(
        !c.to_masked_toml().contains("secret"),
        "a webhook URL is its credential: never printed"
    );
    assert!(load("").unwrap().alerting().unwrap().is_none());
}

#[test]
fn the_environment_overrides_alert_sections() {
    let c = Config::from_toml(
        BASE,
        [
            ("POINTHOOK_ALERT_RULES_DIGEST_SECS", "5"),
            ("POINTHOOK_SMTP_HOST", "mail.example"),
            ("POINTHOOK_SMTP_FROM", "ph@shop.example"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    )
    .unwrap();
    assert_eq!(c.alert_rules.digest_secs, 5);
    let smtp = c.smtp_settings().unwrap().unwrap();
    assert_eq!(
        (smtp.host.as_str(), smtp.port, smtp.starttls),
        ("mail.example", 25, true)
    );
}

#[test]
fn bad_alert_settings_name_their_key() {
    let cases = [
        (
            "[[alerts]]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\n",
            "admin.public_url: required",
        ),
        (
            "[[alerts]]\nkind = \"email\"\nto = [\"ops@x.example\"]\n",
            "smtp: required by alerts[0]",
        ),
        ("[[alerts]]\nkind = \"email\"\n", "alerts[0].to: required"),
        (
            "[[alerts]]\nkind = \"email\"\nto = [\"not an address\"]\n",
            "alerts[0].to[0]: not an e-mail address",
        ),
        (
            "[[alerts]]\nkind = \"webhook\"\n",
            "alerts[0].url: required",
        ),
        (
            "[[alerts]]\nkind = \"webhook\"\nurl = \"ftp://x.example/\"\n",
            "alerts[0].url: must be an http or https URL",
        ),
        ("[[alerts]]\nkind = \"pager\"\n", "alerts[0].kind"),
        (
            "[[alerts]]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\n[smtp]\nhost = \"h\"\nfrom = \"nobody\"\n",
            "smtp.from: not an e-mail address",
        ),
        (
            "[[alerts]]\nkind = \"webhook\"\nurl = \"https://x.example/h\"\n[smtp]\nhost = \"h\"\nfrom = \"a@b.example\"\nusername = \"u\"\n",
            "smtp.password_file: required with smtp.username",
        ),
        (
            "[alert_rules]\ncheck_interval_secs = 0\n",
            "alert_rules.check_interval_secs: must be 1 to 3600",
        ),
        (
            "[alert_rules]\nsend_timeout_secs = 9999\n",
            "alert_rules.send_timeout_secs",
        ),
        ("[alert_rules]\nsoon = 1\n", "alert_rules"),
    ];
    for (extra, expected) in cases {
        let toml = if extra.starts_with("[[alerts]]") && !expected.starts_with("admin") {
            format!("{ADMIN}{extra}")
        } else {
            extra.to_string()
        };
        let err = load(&toml).unwrap_err();
        assert!(err.contains(expected), "{extra:?}: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
    let silent = BASE.replace(
        "access_token = \"t\"\n",
        "access_token = \"t\"\nexpect_notifications_within_secs = 5\n",
    );
    let err = Config::from_toml(&silent, Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("accounts[0].expect_notifications_within_secs: must be 0 (off) or 60"),
        "{err}"
    );
}
