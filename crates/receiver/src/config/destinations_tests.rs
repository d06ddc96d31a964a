use super::*;

#[test]
fn type_patterns_are_globs_over_the_types_told() {
    let types = resolve_types(&["order.*".into(), "payment.refunded".into()]).unwrap();
    assert!(types.contains(&EventType::OrderReleased));
    assert!(types.contains(&EventType::OrderAtRisk));
    assert!(types.contains(&EventType::PaymentRefunded));
    assert!(!types.contains(&EventType::PaymentUpdated));
    let every = resolve_types(&["*".into()]).unwrap();
    assert!(
        !every.contains(&EventType::FraudAlertRejected),
        "never told"
    );
    assert!(resolve_types(&["order.relased".into()]).is_err());
    assert!(resolve_types(&["fraud_alert.rejected".into()]).is_err());
    assert!(resolve_types(&["[".into()]).is_err());
    assert!(resolve_types(&[]).is_err());
}

const BASE: &str = r#"
[storage]
path = "x.db"
[api]
base_url = "http://127.0.0.1:1"
[[accounts]]
name = "default"
access_token = "tok"
[[accounts]]
name = "north"
access_token = "tok2"
"#;
const KEY: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn parse(extra: &str) -> Result<Config, ConfigError> {
    Config::from_toml(&format!("{BASE}{extra}"), Vec::<(String, String)>::new())
}

#[test]
fn destinations_take_their_types_and_accounts() {
    let c = parse(&format!(
        "[[destinations]]\nname = \"erp\"\nurl = \"https://erp.example/h\"\nsecrets = [\"{KEY}\", \"{}\"]\n\
         types = [\"order.*\", \"payment.refunded\"]\naccounts = [\"north\"]\n\
         [[destinations]]\nname = \"shop\"\nurl = \"https://shop.example/h\"\nsecret = \"{KEY}\"\n",
        SigningKey::generate()
    ))
    .unwrap();
    let d = c.destinations().unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].keys.len(), 2);
    assert_eq!(d[0].accounts.as_deref(), Some(&["north".to_string()][..]));
    assert!(d[0].types.contains(&EventType::OrderReleased));
    assert!(!d[0].types.contains(&EventType::PaymentUpdated));
    assert_eq!(d[0].disable_after, Duration::from_secs(120 * 3600));
    assert_eq!(d[1].accounts, None);
    let policy = c.event_policy();
    assert_eq!(policy.routes.len(), 2);
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
}

#[test]
fn the_short_form_is_the_destination_default() {
    let c = parse(&format!(
        "[fulfillment]\nurl = \"http://127.0.0.1:9/events\"\nsecret = \"{KEY}\"\ntimeout_secs = 3\n"
    ))
    .unwrap();
    let d = c.destinations().unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].name, DEFAULT_NAME);
    assert_eq!(d[0].timeout, Duration::from_secs(3));
    assert_eq!(d[0].keys, [SigningKey::parse(KEY).unwrap()]);
    let told = EventType::all().filter(|t| crate::rules::kernel::told(*t));
    assert_eq!(d[0].types, told.collect::<Vec<_>>());
    // Without a URL: no destination, every event only stored.
    let c = parse("[fulfillment]\ntimeout_secs = 3\n").unwrap();
    assert!(c.destinations().unwrap().is_empty());
    assert!(!c.event_policy().delivers());
}

#[test]
fn a_bad_destination_stops_start_up_naming_the_key() {
    let with = |body: &str| {
        parse(&format!(
            "[[destinations]]\nname = \"erp\"\nurl = \"https://erp.example/h\"\n{body}"
        ))
        .map(|_| ())
        .unwrap_err()
        .key
    };
    for (body, key) in [
        ("secret = \"whsec_aGVsbG8=\"\n", "destinations[0].secret"),
        (
            "secret = \"raw-bytes-secret-0123456789abcdef\"\n",
            "destinations[0].secret",
        ),
        (
            &format!("secrets = [\"{KEY}\", \"whsec_x\"]\n"),
            "destinations[0].secrets[1]",
        ),
        ("", "destinations[0].secret"),
        (
            &format!("secret = \"{KEY}\"\nunsigned = true\n"),
            "destinations[0].unsigned",
        ),
        (
            &format!("secret = \"{KEY}\"\ntypes = [\"order.relased\"]\n"),
            "destinations[0].types",
        ),
        (
            &format!("secret = \"{KEY}\"\naccounts = [\"south\"]\n"),
            "destinations[0].accounts",
        ),
        (
            &format!("secret = \"{KEY}\"\ndisable_after_hours = 0\n"),
            "destinations[0].disable_after_hours",
        ),
    ] {
        assert_eq!(with(body), key, "{body}");
    }
    let twice = format!(
        "[fulfillment]\nurl = \"http://127.0.0.1:9/e\"\nsecret = \"{KEY}\"\n\
         [[destinations]]\nname = \"default\"\nurl = \"https://erp.example/h\"\nsecret = \"{KEY}\"\n"
    );
    assert_eq!(parse(&twice).unwrap_err().key, "destinations[0].name");
    let bad_name = format!(
        "[[destinations]]\nname = \"e r/p\"\nurl = \"https://erp.example/h\"\nsecret = \"{KEY}\"\n"
    );
    assert_eq!(parse(&bad_name).unwrap_err().key, "destinations[0].name");
}

#[test]
fn an_unsigned_destination_is_allowed_only_when_asked_and_warned_of() {
    let c = parse(
        "[[destinations]]\nname = \"lab\"\nurl = \"https://lab.example/h\"\nunsigned = true\n",
    )
    .unwrap();
    assert!(c.destinations().unwrap()[0].keys.is_empty());
    let warnings = c.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("\"lab\"") && w.contains("unsigned")),
        "{warnings:?}"
    );
}
