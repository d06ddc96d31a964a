//! What an order is known by: its references as the API gave them (the
//! merchant's external reference, its payments, their payers' e-mails, an
//! intent's or an Orders API order's id). Kept with the order where it is
//! recorded, so a search finds it by any of them, whatever was told.

use super::platform::{MerchantOrder, Payment, PaymentIntent, PlatformOrder};

/// The longest reference kept (a search never asks for a longer one).
pub const MAX_REF: usize = 200;

/// What kind of reference a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    ExternalReference,
    PayerEmail,
    Payment,
    Intent,
    PlatformOrder,
}

impl RefKind {
    pub const ALL: [RefKind; 5] = [
        RefKind::ExternalReference,
        RefKind::PayerEmail,
        RefKind::Payment,
        RefKind::Intent,
        RefKind::PlatformOrder,
    ];

    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            RefKind::ExternalReference => "external_reference",
            RefKind::PayerEmail => "payer_email",
            RefKind::Payment => "payment",
            RefKind::Intent => "intent",
            RefKind::PlatformOrder => "platform_order",
        }
    }

    pub fn parse(text: &str) -> Option<RefKind> {
        RefKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// As a person reads it beside a search's result.
    pub fn label(self) -> &'static str {
        match self {
            RefKind::ExternalReference => "external reference",
            RefKind::PayerEmail => "payer e-mail",
            RefKind::Payment => "payment",
            RefKind::Intent => "payment intent",
            RefKind::PlatformOrder => "Orders API order",
        }
    }

    /// A value as kept and as looked up: e-mails in lower case (a person
    /// types them either way), everything else as written.
    pub fn normal(self, value: &str) -> String {
        match self {
            RefKind::PayerEmail => value.trim().to_lowercase(),
            _ => value.trim().to_string(),
        }
    }
}

/// One reference of one order (`subject`: `merchant_order:…`,
/// `payment_intent:…`, `platform_order:…`, or `payment:…` for a payment
/// of no merchant order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRef {
    pub subject: String,
    pub kind: RefKind,
    pub value: String,
}

#[derive(Default)]
struct Refs {
    subject: String,
    refs: Vec<OrderRef>,
}

impl Refs {
    fn of(subject: String) -> Refs {
        Refs {
            subject,
            refs: Vec::new(),
        }
    }

    fn add(&mut self, kind: RefKind, value: Option<&str>) {
        let Some(value) = value.map(|v| kind.normal(v)) else {
            return;
        };
        if value.is_empty() || value.len() > MAX_REF {
            return;
        }
        let r = OrderRef {
            subject: self.subject.clone(),
            kind,
            value,
        };
        if !self.refs.contains(&r) {
            self.refs.push(r);
        }
    }
}

/// A merchant order's references, with what its payment read alongside
/// adds (its payer's e-mail, its own external reference).
pub fn of_merchant_order(order: &MerchantOrder, payment: Option<&Payment>) -> Vec<OrderRef> {
    let mut r = Refs::of(format!("merchant_order:{}", order.id));
    r.add(
        RefKind::ExternalReference,
        order.external_reference.as_deref(),
    );
    for p in &order.payments {
        r.add(RefKind::Payment, Some(p.id.as_str()));
    }
    if let Some(p) = payment.filter(|p| p.merchant_order.as_ref() == Some(&order.id)) {
        payment_refs(&mut r, p);
    }
    r.refs
}

/// A payment's references, under its merchant order when it has one.
pub fn of_payment(payment: &Payment) -> Vec<OrderRef> {
    let mut r = Refs::of(match &payment.merchant_order {
        Some(order) => format!("merchant_order:{order}"),
        None => format!("payment:{}", payment.id),
    });
    payment_refs(&mut r, payment);
    r.refs
}

fn payment_refs(r: &mut Refs, p: &Payment) {
    r.add(RefKind::Payment, Some(p.id.as_str()));
    r.add(RefKind::PayerEmail, p.payer_email.as_deref());
    r.add(RefKind::ExternalReference, p.external_reference.as_deref());
}

/// An intent's references, with its payment's when it was read.
pub fn of_intent(intent: &PaymentIntent, payment: Option<&Payment>) -> Vec<OrderRef> {
    let mut r = Refs::of(format!("payment_intent:{}", intent.id));
    r.add(RefKind::Intent, Some(intent.id.as_str()));
    r.add(
        RefKind::ExternalReference,
        intent.external_reference.as_deref(),
    );
    r.add(
        RefKind::Payment,
        intent.payment.as_ref().map(|p| p.as_str()),
    );
    if let Some(p) = payment {
        payment_refs(&mut r, p);
    }
    r.refs
}

/// An order of the Orders API's references.
pub fn of_platform_order(order: &PlatformOrder) -> Vec<OrderRef> {
    let mut r = Refs::of(format!("platform_order:{}", order.id));
    r.add(RefKind::PlatformOrder, Some(order.id.as_str()));
    r.add(
        RefKind::ExternalReference,
        order.external_reference.as_deref(),
    );
    for t in &order.payments {
        r.add(
            RefKind::Payment,
            t.payment_id().as_ref().map(|p| p.as_str()),
        );
    }
    r.refs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_back_as_written() {
        for k in RefKind::ALL {
            assert_eq!(RefKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(RefKind::PayerEmail.normal(" Ana@X.com "), "ana@x.com");
        assert_eq!(RefKind::ExternalReference.normal("Ref-1"), "Ref-1");
    }
}
