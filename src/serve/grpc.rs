//! CoreDNS's gRPC service (`grpc://`): the unary method
//! `/coredns.dns.DnsService/Query`, whose request and reply are both
//! `DnsPacket { bytes msg = 1; }`, served over hyper's HTTP/2 as DNS over
//! HTTPS is ([`super::doh`]: TLS with ALPN `h2`, or plain HTTP/2 without
//! a `tls` directive). A gRPC call is a POST of `application/grpc` whose
//! body is one message behind a 5-byte prefix (a compressed flag and a
//! big-endian length); the reply is the same framing, then a
//! `grpc-status` trailer; the bytes are read and written by
//! `query/forward/grpcwire.rs`, which the `grpc` directive's client shares.
//!
//! As CoreDNS: a message over 65,535 bytes is refused (the body is read
//! only up to a DNS message and the protobuf's 4 bytes:
//! `RESOURCE_EXHAUSTED`), the peer is the TCP client (`whoami`, the guard),
//! and the query runs the same path as a TCP one, so UPDATE is NOTIMP and
//! never forwarded. Unlike CoreDNS, a query the chain drops gets
//! `UNAVAILABLE` (CoreDNS echoes the query back), and a message that does
//! not parse `INVALID_ARGUMENT` (CoreDNS: `UNKNOWN`). `grpc_server {
//! max_streams }` caps a connection's streams (HTTP/2's
//! `MAX_CONCURRENT_STREAMS`), `max_connections` the listener's
//! connections (held as DoH holds its own, `doh::serve`: at the cap the
//! one idle longest gives way); refusals are counted in
//! `clusterdns_grpc_refused_total`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::body::Reply;
use super::doh::App;
use super::request::{self, Ends};
use crate::metrics::DohRefusal;
use crate::query::forward::grpcwire::{
    frame, msg_field, unframe, INVALID_ARGUMENT, MAX_BODY, MAX_MESSAGE, OK, PATH, RESOURCE_EXHAUSTED, UNAVAILABLE,
    UNIMPLEMENTED,
};
use crate::query::limits::timeouts::TcpLimits;
use crate::query::Handler;

/// ALPN of gRPC: HTTP/2 only.
pub const ALPN: &[&[u8]] = &[b"h2"];

/// The gRPC service with `grpc_server { max_streams }` (0: no cap).
#[derive(Clone, Copy)]
pub struct Grpc {
    pub max_streams: usize,
}

impl App for Grpc {
    async fn respond(self, req: Request<Incoming>, ends: Ends, handler: Arc<Handler>) -> Response<Reply> {
        respond(req, ends, &handler).await
    }

    fn refused(self, handler: &Handler) {
        handler.metrics.transports.grpc_refused(DohRefusal::Connections);
    }

    fn max_streams(self, _: &TcpLimits) -> u32 {
        match self.max_streams {
            0 => u32::MAX,
            n => u32::try_from(n).unwrap_or(u32::MAX),
        }
    }
}

/// One call: its `DnsPacket` read (or a gRPC error), answered.
async fn respond(req: Request<Incoming>, ends: Ends, handler: &Handler) -> Response<Reply> {
    let started = Instant::now();
    let message = match request(req).await {
        Ok(m) => m,
        Err(Refused::Http(why, status)) => {
            handler.metrics.transports.grpc_refused(why);
            return request::error(status);
        }
        Err(Refused::Grpc(why, code)) => {
            handler.metrics.transports.grpc_refused(why);
            return status_only(code);
        }
    };
    match request::answer(&message, ends, handler, started).await {
        Some(reply) => {
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from(OK));
            let body = Reply::with_trailers(Bytes::from(frame(&reply)), trailers);
            grpc_response(body)
        }
        None => status_only(UNAVAILABLE),
    }
}

/// Why a call was not answered: an HTTP error (not a gRPC request at
/// all), or a gRPC status.
enum Refused {
    Http(DohRefusal, StatusCode),
    Grpc(DohRefusal, u32),
}

/// The DNS message of a call: a POST of `application/grpc` to [`PATH`]
/// whose body (read up to [`MAX_BODY`]) is one uncompressed `DnsPacket`.
async fn request(req: Request<Incoming>) -> Result<Vec<u8>, Refused> {
    if req.method() != Method::POST {
        return Err(Refused::Http(DohRefusal::Method, StatusCode::METHOD_NOT_ALLOWED));
    }
    let kind = req.headers().get(http::header::CONTENT_TYPE);
    if !kind.is_some_and(|k| k.as_bytes().starts_with(b"application/grpc")) {
        return Err(Refused::Http(DohRefusal::Malformed, StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    if req.uri().path() != PATH {
        return Err(Refused::Grpc(DohRefusal::Path, UNIMPLEMENTED));
    }
    let too_large = Refused::Grpc(DohRefusal::TooLarge, RESOURCE_EXHAUSTED);
    let body = Limited::new(req.into_body(), MAX_BODY).collect().await;
    let body = body.map_err(|_| too_large)?.to_bytes();
    let malformed = || Refused::Grpc(DohRefusal::Malformed, INVALID_ARGUMENT);
    let packet = unframe(&body).ok_or_else(malformed)?;
    let msg = msg_field(packet).ok_or_else(malformed)?;
    if msg.len() > MAX_MESSAGE {
        return Err(Refused::Grpc(DohRefusal::TooLarge, RESOURCE_EXHAUSTED));
    }
    Ok(msg.to_vec())
}

/// A 200 of `application/grpc` with `body`.
fn grpc_response(body: Reply) -> Response<Reply> {
    let mut r = Response::new(body);
    r.headers_mut()
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    r
}

/// A call ended with `code` alone (gRPC's Trailers-Only response).
fn status_only(code: u32) -> Response<Reply> {
    let mut r = grpc_response(Reply::default());
    r.headers_mut().insert("grpc-status", HeaderValue::from(code));
    r
}
