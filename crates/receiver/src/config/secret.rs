//! `Secret`: a string that never shows itself in logs, `Debug` or the printed
//! configuration.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// A token, key or password. Only `expose` gives the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // An environment override of an all-digit token arrives as an integer.
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Secret;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Secret, E> {
                Ok(Secret::new(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Secret, E> {
                Ok(Secret::new(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Secret, E> {
                Ok(Secret::new(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_serialize_hide_the_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "\"***\"");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"***\"");
        assert_eq!(s.expose(), "hunter2");
    }
}
