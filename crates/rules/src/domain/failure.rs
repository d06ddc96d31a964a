//! Why a job failed, as a class and the endpoint it names: made where the
//! failure is (the API client's error, the worker's own), kept beside the
//! job's error text, and what a person's views group by. The text is for
//! reading; nothing parses it.

use std::fmt;

/// The kind of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The platform said to slow down (429).
    RateLimited,
    /// The platform failed (5xx).
    ServerError,
    /// No answer within the timeout.
    Timeout,
    /// The platform could not be reached.
    Unreachable,
    /// The account's access token was refused.
    TokenRefused,
    /// What was asked for does not exist (yet).
    NotFound,
    /// A 4xx other than the above.
    Refused,
    /// An answer that cannot be read.
    UnexpectedAnswer,
    /// An answer about another resource than the one asked for.
    WrongResource,
    /// No account of that name is configured.
    UnknownAccount,
    /// The platform's answers disagree: no rule decides, a person must
    /// look (a payment that is not its intent's).
    NeedsPerson,
    /// The platform has not reached a state a rule decides on yet.
    Waiting,
    /// What the job names cannot be worked on (unreadable work, amounts
    /// out of range, a saga that would loop).
    Unprocessable,
    /// The handler panicked.
    Panicked,
    /// Storage failed under the run.
    Storage,
}

impl FailureClass {
    const ALL: [FailureClass; 15] = [
        FailureClass::RateLimited,
        FailureClass::ServerError,
        FailureClass::Timeout,
        FailureClass::Unreachable,
        FailureClass::TokenRefused,
        FailureClass::NotFound,
        FailureClass::Refused,
        FailureClass::UnexpectedAnswer,
        FailureClass::WrongResource,
        FailureClass::UnknownAccount,
        FailureClass::NeedsPerson,
        FailureClass::Waiting,
        FailureClass::Unprocessable,
        FailureClass::Panicked,
        FailureClass::Storage,
    ];

    /// As stored (a column), and as forms and the API name it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::RateLimited => "rate_limited",
            FailureClass::ServerError => "server_error",
            FailureClass::Timeout => "timeout",
            FailureClass::Unreachable => "unreachable",
            FailureClass::TokenRefused => "token_refused",
            FailureClass::NotFound => "not_found",
            FailureClass::Refused => "refused",
            FailureClass::UnexpectedAnswer => "unexpected_answer",
            FailureClass::WrongResource => "wrong_resource",
            FailureClass::UnknownAccount => "unknown_account",
            FailureClass::NeedsPerson => "needs_person",
            FailureClass::Waiting => "waiting",
            FailureClass::Unprocessable => "unprocessable",
            FailureClass::Panicked => "panicked",
            FailureClass::Storage => "storage",
        }
    }

    pub fn parse(s: &str) -> Option<FailureClass> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// In a person's words.
    pub fn words(self) -> &'static str {
        match self {
            FailureClass::RateLimited => "rate limited",
            FailureClass::ServerError => "server error",
            FailureClass::Timeout => "timeout",
            FailureClass::Unreachable => "platform unreachable",
            FailureClass::TokenRefused => "access token refused",
            FailureClass::NotFound => "not found",
            FailureClass::Refused => "refused",
            FailureClass::UnexpectedAnswer => "unexpected answer",
            FailureClass::WrongResource => "wrong resource",
            FailureClass::UnknownAccount => "unknown account",
            FailureClass::NeedsPerson => "a person must look",
            FailureClass::Waiting => "still waiting for the platform",
            FailureClass::Unprocessable => "cannot be worked on",
            FailureClass::Panicked => "the handler panicked",
            FailureClass::Storage => "storage error",
        }
    }
}

/// A failure: its class, the HTTP status that made it (for the platform's
/// own refusals and errors) and the API endpoint it names, if any.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Failure {
    pub class: FailureClass,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

impl Failure {
    /// A failure of the worker's own, naming no endpoint.
    pub fn of(class: FailureClass) -> Failure {
        Failure {
            class,
            status: None,
            endpoint: None,
        }
    }
}

/// The class with its status: `server error 500`, `refused 409`.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.class.words())?;
        match self.status {
            Some(status) => write!(f, " {status}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_reads_back_as_stored() {
        for c in FailureClass::ALL {
            assert_eq!(FailureClass::parse(c.as_str()), Some(c));
            // The API names it as the column holds it.
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::json!(c.as_str())
            );
        }
        assert_eq!(FailureClass::parse("server error"), None);
    }

    #[test]
    fn a_failure_says_its_class_and_status() {
        let f = Failure {
            class: FailureClass::ServerError,
            status: Some(500),
            endpoint: Some("merchant_order".into()),
        };
        assert_eq!(f.to_string(), "server error 500");
        assert_eq!(Failure::of(FailureClass::Timeout).to_string(), "timeout");
    }
}
