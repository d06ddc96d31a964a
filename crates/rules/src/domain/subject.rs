//! What a decision is about: a typed (kind, id). It is stored as one text,
//! `kind:id` (a decision's and an event's `subject`, part of the key that
//! makes a decision once), and on decisions also as its two parts
//! (`subject_kind`, `subject_id`, which the database derives from that
//! text) for queries to join on. Built here, read back by `parse`; nothing
//! else writes or cuts the text.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    Payment,
    MerchantOrder,
    Chargeback,
    PaymentIntent,
    PlatformOrder,
    /// A fraud alert's round: `ORDER:PAYMENT` (`-` for one not named),
    /// `#N` past the first round.
    FraudAlert,
}

impl SubjectKind {
    const ALL: [SubjectKind; 6] = [
        SubjectKind::Payment,
        SubjectKind::MerchantOrder,
        SubjectKind::Chargeback,
        SubjectKind::PaymentIntent,
        SubjectKind::PlatformOrder,
        SubjectKind::FraudAlert,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SubjectKind::Payment => "payment",
            SubjectKind::MerchantOrder => "merchant_order",
            SubjectKind::Chargeback => "chargeback",
            SubjectKind::PaymentIntent => "payment_intent",
            SubjectKind::PlatformOrder => "platform_order",
            SubjectKind::FraudAlert => "fraud_alert",
        }
    }

    pub fn parse(s: &str) -> Option<SubjectKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subject {
    pub kind: SubjectKind,
    pub id: String,
}

impl Subject {
    pub fn new(kind: SubjectKind, id: impl fmt::Display) -> Subject {
        Subject {
            kind,
            id: id.to_string(),
        }
    }

    pub fn merchant_order(id: impl fmt::Display) -> Subject {
        Subject::new(SubjectKind::MerchantOrder, id)
    }

    /// A stored subject read back; `None` for a text no kind starts.
    pub fn parse(text: &str) -> Option<Subject> {
        let (kind, id) = text.split_once(':')?;
        Some(Subject {
            kind: SubjectKind::parse(kind)?,
            id: id.to_string(),
        })
    }

    /// The order, intent or payment it is about, as a person looks it up:
    /// a fraud alert's is the merchant order it names.
    pub fn order(&self) -> Option<&str> {
        match self.kind {
            SubjectKind::MerchantOrder
            | SubjectKind::PlatformOrder
            | SubjectKind::PaymentIntent
            | SubjectKind::Payment => Some(&self.id),
            SubjectKind::FraudAlert => self.id.split(':').next().filter(|o| *o != "-"),
            SubjectKind::Chargeback => None,
        }
    }
}

/// As stored: `merchant_order:123`.
impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_reads_back_as_written() {
        for kind in SubjectKind::ALL {
            let s = Subject::new(kind, "12:34#2");
            assert_eq!(Subject::parse(&s.to_string()), Some(s));
        }
        assert_eq!(Subject::parse("fraud:1:2"), None);
        assert_eq!(Subject::parse("merchant_order"), None);
    }

    #[test]
    fn a_subject_names_its_order() {
        let order = |t: &str| Subject::parse(t).and_then(|s| s.order().map(str::to_string));
        assert_eq!(order("merchant_order:12").as_deref(), Some("12"));
        assert_eq!(order("fraud_alert:12:34#1").as_deref(), Some("12"));
        assert_eq!(order("fraud_alert:-:34"), None);
        assert_eq!(order("chargeback:1"), None);
    }
}
