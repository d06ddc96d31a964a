//! The scenarios of `fixtures/scenarios/`: steps against the sandbox (and
//! the demo's merchant endpoint), then what must follow. A string that is
//! exactly `{name.field}` becomes that value of an earlier step's answer;
//! inside a longer string it is replaced as text.

use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

/// Built into the binary, so `pointhook demo` runs from anywhere.
pub const SCENARIOS: &[&str] = &[
    include_str!("../../fixtures/scenarios/01-payment-approved.json"),
    include_str!("../../fixtures/scenarios/02-confirmation-required.json"),
    include_str!("../../fixtures/scenarios/03-fraud-alert.json"),
    include_str!("../../fixtures/scenarios/04-merchant-fails-once.json"),
    include_str!("../../fixtures/scenarios/05-device-event-mail.json"),
    include_str!("../../fixtures/scenarios/06-point-intent-on-a-terminal.json"),
    include_str!("../../fixtures/scenarios/07-order-on-a-terminal.json"),
    include_str!("../../fixtures/scenarios/08-order-action-required.json"),
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub steps: Vec<Step>,
    pub expect: Vec<Expect>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Said as it happens.
    pub say: String,
    /// `METHOD /path` on the sandbox.
    #[serde(default)]
    pub call: Option<String>,
    #[serde(default)]
    pub body: Option<Value>,
    /// Remember the answer under this name.
    #[serde(default, rename = "as")]
    pub save_as: Option<String>,
    /// Make the merchant's endpoint fail this many next events.
    #[serde(default)]
    pub merchant_fails_next: Option<u32>,
    /// Let this many platform minutes pass (scaled).
    #[serde(default)]
    pub wait_scaled_minutes: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// An event of this type whose `data` has the `where` fields.
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default, rename = "where")]
    pub matching: Option<serde_json::Map<String, Value>>,
    /// The merchant refused it this many times before taking it.
    #[serde(default)]
    pub delivered_after_failures: Option<u32>,
    /// A mail in the spool that contains this text.
    #[serde(default)]
    pub mail: Option<String>,
}

pub fn parse_all() -> Result<Vec<Scenario>, serde_json::Error> {
    SCENARIOS.iter().map(|s| serde_json::from_str(s)).collect()
}

/// Replaces `{name.field}` references with what earlier steps answered.
pub fn interpolate(v: &Value, saved: &HashMap<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            if let Some(inner) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}'))
                && let Some(found) = lookup(inner, saved)
            {
                return found;
            }
            let mut out = s.clone();
            for (name, value) in saved {
                if let Some(obj) = value.as_object() {
                    for (field, x) in obj {
                        let text = match x {
                            Value::String(t) => t.clone(),
                            other => other.to_string(),
                        };
                        out = out.replace(&format!("{{{name}.{field}}}"), &text);
                    }
                }
            }
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| interpolate(x, saved)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), interpolate(x, saved)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn lookup(path: &str, saved: &HashMap<String, Value>) -> Option<Value> {
    let (name, field) = path.split_once('.')?;
    saved.get(name)?.get(field).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_scenario_parses() {
        let all = parse_all().unwrap();
        // Every file of the folder is built in.
        let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/scenarios"))
            .unwrap()
            .count();
        assert_eq!(all.len(), files);
    }

    #[test]
    fn references_become_values_or_text() {
        let saved = HashMap::from([("order".to_string(), json!({"id": 42}))]);
        assert_eq!(interpolate(&json!("{order.id}"), &saved), json!(42));
        assert_eq!(
            interpolate(&json!("POST /x/{order.id}/payments"), &saved),
            json!("POST /x/42/payments")
        );
        assert_eq!(
            interpolate(&json!({"a": ["{order.id}"]}), &saved),
            json!({"a": [42]})
        );
    }
}
