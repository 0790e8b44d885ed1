//! The API server's wire as the watch path speaks it: one request at a
//! time with the service account's token read from its file for each one,
//! every HTTP status surfaced to the follower (with `Retry-After`), and a
//! watch stream framed and decoded here, one event at a time.
//!
//! kube's client is the transport (TLS, kubeconfig, proxies), but not the
//! policy: its retry layer is off (it retried 429/503/504 up to 15 times
//! inside one call, unlogged, with waits up to 1000 s and any
//! `Retry-After`), and a token file is not left to its 60-second cache, so
//! a rotated token is used on the next request and a `401` is followed by
//! a request with the file read again.
//!
//! Decoding is lenient where a real server can surprise: an object the
//! lean types cannot read is reported ([`Event::Malformed`]) and skipped
//! with its resourceVersion, not a failure that would resume the watch
//! before it again and again; a bookmark needs only its resourceVersion;
//! events may arrive split across chunks or several in one.

use std::path::PathBuf;
use std::time::Duration;

use http_body_util::BodyExt;
use kube::client::Body;
use kube::Client;
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::lean::{Meta, Object};

/// The longest one list page (request and body) may take; the API
/// server's own request timeout is 60 s.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest wait a `Retry-After` can ask for.
pub const RETRY_AFTER_MAX: Duration = super::backoff::MAX;

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
struct StatusBody {
    kind: Option<String>,
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
    fn failure(self, http: u16, retry_after: Option<Duration>) -> Failure {
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

/// The client and how it authenticates.
pub struct Api {
    pub client: Client,
    /// A bearer token file, read for every request.
    pub token_file: Option<PathBuf>,
    /// `apiserver_qps`, `apiserver_burst`, `apiserver_max_inflight`.
    pub throttle: super::throttle::Throttle,
}

impl Api {
    /// Sends one request; an error status becomes a [`Failure::Status`].
    pub async fn send(&self, mut req: http::Request<Vec<u8>>) -> Result<http::Response<Body>, Failure> {
        let _in_flight = self.throttle.admit().await; // until the response (headers) is in
        if let Some(path) = &self.token_file {
            let text = std::fs::read_to_string(path).map_err(|e| Failure::Token(path.clone(), e))?;
            let value = http::HeaderValue::from_str(&format!("Bearer {}", text.trim()))
                .map_err(|_| Failure::Read(format!("the token in {} is not a valid header value", path.display())))?;
            req.headers_mut().insert(http::header::AUTHORIZATION, value);
        }
        let res = self.client.send(req.map(Body::from)).await?;
        let status = res.status();
        if status.is_success() {
            return Ok(res);
        }
        let retry_after = res
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(RETRY_AFTER_MAX));
        let body = res
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let parsed = serde_json::from_slice::<StatusBody>(&body).unwrap_or_else(|_| StatusBody {
            message: Some(String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_string()),
            ..StatusBody::default()
        });
        let reason = status.canonical_reason().unwrap_or_default().to_string();
        let parsed = StatusBody {
            reason: parsed.reason.filter(|r| !r.is_empty()).or(Some(reason)),
            ..parsed
        };
        Err(parsed.failure(status.as_u16(), retry_after))
    }

    /// Sends a list request and reads its whole body into `buf` (cleared
    /// first), bounded in time. One buffer serves every page of a list:
    /// a page's text is allocated once, not per page (per-page buffers of
    /// a few hundred kB left the allocator holding freed memory between
    /// long-lived records: RSS, not heap).
    pub async fn fetch_into(&self, req: http::Request<Vec<u8>>, buf: &mut Vec<u8>) -> Result<(), Failure> {
        buf.clear();
        let read = async {
            let mut body = self.send(req).await?.into_body();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| Failure::Read(e.to_string()))?;
                if let Some(data) = frame.data_ref() {
                    buf.extend_from_slice(data);
                }
            }
            Ok(())
        };
        tokio::time::timeout(PAGE_TIMEOUT, read)
            .await
            .unwrap_or(Err(Failure::Timeout(PAGE_TIMEOUT)))
    }
}

/// One decoded watch event.
#[derive(Debug)]
pub enum Event<T> {
    Upsert(T),
    /// A deletion needs only the last state's metadata.
    Delete(Meta),
    /// Every change up to this resourceVersion has been sent.
    Bookmark(String),
    /// An `ERROR` event (or a bare Status): `410` means expired.
    Error(Failure),
    /// An object the lean types could not read: skipped.
    Malformed {
        meta: Meta,
        error: String,
    },
    /// An event type this client does not know: skipped.
    Unknown(String),
}

/// The typed reading of one event (the fast path).
#[derive(Deserialize)]
#[serde(tag = "type", content = "object", rename_all = "UPPERCASE")]
#[serde(bound = "T: Deserialize<'de>")]
enum Typed<T> {
    Added(T),
    Modified(T),
    Deleted(Skeleton),
    Bookmark(Skeleton),
    Error(StatusBody),
}

