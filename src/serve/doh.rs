//! DNS over HTTPS (RFC 8484): `GET /dns-query?dns=BASE64URL` and `POST
//! /dns-query` with an `application/dns-message` body, over HTTP/2 or
//! HTTP/1.1 (hyper's server, the protocol read from the connection), over
//! TLS or, without a `tls` directive, in the clear for a TLS-terminating
//! proxy in front (as CoreDNS does). Each request is one query answered by
//! the same path as a TCP query (`query::tcp::answer`), a forwarded one
//! awaited on a channel of its own.
//!
//! Bounds: at most `https { max_connections }` connections, held as TCP
//! holds its own (`query::tcp::conns`): at the cap the connection idle
//! longest (no request in progress) is closed for the new one, with none
//! idle the newest of the client holding the most connections, and only
//! when that is the new one's own client is the new one closed at once
//! (with `limits { client_share 0 }` too, as before); a message over 65,535 bytes is refused with
//! an HTTP 4xx before it is decoded (CVE-2026-32936: a `dns` parameter or
//! body is read only up to that size, and hyper holds at most
//! [`MAX_HEAD`] of a request's head); a connection with no request for
//! `timeouts { idle }` is closed, a request head must arrive within
//! `timeouts { read }`, and so must a TLS handshake.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};

use super::body::Reply;
use super::certs::Certs;
use super::doh2::{Activity, Closing, Turn, TICK};
use super::records::RecordPerAnswer;
use super::request::{respond, Ends, MAX_HEAD};
use crate::metrics::{DohRefusal, TcpClose};
use crate::query::limits::timeouts::TcpLimits;
use crate::query::tcp::conns::Seat;
use crate::query::{tcp, Handler};

/// ALPN of DNS over HTTPS: HTTP/2 first, HTTP/1.1.
pub const ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];

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
    /// HTTP/2 over TLS served as DoH by `doh2` (the `h2` crate directly)
    /// rather than by hyper.
    fn doh2(self) -> bool {
        false
    }
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

    fn doh2(self) -> bool {
        true
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
    let conns = tcp::conns::Conns::new();
    while let Some((stream, peer)) = tcp::accept::next(&listener, &stop, "https").await {
        let limits = TcpLimits {
            connections: if max == 0 { usize::MAX } else { max },
            ..handler.router.load().tcp
        };
        let Some(seat) = conns.seat(&limits, peer.ip()).map(Arc::new) else {
            app.refused(&handler);
            handler.metrics.tcp.rejected();
            continue;
        };
        let (handler, certs, stop) = (handler.clone(), certs.clone(), stop.clone());
        handler.metrics.tcp.open.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let ends = (peer, stream.local_addr().ok());
            let why = tokio::select! {
                why = seat.closed() => why,
                why = connection(stream, ends, &handler, certs, (&stop, app), &seat) => why,
            };
            handler.metrics.tcp.closed(why);
            handler.metrics.tcp.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// One connection: the TLS handshake (when serving TLS), then HTTP until
/// the client leaves, it idles, or the listener stops.
async fn connection<A: App>(
    stream: TcpStream,
    (peer, local): Ends,
    handler: &Arc<Handler>,
    certs: Option<Arc<Certs>>,
    (stop, app): (&Arc<AtomicBool>, A),
    seat: &Arc<Seat>,
) -> TcpClose {
    let _ = stream.set_nodelay(true);
    let (limits, proxy) = {
        let router = handler.router.load();
        (router.tcp, router.proxy.clone())
    };
    let client = match proxy {
        None => peer,
        Some(p) => match crate::query::proxyproto::stream(&p, &stream, peer, limits.read).await {
            Ok(client) => client,
            Err(why) => {
                crate::query::proxyproto::refused(&handler.metrics, crate::metrics::Transport::Tcp, peer, why);
                return TcpClose::Handshake;
            }
        },
    };
    let ends = (client, local);
    let Some(certs) = certs else {
        return http(TokioIo::new(stream), ends, handler, (stop, app), seat).await;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(certs.config());
    match tokio::time::timeout(limits.read, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => {
            let tls = RecordPerAnswer::new(tls);
            if app.doh2() && tls.is_h2() {
                return super::doh2::serve(tls, ends, handler, (stop, Activity::new(seat))).await;
            }
            http(TokioIo::new(tls), ends, handler, (stop, app), seat).await
        }
        _ => TcpClose::Handshake,
    }
}

/// Serves HTTP/2 or HTTP/1.1 on `io`; closes it gracefully when no
/// request has come or been answered for `timeouts { idle }`.
async fn http<I, A: App>(
    io: I,
    ends: Ends,
    handler: &Arc<Handler>,
    (stop, app): (&Arc<AtomicBool>, A),
    seat: &Arc<Seat>,
) -> TcpClose
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let limits = handler.router.load().tcp;
    let activity = Activity::new(seat);
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
    let mut closing = Closing::default();
    loop {
        tokio::select! {
            done = conn.as_mut() => return closed(closing.why, done),
            _ = tokio::time::sleep(TICK) => {}
        }
        match closing.turn(&activity, stop, &limits) {
            Turn::Stay => {}
            Turn::Shutdown => conn.as_mut().graceful_shutdown(),
            Turn::End => return closing.why,
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
