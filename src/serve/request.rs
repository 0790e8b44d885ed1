//! One DNS message carried by an HTTP request (RFC 8484's `GET
//! /dns-query?dns=` and `POST /dns-query`) or by a stream of its own
//! (DoQ, gRPC): read within its bounds, answered as a TCP query is, its
//! refusal turned into an HTTP status. DoH, DoH3, DoQ and gRPC share it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use tokio::sync::mpsc;

use super::body::Reply;
use crate::metrics::DohRefusal;
use crate::query::defer::{Pending, Sink};
use crate::query::{tcp, Handler};

/// The one path served.
const PATH: &str = "/dns-query";
/// The longest DNS message (and so `POST` body) taken.
pub(super) const MAX_MESSAGE: usize = 65_535;
/// The longest `dns` parameter taken: base64url of [`MAX_MESSAGE`] bytes.
pub(super) const MAX_PARAM: usize = MAX_MESSAGE.div_ceil(3) * 4;
/// The most of a request's head (request line, headers) an HTTP/1.1 or
/// HTTP/2 server holds.
pub(super) const MAX_HEAD: usize = 2 * MAX_PARAM;
/// How long a forwarded query's answer is awaited (past every upstream's).
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// A query's client and the address it came in on (`rewrite`'s
/// `{server_ip}` and `{server_port}`).
pub(super) type Ends = (SocketAddr, Option<SocketAddr>);

/// One HTTP request: its DNS message read (or an HTTP error), answered.
pub(super) async fn respond(req: Request<Incoming>, ends: Ends, handler: &Handler) -> Response<Reply> {
    let started = Instant::now();
    let message = message(req).await;
    dns_response(message, ends, handler, started).await
}

/// The HTTP answer to a request's DNS `message` (or its refusal), over
/// HTTP/1.1, HTTP/2 or HTTP/3.
pub(super) async fn dns_response(
    message: Result<Vec<u8>, DohRefusal>,
    ends: Ends,
    handler: &Handler,
    started: Instant,
) -> Response<Reply> {
    let message = match message {
        Ok(m) => m,
        Err(why) => {
            handler.metrics.transports.doh_refused(why);
            return error(status(why));
        }
    };
    match answer(&message, ends, handler, started).await {
        Some(reply) => Response::builder()
            .header(http::header::CONTENT_TYPE, "application/dns-message")
            .header(
                http::header::CACHE_CONTROL,
                format!("max-age={}", super::body::min_ttl(&reply)),
            )
            .body(Reply::new(Bytes::from(reply)))
            .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR)),
        None => error(StatusCode::BAD_REQUEST),
    }
}

/// The HTTP status of a refusal.
fn status(why: DohRefusal) -> StatusCode {
    match why {
        DohRefusal::Path => StatusCode::NOT_FOUND,
        DohRefusal::Method => StatusCode::METHOD_NOT_ALLOWED,
        DohRefusal::Malformed => StatusCode::BAD_REQUEST,
        DohRefusal::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        DohRefusal::Connections => StatusCode::SERVICE_UNAVAILABLE,
    }
}

pub(super) fn error(status: StatusCode) -> Response<Reply> {
    let mut r = Response::new(Reply::default());
    *r.status_mut() = status;
    r
}

/// The DNS message of a request: the `dns` parameter of a GET (decoded
/// only when no longer than a message's base64url), a POST's body (read
/// up to [`MAX_MESSAGE`] bytes).
async fn message(req: Request<Incoming>) -> Result<Vec<u8>, DohRefusal> {
    match head(&req)? {
        Some(message) => Ok(message),
        None => {
            let body = Limited::new(req.into_body(), MAX_MESSAGE).collect().await;
            body.map(|b| b.to_bytes().to_vec()).map_err(|_| DohRefusal::TooLarge)
        }
    }
}

/// What a request's head says: a GET's message (`Some`), or a POST whose
/// body is the message (`None`), or why it is refused.
pub(super) fn head<B>(req: &Request<B>) -> Result<Option<Vec<u8>>, DohRefusal> {
    if req.uri().path() != PATH {
        return Err(DohRefusal::Path);
    }
    match *req.method() {
        Method::GET => {
            let query = req.uri().query().unwrap_or("");
            let param = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("dns="))
                .ok_or(DohRefusal::Malformed)?;
            if param.len() > MAX_PARAM {
                return Err(DohRefusal::TooLarge);
            }
            let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let message = engine.decode(param.trim_end_matches('='));
            message.map(Some).map_err(|_| DohRefusal::Malformed)
        }
        Method::POST => {
            let kind = req.headers().get(http::header::CONTENT_TYPE);
            if kind.is_none_or(|k| k.as_bytes() != b"application/dns-message") {
                return Err(DohRefusal::Malformed);
            }
            Ok(None)
        }
        _ => Err(DohRefusal::Method),
    }
}

/// Answers `message` as a TCP query is answered; a forwarded one is
/// awaited. `None`: no reply (dropped, or shed at the in-flight cap).
pub(super) async fn answer(message: &[u8], ends: Ends, handler: &Handler, started: Instant) -> Option<Vec<u8>> {
    // The channel a forwarded answer comes back on, made only when one is.
    let waiting = std::cell::RefCell::new(None);
    let mut out = Vec::new();
    {
        let sink = || {
            let (tx, rx) = mpsc::channel::<Vec<u8>>(1);
            *waiting.borrow_mut() = Some(rx);
            Sink::Tcp(Arc::new(Pending::new(tx, None)))
        };
        tcp::answer(handler, message, ends, &sink, started, &mut out);
    }
    let mut framed = match waiting.into_inner() {
        Some(mut rx) if out.is_empty() => tokio::time::timeout(ANSWER_WAIT, rx.recv()).await.ok().flatten()?,
        _ => out,
    };
    (framed.len() >= 2).then(|| {
        framed.drain(..2);
        framed
    })
}
