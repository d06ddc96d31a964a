//! Typed ids of the platform's resources. Each kind has its own character
//! set: digits for payments, merchant orders and chargebacks; letters,
//! digits, `-` and `_` for payment intents; anything printable for what we
//! only record. A numeric id is kept as the platform reads it, a 64-bit
//! number: `000123` is `123` (so one payment is one job and one review,
//! however it was written), and digits that are no such number (zero, or
//! past 2^63 - 1) are no id. An id is checked once, where it
//! enters (a request, an API answer), and the type then says which path it
//! may be put into: a chargeback id cannot reach a payment's URL.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("is empty")]
    Empty,
    #[error("is longer than {0} characters")]
    TooLong(usize),
    #[error("must be digits only")]
    NotDigits,
    #[error("may hold only letters, digits, '-' and '_'")]
    NotAlphanumeric,
    #[error("has a character that is not printable ASCII (or is a space)")]
    BadCharacter,
    #[error("must be {0}")]
    Shape(&'static str),
    #[error("is zero: the platform numbers its resources from 1")]
    Zero,
    #[error("is larger than the platform's ids (at most 9223372036854775807)")]
    TooLarge,
}

/// What makes an id of one kind valid.
pub trait IdKind: 'static {
    /// How the kind is named in errors (`payment id`).
    const NAME: &'static str;
    fn check(s: &str) -> Result<(), IdError>;
    /// The id as the platform reads it (checked first).
    fn normalise(s: &str) -> Result<std::borrow::Cow<'_, str>, IdError> {
        Ok(std::borrow::Cow::Borrowed(s))
    }
}

/// Kinds of id (type-level markers).
pub mod kinds {
    use super::{IdError, IdKind};

    fn bounded(s: &str, max: usize) -> Result<(), IdError> {
        if s.is_empty() {
            Err(IdError::Empty)
        } else if s.len() > max {
            Err(IdError::TooLong(max))
        } else {
            Ok(())
        }
    }

    /// Numeric ids; chargeback ids exceed 2^53, so they are kept as text.
    fn digits(s: &str) -> Result<(), IdError> {
        bounded(s, 32)?;
        if s.bytes().all(|b| b.is_ascii_digit()) {
            Ok(())
        } else {
            Err(IdError::NotDigits)
        }
    }

    /// Digits as the platform's 64-bit number: leading zeros dropped.
    fn number(s: &str) -> Result<std::borrow::Cow<'_, str>, IdError> {
        let n: i64 = s.parse().map_err(|_| IdError::TooLarge)?;
        if n == 0 {
            return Err(IdError::Zero);
        }
        if s.starts_with('0') {
            Ok(std::borrow::Cow::Owned(n.to_string()))
        } else {
            Ok(std::borrow::Cow::Borrowed(s))
        }
    }

    macro_rules! numeric {
        ($name:ident, $label:literal) => {
            #[derive(Debug)]
            pub enum $name {}
            impl IdKind for $name {
                const NAME: &'static str = $label;
                fn check(s: &str) -> Result<(), IdError> {
                    digits(s)
                }
                fn normalise(s: &str) -> Result<std::borrow::Cow<'_, str>, IdError> {
                    number(s)
                }
            }
        };
    }

    numeric!(Payment, "payment id");
    numeric!(MerchantOrder, "merchant order id");
    numeric!(Chargeback, "chargeback id");

    /// Payment intents: UUIDs in practice.
    #[derive(Debug)]
    pub enum Intent {}
    impl IdKind for Intent {
        const NAME: &'static str = "payment intent id";
        fn check(s: &str) -> Result<(), IdError> {
            bounded(s, 64)?;
            if s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                Ok(())
            } else {
                Err(IdError::NotAlphanumeric)
            }
        }
    }

    /// Orders API orders: `ORD` and 26 letters or digits (`ORDTST…` in test
    /// mode is the same length).
    #[derive(Debug)]
    pub enum PlatformOrder {}
    impl IdKind for PlatformOrder {
        const NAME: &'static str = "order id";
        fn check(s: &str) -> Result<(), IdError> {
            let shape = "ORD followed by 26 letters or digits";
            match s.strip_prefix("ORD") {
                Some(rest)
                    if rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()) =>
                {
                    Ok(())
                }
                _ => Err(IdError::Shape(shape)),
            }
        }
    }

    /// Ids we only record (topics nothing acts on).
    #[derive(Debug)]
    pub enum Opaque {}
    impl IdKind for Opaque {
        const NAME: &'static str = "id";
        fn check(s: &str) -> Result<(), IdError> {
            bounded(s, 128)?;
            if s.bytes().all(|b| b.is_ascii_graphic()) {
                Ok(())
            } else {
                Err(IdError::BadCharacter)
            }
        }
    }
}

