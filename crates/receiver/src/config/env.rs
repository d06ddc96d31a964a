//! `POINTHOOK_<SECTION>_<KEY>` environment overrides, applied to the parsed
//! TOML before it is deserialised, so they are checked like the file is.
//!
//! The section is the first word (`server`, `api`, …), the key is the rest:
//! `POINTHOOK_SERVER_MAX_BODY_BYTES=1024` sets `server.max_body_bytes`.
//! Accounts are addressed by position: `POINTHOOK_ACCOUNTS_0_ACCESS_TOKEN`.
//! A value that reads as a TOML integer or boolean is one; anything else is
//! a string. Variables whose first word is not a section (such as
//! `POINTHOOK_ACCESS_TOKEN`, read by the client commands) are not config.

use toml::{Table, Value};

use super::ConfigError;

const PREFIX: &str = "POINTHOOK_";
const SECTIONS: &[&str] = &[
    "server",
    "storage",
    "api",
    "fulfillment",
    "admin",
    "worker",
    "reconcile",
    "log",
    "smtp",
    "alert_rules",
];

pub(super) fn apply_overrides(
    table: &mut Table,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<(), ConfigError> {
    for (name, raw) in vars {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let rest = rest.to_ascii_lowercase();
        let value = parse_value(&raw);
        if let Some(tail) = rest.strip_prefix("accounts_") {
            let Some((index, key)) = tail.split_once('_') else {
                return Err(bad(&name, "expected POINTHOOK_ACCOUNTS_<N>_<KEY>"));
            };
            let index: usize = index
                .parse()
                .map_err(|_| bad(&name, "expected POINTHOOK_ACCOUNTS_<N>_<KEY>"))?;
            let accounts = table
                .entry("accounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(list) = accounts else {
                return Err(bad(&name, "accounts is not a list in the file"));
            };
            if index > list.len() {
                return Err(bad(
                    &name,
                    &format!(
                        "accounts[{index}] would leave a gap: the file has {}",
                        list.len()
                    ),
                ));
            }
            if index == list.len() {
                list.push(Value::Table(Table::new()));
            }
            let Value::Table(account) = &mut list[index] else {
                return Err(bad(&name, "accounts entry is not a table"));
            };
            account.insert(key.to_string(), value);
            continue;
        }
        let Some((section, key)) = SECTIONS.iter().find_map(|s| {
            rest.strip_prefix(s)
                .and_then(|r| r.strip_prefix('_'))
                .map(|key| (*s, key))
        }) else {
            continue;
        };
        let entry = table
            .entry(section)
            .or_insert_with(|| Value::Table(Table::new()));
        let Value::Table(section_table) = entry else {
            return Err(bad(&name, &format!("{section} is not a table in the file")));
        };
        section_table.insert(key.to_string(), value);
    }
    Ok(())
}

/// A number only when it reads back as the same text: `0000000042` (a
/// token, say) stays the string it is, leading zeros and all.
fn parse_value(raw: &str) -> Value {
    if let Ok(i) = raw.parse::<i64>()
        && i.to_string() == raw
    {
        return Value::Integer(i);
    }
    match raw {
        "true" => Value::Boolean(true),
        "false" => Value::Boolean(false),
        _ => Value::String(raw.to_string()),
    }
}

fn bad(var: &str, message: &str) -> ConfigError {
    ConfigError::new(format!("env {var}"), message)
}
