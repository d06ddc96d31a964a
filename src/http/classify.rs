//! Classification: from a request's query and body to the kind of
//! notification, the resource it names and the work it asks for. Pure: no
//! I/O, no clock, so every shape the platform sends is unit-tested here.
//!
//! Tolerant by design (DESIGN section 2): ids come as numbers or strings,
//! unknown fields are ignored, an IPN body is never validated, and a
//! well-formed notification of a topic we do not handle is `work: None`
//! (stored and answered 200, so that the platform stops sending it).

use serde_json::Value;

use crate::domain::{IdError, IntentState, JobKind, Kind, ResourceId, Work};

/// The query parameters of a request, in order, percent-decoded.
#[derive(Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(raw: &str) -> Query {
        Query(
            form_urlencoded::parse(raw.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`, if present and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }
}

/// A request that is a notification we can store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub kind: Kind,
    /// The topic (IPN), type (webhook) or `payment_intent`, as received.
    pub topic: String,
    pub resource_id: ResourceId,
    /// The webhook body's own `id`, when it has one.
    pub notification_id: Option<String>,
    /// `None`: a topic we do not handle; recorded and answered 200.
    pub work: Option<Work>,
}

impl Classified {
    pub fn is_fraud_alert(&self) -> bool {
        matches!(self.work, Some(Work::FraudAlert { .. }))
    }
}

/// Why a request is not a notification (answered 400, naming the problem).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassifyError {
    #[error("body is not valid JSON: {0}")]
    MalformedJson(String),
    #[error("missing {0}")]
    Missing(&'static str),
    #[error("{field} {error}")]
    InvalidId { field: &'static str, error: IdError },
    #[error("{field} must be a string or a number")]
    IdType { field: &'static str },
    #[error(
        "unrecognised notification: expected ?topic=&id= (IPN), ?type=&data.id= or a body \
         with type and data.id (webhook), or a body with id and state (payment intent)"
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
        return classify_ipn(topic, query, body);
    }
    let json = parse_body(body)?;
    if query.get("type").is_some() || query.get("data.id").is_some() {
        return classify_webhook(query, json.as_ref());
    }
    match &json {
        Some(v) if v.get("type").is_some() && v.get("data").is_some() => {
            classify_webhook(query, json.as_ref())
        }
        Some(v) if v.get("state").is_some() && v.get("id").is_some() => classify_intent(v),
        Some(_) => Err(ClassifyError::Unrecognised),
        None => Err(ClassifyError::Unrecognised),
    }
}

fn classify_ipn(topic: &str, query: &Query, body: &[u8]) -> Result<Classified, ClassifyError> {
    if topic == "delivery_cancellation" {
        // The query id is not relied on: the body names order and payment.
        let json = parse_body(body)?;
        let (merchant_order, payment) = fraud_fields(json.as_ref())?;
        let payment =
            payment.ok_or(ClassifyError::Missing("payment_id in the fraud alert body"))?;
        let resource_id = match query.get("id") {
            Some(id) => parse_id("id", id)?,
            None => payment.clone(),
        };
        return Ok(Classified {
            kind: Kind::Ipn,
            topic: topic.to_string(),
            resource_id,
            notification_id: None,
            work: Some(Work::FraudAlert {
                merchant_order,
                payment,
            }),
        });
    }
    // The query wins; a body naming the resource is only a fallback.
    let id = match query.get("id") {
        Some(id) => parse_id("id", id)?,
        None => ipn_body_resource(body).ok_or(ClassifyError::Missing("query parameter id"))?,
    };
    let kind = match topic {
        "payment" => Some(JobKind::Payment),
        "merchant_order" | "merchant_orders" => Some(JobKind::MerchantOrder),
        "chargebacks" => Some(JobKind::Chargeback),
        "point_integration_ipn" => Some(JobKind::PaymentIntent),
        _ => None,
    };
    Ok(Classified {
        kind: Kind::Ipn,
        topic: topic.to_string(),
        work: kind.map(|kind| Work::Fetch {
            kind,
            id: id.clone(),
        }),
        resource_id: id,
        notification_id: None,
    })
}

fn classify_webhook(query: &Query, json: Option<&Value>) -> Result<Classified, ClassifyError> {
    let topic = match query.get("type") {
        Some(t) => t.to_string(),
        None => json
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or(ClassifyError::Missing("type"))?
            .to_string(),
    };
    let data_id = match query.get("data.id") {
        Some(id) => Some(parse_id("data.id", id)?),
        None => loose_id(json.and_then(|v| v.pointer("/data/id")), "data.id")?,
    };
    let notification_id = json
        .and_then(|v| v.get("id"))
        .and_then(loose_string)
        .filter(|s| !s.is_empty());

    if topic == "stop_delivery_op_wh" {
        let (merchant_order, payment) = fraud_fields(json)?;
        let payment = payment
            .or_else(|| data_id.clone())
            .ok_or(ClassifyError::Missing("payment_id in the fraud alert body"))?;
        return Ok(Classified {
            kind: Kind::Webhook,
            topic,
            resource_id: data_id.unwrap_or_else(|| payment.clone()),
            notification_id,
            work: Some(Work::FraudAlert {
                merchant_order,
                payment,
            }),
        });
    }

    let id = data_id.ok_or(ClassifyError::Missing("data.id"))?;
    let kind = match topic.as_str() {
        "payment" => Some(JobKind::Payment),
        "topic_merchant_order_wh" => Some(JobKind::MerchantOrder),
        "topic_chargebacks_wh" => Some(JobKind::Chargeback),
        "point_integration_wh" => Some(JobKind::PaymentIntent),
        _ => None,
    };
    Ok(Classified {
        kind: Kind::Webhook,
        topic,
        work: kind.map(|kind| Work::Fetch {
            kind,
            id: id.clone(),
        }),
        resource_id: id,
        notification_id,
    })
}

fn classify_intent(body: &Value) -> Result<Classified, ClassifyError> {
    let intent = loose_id(body.get("id"), "id")?.ok_or(ClassifyError::Missing("id"))?;
    let state = body
        .get("state")
        .and_then(Value::as_str)
        .ok_or(ClassifyError::Missing("state (a string)"))?;
    Ok(Classified {
        kind: Kind::IntentWebhook,
        topic: INTENT_TOPIC.to_string(),
        work: IntentState::parse(state).map(|state| Work::IntentBody {
            intent: intent.clone(),
            state,
        }),
        resource_id: intent,
        notification_id: None,
    })
}

/// `merchant_order` and `payment_id` of a fraud alert, at the top level or
/// under `data`.
fn fraud_fields(
    json: Option<&Value>,
) -> Result<(Option<ResourceId>, Option<ResourceId>), ClassifyError> {
    let field = |name: &str| {
        json.and_then(|v| {
            v.get(name)
                .or_else(|| v.get("data").and_then(|d| d.get(name)))
        })
    };
    Ok((
        loose_id(field("merchant_order"), "merchant_order")?,
        loose_id(field("payment_id"), "payment_id")?,
    ))
}

/// The id in an IPN body's `resource`: a bare id or the last segment of a URL.
fn ipn_body_resource(body: &[u8]) -> Option<ResourceId> {
    let json: Value = serde_json::from_slice(body).ok()?;
    let resource = json.get("resource")?.as_str()?;
    let last = resource.trim_end_matches('/').rsplit('/').next()?;
    ResourceId::parse(last).ok()
}

/// An empty body is no body, whatever the content-type says.
fn parse_body(body: &[u8]) -> Result<Option<Value>, ClassifyError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(body)
        .map(Some)
        .map_err(|e| ClassifyError::MalformedJson(e.to_string()))
}

fn parse_id(field: &'static str, s: &str) -> Result<ResourceId, ClassifyError> {
    ResourceId::parse(s).map_err(|error| ClassifyError::InvalidId { field, error })
}

/// An id sent as a string or a number; `null` counts as absent.
fn loose_id(v: Option<&Value>, field: &'static str) -> Result<Option<ResourceId>, ClassifyError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let s = loose_string(v).ok_or(ClassifyError::IdType { field })?;
            parse_id(field, &s).map(Some)
        }
    }
}

fn loose_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
