//! CoreDNS's gRPC service (`grpc://`): the unary method
//! `/coredns.dns.DnsService/Query`, whose request and reply are both
//! `DnsPacket { bytes msg = 1; }`, served over hyper's HTTP/2 as DNS over
//! HTTPS is ([`super::doh`]: TLS with ALPN `h2`, or plain HTTP/2 without
//! a `tls` directive). A gRPC call is a POST of `application/grpc` whose
//! body is one message behind a 5-byte prefix (a compressed flag and a
//! big-endian length); the reply is the same framing, then a
//! `grpc-status` trailer. The protobuf of one bytes field is read and
//! written here (a tag, a varint length, the bytes; other fields skipped).
//!
//! As CoreDNS: a message over 65,535 bytes is refused (the body is read
//! only up to a DNS message and the protobuf's 4 bytes:
//! `RESOURCE_EXHAUSTED`), the peer is the TCP client (`whoami`, `acl`),
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
use crate::query::limits::timeouts::TcpLimits;
use crate::query::Handler;

/// ALPN of gRPC: HTTP/2 only.
pub const ALPN: &[&[u8]] = &[b"h2"];
/// The one method served.
const PATH: &str = "/coredns.dns.DnsService/Query";
/// The longest DNS message taken.
const MAX_MESSAGE: usize = 65_535;
/// The longest request body: the prefix, a tag, a 3-byte length, a message.
const MAX_BODY: usize = 5 + 4 + MAX_MESSAGE;

/// gRPC status codes used.
const OK: u32 = 0;
const INVALID_ARGUMENT: u32 = 3;
const RESOURCE_EXHAUSTED: u32 = 8;
const UNIMPLEMENTED: u32 = 12;
const UNAVAILABLE: u32 = 14;

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

/// The one message of a call's body: uncompressed, exactly as long as its
/// prefix says.
fn unframe(body: &[u8]) -> Option<&[u8]> {
    let (&compressed, rest) = body.split_first()?;
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let packet = rest.get(4..)?;
    (compressed == 0 && packet.len() == len).then_some(packet)
}

/// Field 1 (`msg`) of a `DnsPacket`: the last one given, empty when none;
/// other fields are skipped. `None`: not a protobuf message.
fn msg_field(mut b: &[u8]) -> Option<&[u8]> {
    let mut msg: &[u8] = &[];
    while !b.is_empty() {
        let key = varint(&mut b)?;
        match (key >> 3, key & 7) {
            (1, 2) => msg = bytes_field(&mut b)?,
            (1, _) => return None,
            (_, 0) => drop(varint(&mut b)?),
            (_, 1) => b = b.get(8..)?,
            (_, 2) => drop(bytes_field(&mut b)?),
            (_, 5) => b = b.get(4..)?,
            _ => return None,
        }
    }
    Some(msg)
}

/// A length-delimited field's bytes.
fn bytes_field<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(varint(b)?).ok()?;
    let (field, rest) = (b.get(..len)?, b.get(len..)?);
    *b = rest;
    Some(field)
}

/// A protobuf varint, at most 10 bytes.
fn varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A reply's `DnsPacket` behind gRPC's 5-byte prefix.
fn frame(reply: &[u8]) -> Vec<u8> {
    let mut packet = vec![0x0a];
    let mut len = reply.len();
    while len >= 0x80 {
        packet.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    packet.push(len as u8);
    packet.extend_from_slice(reply);
    let mut out = vec![0];
    out.extend_from_slice(&(packet.len() as u32).to_be_bytes());
    out.extend_from_slice(&packet);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dns_packet_is_read_and_written_as_protobuf_behind_the_prefix() {
        let reply = vec![7u8; 300];
        let framed = frame(&reply);
        assert_eq!(&framed[..5], &[0, 0, 0, 1, 0x2f], "3 bytes of field head and 300");
        assert_eq!(&framed[5..8], &[0x0a, 0xac, 0x02]);
        let packet = unframe(&framed).expect("one message");
        assert_eq!(msg_field(packet), Some(&reply[..]));
        // another field before, a second msg after: skipped, the last wins
        let mut two = vec![0x10, 0x96, 0x01, 0x1a, 1, 9, 0x0a, 1, 5];
        two.extend_from_slice(packet);
        assert_eq!(msg_field(&two), Some(&reply[..]));
        assert_eq!(msg_field(&[]), Some(&[][..]), "no msg: empty");
        assert_eq!(msg_field(&[0x0a, 5, 1]), None, "cut short");
        assert_eq!(msg_field(&[0x08, 1]), None, "msg as a varint");
        assert_eq!(
            msg_field(&[0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1]),
            None
        );
        assert_eq!(unframe(&[1, 0, 0, 0, 0]), None, "compressed");
        assert_eq!(unframe(&[0, 0, 0, 0, 2, 1]), None, "short");
        assert_eq!(unframe(&[0, 0, 0]), None);
    }
}