/// A checked id of kind `K`.
pub struct Id<K> {
    text: String,
    kind: PhantomData<fn() -> K>,
}

pub type PaymentId = Id<kinds::Payment>;
pub type MerchantOrderId = Id<kinds::MerchantOrder>;
pub type ChargebackId = Id<kinds::Chargeback>;
pub type IntentId = Id<kinds::Intent>;
pub type PlatformOrderId = Id<kinds::PlatformOrder>;
/// Any id as received, for records only.
pub type ResourceId = Id<kinds::Opaque>;

impl<K: IdKind> Id<K> {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        K::check(s)?;
        Ok(Id {
            text: K::normalise(s)?.into_owned(),
            kind: PhantomData,
        })
    }

    /// The same text as an id of another kind, checked again.
    pub fn cast<L: IdKind>(&self) -> Result<Id<L>, IdError> {
        Id::parse(&self.text)
    }
}

impl<K> Id<K> {
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl<K> Clone for Id<K> {
    fn clone(&self) -> Self {
        Id {
            text: self.text.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> PartialEq for Id<K> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<K> Eq for Id<K> {}

impl<K> std::hash::Hash for Id<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state)
    }
}

impl<K> PartialOrd for Id<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Id<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.text.cmp(&other.text)
    }
}

impl<K> fmt::Display for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<K> fmt::Debug for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// Always a JSON string: chargeback ids exceed what JSON numbers hold in
/// most consumers (2^53).
impl<K> Serialize for Id<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Read tolerantly: the platform writes ids as numbers or strings.
impl<'de, K: IdKind> Deserialize<'de> for Id<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => n.to_string(),
            _ => {
                return Err(serde::de::Error::custom(format!(
                    "expected a {} (a string or a number)",
                    K::NAME
                )));
            }
        };
        Id::parse(&text).map_err(|e| serde::de::Error::custom(format!("{} {e}", K::NAME)))
    }
}

/// The text of an id sent as a string or a number; `None` for anything else.
pub fn loose_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_character_set() {
        assert!(PaymentId::parse("123").is_ok());
        assert!(ChargebackId::parse("9007199254740993123").is_ok());
        assert_eq!(PaymentId::parse("12a"), Err(IdError::NotDigits));
        assert_eq!(
            PaymentId::parse("../../v1/payments/1"),
            Err(IdError::NotDigits)
        );
        assert_eq!(PaymentId::parse(""), Err(IdError::Empty));
        assert!(IntentId::parse("7f25f9aa-eea6-4f9c-bf16-a341f71ba2f1").is_ok());
        assert_eq!(IntentId::parse("a/b"), Err(IdError::NotAlphanumeric));
        assert_eq!(IntentId::parse(".."), Err(IdError::NotAlphanumeric));
        assert!(PlatformOrderId::parse("ORD01JQ4S4KY8HWQ6NA5PXB65B3D3").is_ok());
        assert!(PlatformOrderId::parse("ORD01JQ4S4KY8HWQ6NA5PXB65B3D").is_err());
        assert!(PlatformOrderId::parse("XRD01JQ4S4KY8HWQ6NA5PXB65B3D3").is_err());
        assert!(ResourceId::parse("a/b").is_ok());
        assert_eq!(ResourceId::parse("a b"), Err(IdError::BadCharacter));
        assert_eq!(ResourceId::parse("é"), Err(IdError::BadCharacter));
        assert!(ResourceId::parse(&"x".repeat(128)).is_ok());
        assert_eq!(PaymentId::parse("000123").unwrap().as_str(), "123");
        assert_eq!(
            ChargebackId::parse("0009223372036854775807")
                .unwrap()
                .as_str(),
            "9223372036854775807"
        );
        assert_eq!(
            PaymentId::parse("9223372036854775808"),
            Err(IdError::TooLarge)
        );
        assert_eq!(MerchantOrderId::parse("000"), Err(IdError::Zero));
        assert_eq!(
            ResourceId::parse("007").unwrap().as_str(),
            "007",
            "opaque ids as received"
        );
        assert_eq!(
            ResourceId::parse(&"x".repeat(129)),
            Err(IdError::TooLong(128))
        );
    }

    #[test]
    fn ids_read_as_numbers_or_strings_and_write_as_strings() {
        let big: ChargebackId = serde_json::from_str("9007199254740993123").unwrap();
        assert_eq!(big.as_str(), "9007199254740993123");
        assert_eq!(
            serde_json::to_string(&big).unwrap(),
            "\"9007199254740993123\""
        );
        let p: PaymentId = serde_json::from_str("\"42\"").unwrap();
        assert_eq!(p.as_str(), "42");
        assert!(serde_json::from_str::<PaymentId>("\"4/2\"").is_err());
        assert!(serde_json::from_str::<PaymentId>("null").is_err());
    }
}
