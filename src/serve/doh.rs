//! DNS over HTTPS (RFC 8484): `GET /dns-query?dns=BASE64URL` and `POST
//! /dns-query` with an `application/dns-message` body, over HTTP/2 or
//! HTTP/1.1 (hyper's server, the protocol read from the connection), over
//! TLS or, without a `tls` directive, in the clear for a TLS-terminating
//! proxy in front (as CoreDNS does). Each request is one query answered by
//! the same path as a TCP query (`query::tcp::answer`), a forwarded one
//! awaited on a channel of its own.
//!
//! Bounds: at most `https { max_connections }` connections (beyond it a
//! new one is closed at once); a message over 65,535 bytes is refused with
//! an HTTP 4xx before it is decoded (CVE-2026-32936: a `dns` parameter or
//! body is read only up to that size, and hyper holds at most
//! [`MAX_HEAD`] of a request's head); a connection with no request for
//! `timeouts { idle }` is closed, a request head must arrive within
//! `timeouts { read }`, and so must a TLS handshake.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use super::body::Reply;
use super::certs::Certs;
use super::records::RecordPerAnswer;
use crate::metrics::{DohRefusal, TcpClose};
use crate::query::defer::{Pending, Sink};
use crate::query::limits::timeouts::TcpLimits;
use crate::query::{tcp, Handler};

/// ALPN of DNS over HTTPS: HTTP/2 first, HTTP/1.1.
pub const ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];
/// The one path served.
const PATH: &str = "/dns-query";
/// The longest DNS message (and so `POST` body) taken.
pub(super) const MAX_MESSAGE: usize = 65_535;
/// The longest `dns` parameter taken: base64url of [`MAX_MESSAGE`] bytes.
const MAX_PARAM: usize = MAX_MESSAGE.div_ceil(3) * 4;
/// The most of a request's head (request line, headers) hyper holds.
pub(super) const MAX_HEAD: usize = 2 * MAX_PARAM;
/// How long a forwarded query's answer is awaited (past every upstream's).
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// What an HTTP/2 (and HTTP/1.1) listener serves: DNS over HTTPS
/// ([`Doh`]) or CoreDNS's gRPC service (`grpc::Grpc`).
pub trait App: Copy + Send + Sync + 'static {
    /// The answer to one request.
    fn respond(
        self,
        req: Request<Incoming>,
        ends: Ends,
        handler: Arc<Handler>,
    ) -> impl Future<Output = Response<Reply>> + Send;
    /// Counts a connection closed at the listener's cap.
    fn refused(self, handler: &Handler);
    /// Streams (requests) open at once on one HTTP/2 connection.
    fn max_streams(self, limits: &TcpLimits) -> u32;
}

/// DNS over HTTPS: streams at once as `limits { pipeline }`.
#[derive(Clone, Copy)]
pub struct Doh;

impl App for Doh {
    async fn respond(self, req: Request<Incoming>, ends: Ends, handler: Arc<Handler>) -> Response<Reply> {
        respond(req, ends, &handler).await
    }

    fn refused(self, handler: &Handler) {
        handler.metrics.transports.doh_refused(DohRefusal::Connections);
    }

    fn max_streams(self, limits: &TcpLimits) -> u32 {
        limits.pipeline as u32
    }
}

/// Accepts connections until `stop` is set; `certs`: TLS, else plain HTTP;
/// `max`: open connections at most (0: no cap); `app` answers requests.
pub async fn serve<A: App>(
    listener: TcpListener,
    handler: Arc<Handler>,
    stop: Arc<AtomicBool>,
    certs: Option<Arc<Certs>>,
    (max, app): (usize, A),
) {
    let slots = Arc::new(Semaphore::new(if max == 0 { Semaphore::MAX_PERMITS } else { max }));
    while let Some((stream, peer)) = tcp::accept::next(&listener, &stop, "https").await {
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            app.refused(&handler);
            handler.metrics.tcp.rejected();
            continue;
        };
        let (handler, certs, stop) = (handler.clone(), certs.clone(), stop.clone());
        handler.metrics.tcp.open.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let ends = (peer, stream.local_addr().ok());
            let why = connection(stream, ends, &handler, certs, (&stop, app)).await;
            handler.metrics.tcp.closed(why);
            handler.metrics.tcp.open.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
}

/// A query's client and the address it came in on (`rewrite`'s
/// `{server_ip}` and `{server_port}`).
pub(super) type Ends = (SocketAddr, Option<SocketAddr>);

