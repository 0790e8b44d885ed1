//! How a request or a stream fails: every HTTP status and every `ERROR`
//! event becomes one [`Failure`], with the wait a `Retry-After` header or
//! a Status's `retryAfterSeconds` asks for.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// The longest wait a `Retry-After` can ask for.
pub const RETRY_AFTER_MAX: Duration = crate::watch::backoff::MAX;

/// Why a request or stream failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// An HTTP error status, or an `ERROR` event's Status.
    #[error("{code} {reason}: {message}")]
    Status {
        code: u16,
        reason: String,
        message: String,
        /// `Retry-After`, capped at [`RETRY_AFTER_MAX`].
        retry_after: Option<Duration>,
    },
    #[error("{0}")]
    Transport(#[from] kube::Error),
    #[error("building the request: {0}")]
    Build(#[from] kube::core::request::Error),
    #[error("reading the response: {0}")]
    Read(String),
    #[error("decoding the response: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error("reading the token file {0}: {1}")]
    Token(PathBuf, std::io::Error),
}

impl Failure {
    /// The HTTP (or Status) code, if the server sent one.
    pub fn code(&self) -> Option<u16> {
        match self {
            Failure::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// How long the server asked us to wait.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A `Status` object (an error body or an `ERROR` event), leniently.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct StatusBody {
    pub(super) kind: Option<String>,
    code: Option<u16>,
    reason: Option<String>,
    message: Option<String>,
    details: Option<StatusDetails>,
}

/// `details.retryAfterSeconds`: the wait a Status asks for where no
/// `Retry-After` header can (an `ERROR` event), or besides it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct StatusDetails {
    retry_after_seconds: Option<u64>,
}

impl StatusBody {
    /// An error response's body as a Status (else its first 200 bytes as
    /// the message), with the HTTP `reason` phrase where it names none.
    pub(super) fn of_response(body: &[u8], reason: String) -> StatusBody {
        let parsed = serde_json::from_slice::<StatusBody>(body).unwrap_or_else(|_| StatusBody {
            message: Some(String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_string()),
            ..StatusBody::default()
        });
        StatusBody {
            reason: parsed.reason.filter(|r| !r.is_empty()).or(Some(reason)),
            ..parsed
        }
    }

    pub(super) fn failure(self, http: u16, retry_after: Option<Duration>) -> Failure {
        let asked = self.details.and_then(|d| d.retry_after_seconds).filter(|s| *s > 0);
        let asked = asked.map(|s| Duration::from_secs(s).min(RETRY_AFTER_MAX));
        Failure::Status {
            code: self.code.filter(|c| *c != 0).unwrap_or(http),
            reason: self.reason.unwrap_or_default(),
            message: self.message.unwrap_or_default(),
            retry_after: retry_after.or(asked),
        }
    }
}