/// An object's metadata alone.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Skeleton {
    pub metadata: Meta,
}

/// Decodes one event's text.
pub fn decode<T: Object>(text: &[u8]) -> Result<Event<T>, Failure> {
    if let Ok(typed) = serde_json::from_slice::<Typed<T>>(text) {
        return Ok(match typed {
            Typed::Added(o) | Typed::Modified(o) => Event::Upsert(o),
            Typed::Deleted(s) => Event::Delete(s.metadata),
            Typed::Bookmark(s) => Event::Bookmark(s.metadata.resource_version.unwrap_or_default()),
            Typed::Error(s) => Event::Error(s.failure(500, None)),
        });
    }
    // The slow path: find out what did not fit.
    let value: serde_json::Value = serde_json::from_slice(text)?;
    let kind = value.get("type").and_then(|t| t.as_str()).map(str::to_string);
    let Some(kind) = kind else {
        let status = StatusBody::deserialize(&value).unwrap_or_default();
        if status.kind.as_deref() == Some("Status") {
            return Ok(Event::Error(status.failure(500, None)));
        }
        return Ok(Event::Unknown("(an object without a type)".into()));
    };
    let object = value.get("object").unwrap_or(&serde_json::Value::Null);
    match kind.as_str() {
        "ADDED" | "MODIFIED" => {
            let error = T::deserialize(object).err().map_or_else(String::new, |e| e.to_string());
            Ok(Event::Malformed {
                meta: skeleton(object),
                error,
            })
        }
        "DELETED" => Ok(Event::Delete(skeleton(object))),
        "BOOKMARK" => Ok(Event::Bookmark(skeleton(object).resource_version.unwrap_or_default())),
        "ERROR" => Ok(Event::Error(
            StatusBody::deserialize(object).unwrap_or_default().failure(500, None),
        )),
        _ => Ok(Event::Unknown(kind)),
    }
}

/// The metadata of an object, as far as it can be read.
fn skeleton(object: &serde_json::Value) -> Meta {
    if let Ok(s) = Skeleton::deserialize(object) {
        return s.metadata;
    }
    let field = |name: &str| object["metadata"][name].as_str().map(str::to_string);
    Meta {
        name: field("name"),
        namespace: field("namespace"),
        resource_version: field("resourceVersion"),
        ..Meta::default()
    }
}

/// One item of a page read on its own.
pub enum Item<T> {
    Read(T),
    Unreadable { meta: Meta, error: String },
}