/// One connection: the TLS handshake (when serving TLS), then HTTP until
/// the client leaves, it idles, or the listener stops.
async fn connection<A: App>(
    stream: TcpStream,
    ends: Ends,
    handler: &Arc<Handler>,
    certs: Option<Arc<Certs>>,
    (stop, app): (&Arc<AtomicBool>, A),
) -> TcpClose {
    let _ = stream.set_nodelay(true);
    let limits = handler.router.load().tcp;
    let Some(certs) = certs else {
        return http(TokioIo::new(stream), ends, handler, (stop, app)).await;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(certs.config());
    match tokio::time::timeout(limits.read, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => http(TokioIo::new(RecordPerAnswer::new(tls)), ends, handler, (stop, app)).await,
        _ => TcpClose::Handshake,
    }
}

/// Serves HTTP/2 or HTTP/1.1 on `io`; closes it gracefully when no
/// request has come or been answered for `timeouts { idle }`.
async fn http<I, A: App>(io: I, ends: Ends, handler: &Arc<Handler>, (stop, app): (&Arc<AtomicBool>, A)) -> TcpClose
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let limits = handler.router.load().tcp;
    let activity = Arc::new(Activity {
        epoch: Instant::now(),
        busy: AtomicU64::new(0),
        last: AtomicU64::new(0),
    });
    let service = {
        let (handler, activity) = (handler.clone(), activity.clone());
        hyper::service::service_fn(move |req| {
            let (handler, activity) = (handler.clone(), activity.clone());
            async move {
                activity.begin();
                let response = app.respond(req, ends, handler).await;
                activity.end();
                Ok::<_, Infallible>(response)
            }
        })
    };
    let builder = builder(&limits, app.max_streams(&limits));
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut why = TcpClose::Client;
    // Once shut down gracefully: when the connection is dropped anyway (a
    // client that never finished its HTTP/2 preface ignores a GOAWAY).
    let mut hard: Option<Instant> = None;
    loop {
        tokio::select! {
            done = conn.as_mut() => return closed(why, done),
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
        if hard.is_some_and(|at| Instant::now() >= at) {
            return why;
        }
        if why == TcpClose::Client {
            if stop.load(Ordering::Relaxed) {
                why = TcpClose::Shutdown;
            } else if activity.idle_for() >= limits.idle {
                why = TcpClose::Idle;
            } else {
                continue;
            }
            conn.as_mut().graceful_shutdown();
            hard = Some(Instant::now() + limits.write);
        }
    }
}

/// HTTP/1.1 and HTTP/2 as the listener serves them: a request head within
/// `read`, at most [`MAX_HEAD`] of it held, `streams` at once.
fn builder(limits: &TcpLimits, streams: u32) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.read)
        .max_buf_size(MAX_HEAD);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(MAX_HEAD as u32)
        .max_concurrent_streams(streams);
    builder
}

/// Why a connection that hyper ended closed: `why` when the server shut
/// it down, a timeout while reading a request head as `read`.
fn closed(why: TcpClose, done: Result<(), Box<dyn std::error::Error + Send + Sync>>) -> TcpClose {
    let timed_out = done
        .err()
        .and_then(|e| e.downcast::<hyper::Error>().ok())
        .is_some_and(|e| e.is_timeout());
    if timed_out && why == TcpClose::Client {
        TcpClose::Read
    } else {
        why
    }
}

/// Requests of one connection in progress, and when the last one ended.
struct Activity {
    epoch: Instant,
    busy: AtomicU64,
    /// Milliseconds since `epoch` of the last request's start or end.
    last: AtomicU64,
}

impl Activity {
    fn begin(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.touch();
    }

    fn end(&self) {
        self.busy.fetch_sub(1, Ordering::Relaxed);
        self.touch();
    }

    fn touch(&self) {
        self.last
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// How long no request has been in progress (zero while one is).
    fn idle_for(&self) -> Duration {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.last.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }
}

/// One HTTP request: its DNS message read (or an HTTP error), answered.
async fn respond(req: Request<Incoming>, ends: Ends, handler: &Handler) -> Response<Reply> {
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
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(1);
    let mut out = Vec::new();
    {
        let sink = || Sink::Tcp(Arc::new(Pending::new(tx.clone(), None)));
        tcp::answer(handler, message, ends, &sink, started, &mut out);
    }
    drop(tx);
    let framed = if out.is_empty() {
        tokio::time::timeout(ANSWER_WAIT, rx.recv()).await.ok().flatten()?
    } else {
        out
    };
    framed.get(2..).map(<[u8]>::to_vec)
}
