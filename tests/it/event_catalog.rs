//! The event catalog (`docs/events/`): a JSON Schema (draft 2020-12) and
//! an example per event type told. Every event a test sees is checked
//! against its schema (`check`, called by `TestApp`'s event reads); here,
//! the catalog itself, its examples, and `GET /api/event-types`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use pointhook::domain::EventType;
use serde_json::Value;

use crate::helpers::*;

fn read(name: &str) -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/events")
        .join(name);
    let bytes = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn validator(event_type: &str) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache
        .entry(event_type.to_string())
        .or_insert_with(|| {
            let schema = read(&format!("{event_type}.schema.json"))
                .unwrap_or_else(|| panic!("no schema for {event_type} in docs/events/"));
            Arc::new(
                jsonschema::draft202012::options()
                    .should_validate_formats(true)
                    .build(&schema)
                    .unwrap_or_else(|e| panic!("{event_type}'s schema: {e}")),
            )
        })
        .clone()
}

/// Panics unless `event` (a whole envelope) matches its type's schema.
pub fn check(event: &Value) {
    let t = event["type"].as_str().expect("an event has a type");
    let errors: Vec<String> = validator(t)
        .iter_errors(event)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "a {t} event does not match docs/events/{t}.schema.json: {errors:?}\n{event}"
    );
}

#[test]
fn every_type_told_has_a_schema_and_a_valid_example() {
    for t in EventType::all() {
        let told = pointhook::rules::kernel::told(t);
        let example = read(&format!("{t}.example.json"));
        assert_eq!(example.is_some(), told, "{t}: an example exactly when told");
        if let Some(example) = example {
            check(&example);
            assert_eq!(example["type"], t.as_str());
        }
    }
}

/// The schemas are strict: what an event does not carry is refused, so a
/// field a rule adds or drops shows up here first.
#[test]
fn the_schemas_refuse_what_an_event_does_not_carry() {
    let mut example = read("order.released.example.json").unwrap();
    example["data"]["unexpected"] = Value::from(1);
    assert!(!validator("order.released").is_valid(&example));
    let mut example = read("payment.updated.example.json").unwrap();
    example["data"]["payment_id"] = Value::from(123);
    assert!(
        !validator("payment.updated").is_valid(&example),
        "ids are strings"
    );
    let mut example = read("order.released.example.json").unwrap();
    example["created_at"] = Value::from("yesterday");
    assert!(!validator("order.released").is_valid(&example));
}

#[tokio::test]
async fn the_admin_api_lists_every_event_type() {
    const TOKEN: &str = "admin-token-0123456789-0123456789-abcd";
    let app = spawn_app_with(TestConfig::default().admin(TOKEN)).await;
    let (status, body) = app.admin("GET", "/api/event-types", TOKEN).await;
    assert_eq!(status, 200);
    let listed = body["event_types"].as_array().unwrap();
    assert_eq!(listed.len(), EventType::all().count());
    for entry in listed {
        let t = entry["type"].as_str().unwrap();
        match read(&format!("{t}.schema.json")) {
            Some(schema) => {
                assert_eq!(entry["told"], true, "{t}");
                assert_eq!(entry["schema"], schema, "{t}: served as in docs/events/");
            }
            None => {
                assert_eq!(t, "fraud_alert.rejected");
                assert_eq!(entry["told"], false);
            }
        }
    }
    app.stop().await;
}