/// One list page's items, each read on its own: the slow path for a page
/// the typed reading rejected.
pub fn lenient_items<T: Object>(text: &[u8]) -> Result<(super::lean::ListMeta, Vec<Item<T>>), Failure> {
    let mut value: serde_json::Value = serde_json::from_slice(text)?;
    let meta = super::lean::ListMeta::deserialize(&value["metadata"]).unwrap_or_default();
    let items = match value.get_mut("items").map(serde_json::Value::take) {
        Some(serde_json::Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let items = items
        .into_iter()
        .map(|item| match T::deserialize(&item) {
            Ok(object) => Item::Read(object),
            Err(e) => Item::Unreadable {
                meta: skeleton(&item),
                error: e.to_string(),
            },
        })
        .collect();
    Ok((meta, items))
}

/// A watch response body cut into events: each one complete JSON value,
/// wherever the chunks split them.
pub struct Frames<B = Body> {
    body: B,
    buf: Vec<u8>,
    /// Whether `buf` may hold a complete value not yet taken.
    ready: bool,
}

/// The most one event may take (an object is at most about 1.5 MB in etcd).
const MAX_EVENT: usize = 64 << 20;

impl<B> Frames<B>
where
    B: http_body::Body + Unpin,
    B::Data: AsRef<[u8]>,
    B::Error: std::fmt::Display,
{
    pub fn new(body: B) -> Self {
        Frames {
            body,
            buf: Vec::new(),
            ready: false,
        }
    }

    /// The next event's text; `None` when the stream ended (cleanly or
    /// not: either way the watch resumes).
    pub async fn next(&mut self) -> Option<Result<Vec<u8>, Failure>> {
        loop {
            if self.ready {
                match self.take() {
                    Ok(Some(event)) => return Some(Ok(event)),
                    Ok(None) => self.ready = false,
                    Err(e) => return Some(Err(e)),
                }
            }
            let frame = match self.body.frame().await? {
                Ok(frame) => frame,
                Err(e) => {
                    tracing::debug!(target: "kubernetes", "watch stream ended: {e}");
                    return None;
                }
            };
            let Ok(data) = frame.into_data() else { continue };
            let data = data.as_ref();
            self.buf.extend_from_slice(data);
            if self.buf.len() > MAX_EVENT {
                return Some(Err(Failure::Read(format!("an event larger than {MAX_EVENT} bytes"))));
            }
            // A complete value ends with '}' (then maybe whitespace); the
            // API server ends each event with a newline.
            self.ready =
                data.contains(&b'\n') || self.buf.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
        }
    }

    /// Takes the first complete value out of the buffer.
    fn take(&mut self) -> Result<Option<Vec<u8>>, Failure> {
        let start = self.buf.iter().position(|b| !b.is_ascii_whitespace());
        let Some(start) = start else {
            self.buf.clear();
            return Ok(None);
        };
        let mut values = serde_json::Deserializer::from_slice(&self.buf[start..]).into_iter::<IgnoredAny>();
        match values.next() {
            Some(Ok(IgnoredAny)) => {
                let end = start + values.byte_offset();
                let event = self.buf[start..end].to_vec();
                self.buf.drain(..end);
                Ok(Some(event))
            }
            Some(Err(e)) if e.is_eof() => Ok(None),
            Some(Err(e)) => Err(Failure::Decode(e)),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::lean::Service;

    fn event(text: &str) -> Event<Service> {
        decode::<Service>(text.as_bytes()).expect("decodes")
    }

    #[test]
    fn events_of_every_type_and_the_unreadable_ones() {
        let ok = r#"{"type":"ADDED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"spec":{"clusterIP":"10.0.0.1"}}}"#;
        assert!(matches!(event(ok), Event::Upsert(s) if s.metadata.resource_version.as_deref() == Some("5")));
        let bad = r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"6"},"spec":{"ports":[{"port":"eighty"}]}}}"#;
        assert!(matches!(event(bad), Event::Malformed { meta, .. } if meta.resource_version.as_deref() == Some("6")));
        let deleted = r#"{"type":"DELETED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"7"},"spec":{"ports":"odd"}}}"#;
        assert!(matches!(event(deleted), Event::Delete(m) if m.name.as_deref() == Some("a")));
        let bookmark = r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"99"}}}"#;
        assert!(matches!(event(bookmark), Event::Bookmark(rv) if rv == "99"));
        let error = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        assert!(matches!(event(error), Event::Error(f) if f.code() == Some(410)));
        let bare = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Gone","code":410}"#;
        assert!(matches!(event(bare), Event::Error(f) if f.code() == Some(410)));
        assert!(matches!(event(r#"{"type":"FUTURE","object":{}}"#), Event::Unknown(t) if t == "FUTURE"));
        let busy = r#"{"type":"ERROR","object":{"kind":"Status","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3}}}"#;
        assert!(matches!(event(busy), Event::Error(f) if f.retry_after() == Some(Duration::from_secs(3))));
    }

    #[test]
    fn a_page_with_one_unreadable_item_keeps_the_others() {
        let page = br#"{"metadata":{"resourceVersion":"9","continue":"c"},"items":[
            {"metadata":{"name":"a","namespace":"n"},"spec":{"clusterIP":"10.0.0.1"}},
            {"metadata":{"name":"b","namespace":"n"},"spec":{"clusterIP":["not","a","string"]}},
            {"metadata":{"name":"c","namespace":"n"},"spec":null}]}"#;
        let (meta, items) = lenient_items::<Service>(page).expect("page");
        assert_eq!(meta.continue_.as_deref(), Some("c"));
        assert_eq!(items.len(), 3);
        assert!(matches!(items[0], Item::Read(_)) && matches!(items[2], Item::Read(_)));
        assert!(matches!(&items[1], Item::Unreadable { meta, .. } if meta.name.as_deref() == Some("b")));
    }

    #[tokio::test]
    async fn frames_split_anywhere_and_joined_without_newlines() {
        let text = concat!(
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}"#,
            "\n",
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2"}}}"#,
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}}"#,
            "\n"
        );
        for cut in [1, 7, 30, 67, 68, 100] {
            let chunks: Vec<Result<http_body::Frame<&'static [u8]>, std::convert::Infallible>> = text
                .as_bytes()
                .chunks(cut)
                .map(|c| Ok(http_body::Frame::data(c)))
                .collect();
            let body = http_body_util::StreamBody::new(futures::stream::iter(chunks));
            let mut frames = Frames::new(body);
            let mut seen = Vec::new();
            while let Some(event) = frames.next().await {
                match decode::<Service>(&event.expect("event")).expect("decodes") {
                    Event::Bookmark(rv) => seen.push(rv),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(seen, ["1", "2", "3"], "chunks of {cut}");
        }
    }

    #[tokio::test]
    async fn a_complete_event_is_not_held_back_by_the_start_of_the_next() {
        let chunk: &'static [u8] =
            b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}\n{\"type\":\"ADD";
        let first = futures::stream::iter([Ok::<_, std::convert::Infallible>(http_body::Frame::data(chunk))]);
        let body = http_body_util::StreamBody::new(futures::StreamExt::chain(first, futures::stream::pending()));
        let mut frames = Frames::new(body);
        let next = tokio::time::timeout(Duration::from_secs(1), frames.next()).await;
        let text = next.expect("not held back").expect("an event").expect("complete");
        assert!(matches!(decode::<Service>(&text), Ok(Event::Bookmark(rv)) if rv == "1"));
    }
}
