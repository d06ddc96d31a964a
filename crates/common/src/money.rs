//! Exact decimal amounts. The platform writes money as JSON numbers
//! (`100.5`) or strings; both are read from their text, never through a
//! binary float, so 0.1 + 0.2 is 0.3 here.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Money(Decimal);

impl Money {
    pub const ZERO: Money = Money(Decimal::ZERO);

    /// Parses decimal text such as `100.5`, `-3`, or `1.5e2`.
    pub fn parse(text: &str) -> Option<Money> {
        let text = text.trim();
        Decimal::from_str(text)
            .or_else(|_| Decimal::from_scientific(text))
            .ok()
            .map(Money)
    }

    /// An amount in cents (payment intents count in cents).
    pub fn from_cents(cents: i64) -> Money {
        Money(Decimal::new(cents, 2))
    }

    pub fn checked_add(self, rhs: Money) -> Result<Money, Overflow> {
        self.0.checked_add(rhs.0).map(Money).ok_or(Overflow)
    }

    pub fn checked_sub(self, rhs: Money) -> Result<Money, Overflow> {
        self.0.checked_sub(rhs.0).map(Money).ok_or(Overflow)
    }

    /// The sum of `amounts`, or `Overflow` when it does not fit.
    pub fn checked_sum(amounts: impl IntoIterator<Item = Money>) -> Result<Money, Overflow> {
        amounts
            .into_iter()
            .try_fold(Money::ZERO, |sum, a| sum.checked_add(a))
    }

    pub fn is_positive(self) -> bool {
        self.0 > Decimal::ZERO
    }
}

/// An amount too large to compute with: a permanent, named job error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an amount is too large to compute with exactly")]
pub struct Overflow;

impl fmt::Display for Money {
    /// Two decimals at least (`100.00`, `0.30`, `1.125`), as merchants expect.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0.normalize();
        if v.scale() < 2 {
            write!(f, "{:.2}", v)
        } else {
            write!(f, "{v}")
        }
    }
}

impl Serialize for Money {
    /// A decimal string: JSON numbers would invite float parsing downstream.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Money, D::Error> {
        // serde_json is built with `arbitrary_precision`, so a number
        // arrives as its exact text.
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => Money::parse(&n.to_string()),
            serde_json::Value::String(s) => Money::parse(&s),
            _ => None,
        }
        .ok_or_else(|| de::Error::custom("expected an amount (a number or a decimal string)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Money {
        Money::parse(s).unwrap()
    }

    #[test]
    fn sums_are_exact() {
        assert_eq!(m("0.1").checked_add(m("0.2")), Ok(m("0.3")));
        assert_eq!(m("0.7").checked_add(m("0.1")), Ok(m("0.8")));
        let from_json: Vec<Money> = serde_json::from_str("[0.1, 0.2, \"0.3\"]").unwrap();
        assert_eq!(Money::checked_sum(from_json), Ok(m("0.6")));
    }

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        let huge = m("79228162514264337593543950335");
        assert_eq!(huge.checked_add(m("1")), Err(Overflow));
        assert_eq!(Money::checked_sum([huge, huge]), Err(Overflow));
        assert_eq!(
            m("-79228162514264337593543950335").checked_sub(m("1")),
            Err(Overflow)
        );
    }

    #[test]
    fn prints_with_two_decimals_at_least() {
        assert_eq!(m("100").to_string(), "100.00");
        assert_eq!(m("100.5").to_string(), "100.50");
        assert_eq!(m("0.30").to_string(), "0.30");
        assert_eq!(m("1.125").to_string(), "1.125");
        assert_eq!(Money::from_cents(1500).to_string(), "15.00");
        assert_eq!(m("1.5e2").to_string(), "150.00");
    }

    #[test]
    fn bad_amounts_are_errors() {
        assert!(serde_json::from_str::<Money>("\"abc\"").is_err());
        assert!(serde_json::from_str::<Money>("null").is_err());
        assert!(serde_json::from_str::<Money>("[1]").is_err());
    }
}
