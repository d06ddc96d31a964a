//! Classification: from a request's query and body to the kind of
//! notification, the resource it names and the work it asks for. Pure: no
//! I/O, no clock, so every shape the platform sends is unit-tested here.
//!
//! Tolerant by design: ids come as numbers or strings,
//! numbers may have leading zeros, unknown fields are ignored, an IPN body
//! is never validated, and a well-formed notification of a topic nothing
//! acts on is `work: None` (stored and answered 200, so that the platform
//! stops sending it). What is refused (400) is what names a resource we act
//! on with an id that is not an id of that kind, and bytes that are no
//! notification at all.

use serde_json::Value;

use super::lenient_json;
use crate::domain::ids::loose_text;
use crate::domain::work::DESCRIPTION_MAX;
use crate::domain::{
    FraudAlert, Id, IdError, IdKind, IntentId, Kind, MerchantOrderId, PaymentId, ResourceId, Work,
};

use pointhook_common::query::Query;

/// A request that is a notification we can store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub kind: Kind,
    /// The topic (IPN), type (webhook) or `payment_intent`, as received.
    pub topic: String,
    /// What the notification names, if anything.
    pub resource_id: Option<ResourceId>,
    /// The webhook body's own `id` (or `_id`), when it has one.
    pub notification_id: Option<String>,
    /// `None`: a topic nothing acts on; recorded and answered 200.
    pub work: Option<Work>,
}

impl Classified {
    pub fn is_fraud_alert(&self) -> bool {
        matches!(self.work, Some(Work::FraudAlert(_)))
    }

    /// Marks a fraud alert authenticated when a valid, `fresh` signature
    /// was made over `signed_id` (the query's `data.id`) and that id is the
    /// alert's payment or merchant order: a signature binds the id, not the
    /// body.
    pub fn authenticate(&mut self, signed_id: &str, fresh: bool) {
        if let Some(Work::FraudAlert(a)) = &mut self.work {
            let payment = a.payment.as_ref().is_some_and(|p| p.as_str() == signed_id);
            let order = a
                .merchant_order
                .as_ref()
                .is_some_and(|o| o.as_str() == signed_id);
            a.authenticated = fresh && (payment || order);
        }
    }
}

/// Why a request is not a notification (answered 400, naming the problem).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassifyError {
    #[error("body is not valid JSON: {0}")]
    MalformedJson(String),
    #[error("missing {0}")]
    Missing(&'static str),
    #[error("{field}: {kind} {error}")]
    InvalidId {
        field: &'static str,
        kind: &'static str,
        error: IdError,
    },
    #[error("{field} must be a string or a number")]
    IdType { field: &'static str },
    #[error(
        "unrecognised notification: expected ?topic=&id= (IPN), ?type=&data.id= or a body \
         with type (webhook), a body with topic and resource, or a body with id and state \
         (payment intent)"
    )]
    Unrecognised,
}

impl ClassifyError {
    /// A short machine-readable code for the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            ClassifyError::MalformedJson(_) => "malformed_json",
            ClassifyError::Missing(_) => "missing_field",
            ClassifyError::InvalidId { .. } | ClassifyError::IdType { .. } => "invalid_id",
            ClassifyError::Unrecognised => "unrecognised_notification",
        }
    }
}

/// The topic of intent-body deliveries, which carry none of their own.
pub const INTENT_TOPIC: &str = "payment_intent";

