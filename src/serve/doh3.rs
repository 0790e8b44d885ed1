//! DNS over HTTPS over HTTP/3 (`https3://`): RFC 8484's `GET
//! /dns-query?dns=` and `POST /dns-query` on hyperium's `h3` over the
//! quinn endpoint DNS over QUIC uses (ALPN `h3`, TLS 1.3 always). Each
//! request is read as DNS over HTTPS reads it (`request::head`: the path, the
//! method, the `dns` parameter decoded only when no longer than a
//! message's base64url, else 413) and answered by the same path
//! (`request::dns_response`): UPDATE is NOTIMP and never forwarded.
//!
//! Bounds: at most `https3 { max_streams }` requests open per connection
//! (QUIC's stream credit; 0: quinn's default of 100), each holding at most
//! a request head of [`MAX_FIELDS`] once decoded (h3 answers a larger one
//! 431, so does an oversized `dns` parameter: CVE-2026-32936) and a body
//! of one message (a larger one 413); a request's
//! head and body must arrive within `timeouts { read }` (else the stream
//! is dropped); at most `https3 { max_connections }` connections (0: no
//! cap), each closed after `timeouts { idle }` of silence; a handshake
//! within `timeouts { read }`. Refusals are counted in
//! `clusterdns_doh_refused_total`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};

use super::capped::Capped;
use super::quic::{Acceptor, Shape};
use super::request::{self, Ends};
use crate::config::transport::StreamLimits;
use crate::metrics::DohRefusal;
use crate::query::Handler;

/// ALPN of HTTP/3.
pub const ALPN: &[&[u8]] = &[b"h3"];
/// HTTP/3's H3_NO_ERROR (RFC 9114): the code a closing listener gives.
const H3_NO_ERROR: u32 = 0x100;
/// Bytes one request stream may hold unread: a head and a message.
const STREAM_WINDOW: u32 = MAX_FIELDS as u32 + request::MAX_MESSAGE as u32 + 64;
/// The largest request head (RFC 9114's field section size: each field's
/// name, value and 32) taken; a larger one is answered 431. Below the
/// `http` crate's longest URI (65,534 bytes), so that every GET too long
/// for it gets a 4xx rather than a stream reset.
const MAX_FIELDS: u64 = 65_536;
/// The most bytes one request stream delivers: a head (its encoding, at
/// worst Huffman's 30 bits a byte, within 4 of its size) and a body of
/// one message in frames; past it the request is dropped.
const STREAM_CAP: usize = 4 * MAX_FIELDS as usize + 2 * request::MAX_MESSAGE;
/// HTTP/3's unidirectional streams a client opens: control, QPACK's two.
const UNI_STREAMS: u32 = 3;

/// What a connection may open: `https3 { max_streams }` requests (0:
/// quinn's default) and HTTP/3's own unidirectional streams.
pub fn shape(limits: &StreamLimits) -> Shape {
    Shape {
        bidi: (limits.max_streams > 0).then(|| u32::try_from(limits.max_streams).unwrap_or(u32::MAX)),
        uni: UNI_STREAMS,
        window: STREAM_WINDOW,
    }
}

/// Accepts connections until `stop` is set, at most `https3 {
/// max_connections }` at once.
pub async fn serve(mut acceptor: Acceptor, handler: Arc<Handler>, stop: Arc<AtomicBool>, limits: StreamLimits) {
    let open = Arc::new(AtomicUsize::new(0));
    let cap = if limits.max_connections == 0 {
        usize::MAX
    } else {
        limits.max_connections
    };
    while let Some(incoming) = acceptor.next(&stop, &handler).await {
        if open.load(Ordering::Relaxed) >= cap {
            handler.metrics.transports.doh_refused(DohRefusal::Connections);
            incoming.refuse();
            continue;
        }
        open.fetch_add(1, Ordering::Relaxed);
        let (handler, open) = (handler.clone(), open.clone());
        let port = acceptor.port();
        tokio::spawn(async move {
            connection(incoming, port, &handler).await;
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
    acceptor.close(H3_NO_ERROR, b"shutting down").await;
}

/// One connection: its handshake, then a task per request until it ends.
async fn connection(incoming: quinn::Incoming, port: Option<u16>, handler: &Arc<Handler>) {
    let read = handler.router.load().tcp.read;
    let local = incoming
        .local_ip()
        .zip(port)
        .map(|(ip, port)| SocketAddr::new(ip, port));
    let ends = (incoming.remote_address(), local);
    let Ok(connecting) = incoming.accept() else {
        return;
    };
    let Ok(Ok(conn)) = tokio::time::timeout(read, connecting).await else {
        return;
    };
    let mut builder = h3::server::builder();
    // no GREASE: aioquic (dnspython's DoH3) misses a stream's end that
    // follows an unknown frame, and waits for an answer it already has
    builder.max_field_section_size(MAX_FIELDS).send_grease(false);
    let built = tokio::time::timeout(read, builder.build(Capped::new(conn, STREAM_CAP))).await;
    let Ok(Ok(mut h3)) = built else {
        return;
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        let handler = handler.clone();
        tokio::spawn(async move { request(resolver, ends, &handler, read).await });
    }
}

type Resolver = h3::server::RequestResolver<Capped, Bytes>;

/// One request: its head and body read within `read` (else dropped, the
/// stream reset), answered (a forwarded query awaited past `read`).
async fn request(resolver: Resolver, ends: Ends, handler: &Handler, read: Duration) {
    let Ok(Ok((req, mut stream))) = tokio::time::timeout(read, resolver.resolve_request()).await else {
        return;
    };
    let started = Instant::now();
    let message = match request::head(&req) {
        Ok(Some(m)) => Ok(m),
        Ok(None) => match tokio::time::timeout(read, body(&mut stream)).await {
            Ok(body) => body,
            Err(_) => return,
        },
        Err(why) => Err(why),
    };
    let (parts, reply) = request::dns_response(message, ends, handler, started)
        .await
        .into_parts();
    if stream
        .send_response(http::Response::from_parts(parts, ()))
        .await
        .is_err()
    {
        return;
    }
    if let Some(data) = reply.into_data() {
        if stream.send_data(data).await.is_err() {
            return;
        }
    }
    let _ = stream.finish().await;
}

/// A POST's body, read up to a message's size (413 beyond).
async fn body<S: h3::quic::RecvStream>(
    stream: &mut h3::server::RequestStream<S, Bytes>,
) -> Result<Vec<u8>, DohRefusal> {
    let mut out = Vec::new();
    loop {
        match stream.recv_data().await {
            Ok(Some(mut chunk)) => {
                if out.len() + chunk.remaining() > request::MAX_MESSAGE {
                    return Err(DohRefusal::TooLarge);
                }
                while chunk.has_remaining() {
                    let piece = chunk.chunk();
                    out.extend_from_slice(piece);
                    let n = piece.len();
                    chunk.advance(n);
                }
            }
            Ok(None) => return Ok(out),
            Err(_) => return Err(DohRefusal::Malformed),
        }
    }
}