pub fn classify(query: &Query, body: &[u8]) -> Result<Classified, ClassifyError> {
    if let Some(topic) = query.get("topic") {
        return ipn(topic, query.get("id"), body);
    }
    let json = parse_body(body);
    if let Some(topic) = query.get("type") {
        // The query names the notification: the body is only recorded.
        return webhook(topic, query.get("data.id"), json.ok().flatten().as_ref());
    }
    let json = json?;
    let body_type = json
        .as_ref()
        .and_then(|v| v.get("type"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    if let Some(topic) = body_type {
        return webhook(topic, query.get("data.id"), json.as_ref());
    }
    if query.get("data.id").is_some() {
        return Err(ClassifyError::Missing("type"));
    }
    let Some(v) = &json else {
        return Err(ClassifyError::Unrecognised);
    };
    if let Some(topic) = v
        .get("topic")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        && v.get("resource").is_some()
    {
        return ipn(topic, None, body);
    }
    if v.get("state").is_some() && v.get("id").is_some() {
        return intent_body(v);
    }
    Err(ClassifyError::Unrecognised)
}

/// `?topic=…&id=…`; the query wins, a body naming the resource is only a
/// fallback, and the body is never validated.
fn ipn(topic: &str, query_id: Option<&str>, body: &[u8]) -> Result<Classified, ClassifyError> {
    let json = parse_body(body).ok().flatten();
    let id_text = query_id
        .map(str::to_string)
        .or_else(|| body_resource(json.as_ref()));
    let resource_id = id_text.as_deref().and_then(|t| ResourceId::parse(t).ok());
    let field = if query_id.is_some() { "id" } else { "resource" };
    let required = |kind| id_text.as_deref().ok_or(ClassifyError::Missing(kind));
    let work = match topic {
        "payment" => Some(Work::Payment {
            id: id(field, required("query parameter id")?)?,
        }),
        "merchant_order" | "merchant_orders" => Some(Work::MerchantOrder {
            id: id(field, required("query parameter id")?)?,
        }),
        "chargebacks" => Some(Work::Chargeback {
            id: id(field, required("query parameter id")?)?,
        }),
        "point_integration_ipn" => Some(Work::PaymentIntent {
            id: id(field, required("query parameter id")?)?,
        }),
        // The query id is not relied on: the body names order and payment.
        "delivery_cancellation" => Some(fraud_alert(json.as_ref(), resource_id.clone())?),
        _ => None,
    };
    Ok(Classified {
        kind: Kind::Ipn,
        topic: topic.to_string(),
        resource_id,
        notification_id: None,
        work,
    })
}

/// `?type=…&data.id=…` and/or a `{"type","data":{"id"}}` body. A type
/// nothing acts on needs no `data.id`.
fn webhook(
    topic: &str,
    query_id: Option<&str>,
    json: Option<&Value>,
) -> Result<Classified, ClassifyError> {
    let body_field = |pointer: &str| {
        json.and_then(|v| v.pointer(pointer))
            .filter(|v| !v.is_null())
    };
    let (data_id, field) = match (query_id, body_field("/data/id")) {
        (Some(id), _) => (Some(id.to_string()), "data.id"),
        (None, Some(v)) => (
            Some(loose_text(v).ok_or(ClassifyError::IdType { field: "data.id" })?),
            "data.id",
        ),
        // Bodies seen without data.id name the resource in their own `id`:
        // merchant orders (as integrators log them) and intent bodies.
        (None, None)
            if topic == "topic_merchant_order_wh"
                || (topic == "point_integration_wh" && body_field("/state").is_some()) =>
        {
            (body_field("/id").and_then(loose_text), "id")
        }
        (None, None) => (None, "data.id"),
    };
    let resource_id = data_id.as_deref().and_then(|t| ResourceId::parse(t).ok());
    let required = || data_id.as_deref().ok_or(ClassifyError::Missing("data.id"));
    let work = match topic {
        "payment" => Some(Work::Payment {
            id: id(field, required()?)?,
        }),
        "topic_merchant_order_wh" => Some(Work::MerchantOrder {
            id: id(field, required()?)?,
        }),
        "topic_chargebacks_wh" => Some(Work::Chargeback {
            id: id(field, required()?)?,
        }),
        "point_integration_wh" => Some(Work::PaymentIntent {
            id: id(field, required()?)?,
        }),
        // The Orders API (`ORD…`): not a merchant order.
        "order" => Some(Work::PlatformOrder {
            id: id(field, required()?)?,
        }),
        "stop_delivery_op_wh" => Some(fraud_alert(json, resource_id.clone())?),
        _ => None,
    };
    let notification_id = json
        .and_then(|v| v.get("id").or_else(|| v.get("_id")))
        .and_then(loose_text)
        .filter(|s| !s.is_empty());
    Ok(Classified {
        kind: Kind::Webhook,
        topic: topic.to_string(),
        resource_id,
        notification_id,
        work,
    })
}

/// A payment-intent body: only a pointer to the intent, whatever state it
/// claims.
fn intent_body(body: &Value) -> Result<Classified, ClassifyError> {
    let text = loose_text(&body["id"]).ok_or(ClassifyError::IdType { field: "id" })?;
    let intent: IntentId = id("id", &text)?;
    Ok(Classified {
        kind: Kind::IntentWebhook,
        topic: INTENT_TOPIC.to_string(),
        resource_id: ResourceId::parse(intent.as_str()).ok(),
        notification_id: None,
        work: Some(Work::PaymentIntent { id: intent }),
    })
}

/// `merchant_order`, `payment_id` and `description` of a fraud alert, at the
/// top level or under `data`. An alert naming neither is still work: the
/// job resolves what it can from the notification's own id.
fn fraud_alert(json: Option<&Value>, notified: Option<ResourceId>) -> Result<Work, ClassifyError> {
    let field = |name: &str| {
        json.and_then(|v| {
            v.get(name)
                .or_else(|| v.get("data").and_then(|d| d.get(name)))
        })
        .filter(|v| !v.is_null())
    };
    let loose = |name: &'static str| {
        field(name)
            .map(|v| loose_text(v).ok_or(ClassifyError::IdType { field: name }))
            .transpose()
    };
    let merchant_order: Option<MerchantOrderId> = loose("merchant_order")?
        .map(|t| id("merchant_order", &t))
        .transpose()?;
    let payment: Option<PaymentId> = loose("payment_id")?
        .map(|t| id("payment_id", &t))
        .transpose()?;
    let description = field("description")
        .and_then(Value::as_str)
        .map(|d| d.chars().take(DESCRIPTION_MAX).collect());
    // A webhook's data.id is the payment when the body names none.
    let payment = match (payment, &notified) {
        (Some(p), _) => Some(p),
        (None, Some(n)) if merchant_order.is_some() => n.cast().ok(),
        (None, _) => None,
    };
    Ok(Work::FraudAlert(FraudAlert {
        notified_id: notified.filter(|_| payment.is_none() && merchant_order.is_none()),
        merchant_order,
        payment,
        description,
        authenticated: false,
    }))
}

/// The id in a body's `resource`: a bare id or the last segment of a URL.
fn body_resource(json: Option<&Value>) -> Option<String> {
    let resource = json?.get("resource")?;
    let text = loose_text(resource)?;
    let last = text.trim_end_matches('/').rsplit('/').next()?;
    (!last.is_empty()).then(|| last.to_string())
}

/// An empty body is no body, whatever the content-type says.
fn parse_body(body: &[u8]) -> Result<Option<Value>, ClassifyError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    lenient_json::parse(body)
        .map(Some)
        .map_err(|e| ClassifyError::MalformedJson(e.to_string()))
}

fn id<K: IdKind>(field: &'static str, s: &str) -> Result<Id<K>, ClassifyError> {
    Id::parse(s).map_err(|error| ClassifyError::InvalidId {
        field,
        kind: K::NAME,
        error,
    })
}

#[cfg(test)]
mod tests;
