//! DNS over QUIC (RFC 9250, ALPN `doq`) with quinn: one query per
//! client-initiated bidirectional stream, a 2-byte length then the
//! message, the stream finished by the client; the reply written the same
//! way and the stream finished. Each query is answered by the same path as
//! a TCP query (`request::answer`).
//!
//! Bounds (CVE-2026-32934: streams that send a byte and never finish):
//! at most `quic { max_streams }` streams open per connection (QUIC's own
//! stream credit: a client cannot open more until one is done), each
//! holding at most one message's bytes ([`STREAM_WINDOW`], and all of a
//! connection's streams at most two messages' worth) and reset when
//! its query is not whole within `timeouts { read }`; at most `quic {
//! worker_pool_size }` queries answered at once over the listener; at
//! most `limits { connections }` connections, held as TCP holds its own
//! (`query::tcp::conns`: at the cap the one idle longest, else the newest
//! of the client holding the most, gives way; a client not yet validated
//! is sent a Retry first), each closed after
//! `timeouts { idle }` without traffic; a handshake within `timeouts {
//! read }`. Refusals are counted in `clusterdns_doq_refused_total`.
//!
//! A stopping listener (a shutdown; a reload that binds it anew) drains
//! as TCP does: each connection is closed once its queries are answered
//! and their replies acknowledged (a new one's first query too), every
//! one after 2 s.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::VarInt;
use tokio::sync::Semaphore;

use super::quic::{Acceptor, Shape};
use crate::config::transport::QuicLimits;
use crate::metrics::{DoqRefusal, TcpClose};
use crate::query::tcp::conns::{Conns, Seat};
use crate::query::Handler;

/// ALPN of DNS over QUIC.
pub const ALPN: &[&[u8]] = &[b"doq"];
/// Bytes one stream may hold: a length and the longest message.
pub const STREAM_WINDOW: u32 = 2 + 65_535;
/// RFC 9250's error codes: no error, internal, protocol, request cancelled.
const NO_ERROR: u32 = 0;
const PROTOCOL_ERROR: u32 = 2;
const REQUEST_CANCELLED: u32 = 3;
/// RFC 9250's DOQ_EXCESSIVE_LOAD: a connection closed for a newer one.
const EXCESSIVE_LOAD: u32 = 4;

/// What a connection may open: `quic { max_streams }` query streams,
/// no unidirectional ones.
pub fn shape(limits: &QuicLimits) -> Shape {
    Shape {
        bidi: Some(u32::try_from(limits.max_streams).unwrap_or(u32::MAX)),
        uni: 0,
        window: STREAM_WINDOW,
    }
}

/// Accepts connections until `stop` is set, at most `quic {
/// worker_pool_size }` queries answered at once.
pub async fn serve(mut acceptor: Acceptor, handler: Arc<Handler>, stop: Arc<AtomicBool>, limits: QuicLimits) {
    let workers = Arc::new(Semaphore::new(limits.worker_pool_size));
    let conns = Conns::new();
    while let Some(incoming) = acceptor.next(&stop, &handler).await {
        let Some(seat) = admit(incoming, &conns, &handler) else {
            continue;
        };
        let (handler, workers) = (handler.clone(), workers.clone());
        let port = acceptor.port();
        tokio::spawn(async move { connection(seat, port, &handler, &workers).await });
    }
    // Stopped: each connection is closed once its queries are answered
    // (a new one's first too), all of them after the drain's bound.
    let open = conns.count();
    if let Ok(addr) = acceptor.endpoint.local_addr() {
        tracing::info!("quic://{addr} stopped; open connections: {open}, each closed once its queries are answered");
    }
    Conns::drain(&conns).await;
    acceptor.close(NO_ERROR, b"shutting down").await;
}

/// A new connection's seat among the listener's (TCP's rule at the cap:
/// `query::tcp::conns`). At the cap, a client whose address QUIC has not
/// validated is first sent a Retry (so a spoofed address cannot make
/// another client give way); one that cannot be seated is refused.
fn admit(incoming: quinn::Incoming, conns: &Arc<Conns>, handler: &Handler) -> Option<(quinn::Incoming, Arc<Seat>)> {
    let limits = handler.router.load().tcp;
    let full = conns.count() >= limits.connections;
    if full && !incoming.remote_address_validated() && incoming.may_retry() {
        let _ = incoming.retry();
        return None;
    }
    match conns.seat(&limits, incoming.remote_address().ip()) {
        Some(seat) => Some((incoming, Arc::new(seat))),
        None => {
            handler.metrics.transports.doq_refused(DoqRefusal::Connections);
            incoming.refuse();
            None
        }
    }
}

/// One connection: its handshake, then a task per stream until it ends or
/// the listener closes it (for a newer one at the cap).
async fn connection(
    (incoming, seat): (quinn::Incoming, Arc<Seat>),
    port: Option<u16>,
    handler: &Arc<Handler>,
    workers: &Arc<Semaphore>,
) {
    let read = handler.router.load().tcp.read;
    let local = incoming
        .local_ip()
        .zip(port)
        .map(|(ip, port)| SocketAddr::new(ip, port));
    let ends = (incoming.remote_address(), local);
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(_) => return handler.metrics.transports.doq_refused(DoqRefusal::Handshake),
    };
    let conn = match tokio::time::timeout(read, connecting).await {
        Ok(Ok(c)) => c,
        _ => return handler.metrics.transports.doq_refused(DoqRefusal::Handshake),
    };
    loop {
        let (send, recv) = tokio::select! {
            why = seat.closed() => return match why {
                TcpClose::Evicted => conn.close(VarInt::from_u32(EXCESSIVE_LOAD), b"evicted"),
                _ => conn.close(VarInt::from_u32(NO_ERROR), b"shutting down"),
            },
            accepted = conn.accept_bi() => match accepted {
                Ok(halves) => halves,
                Err(_) => return,
            },
        };
        // Busy from now (a drain never sees it idle before its task
        // runs); weak: a stream outliving its connection does not hold its seat.
        seat.begin();
        let (handler, workers, seat) = (handler.clone(), workers.clone(), Arc::downgrade(&seat));
        tokio::spawn(async move {
            stream(send, recv, ends, &handler, &workers, read).await;
            seat.upgrade().inspect(|s| s.end());
        });
    }
}

/// One stream: the query whole within `read` (else reset), answered.
async fn stream(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    ends: super::request::Ends,
    handler: &Handler,
    workers: &Semaphore,
    read: Duration,
) {
    let started = Instant::now();
    let bytes = match tokio::time::timeout(read, recv.read_to_end(STREAM_WINDOW as usize)).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return refuse(&mut send, &mut recv, handler, DoqRefusal::Malformed, PROTOCOL_ERROR),
        Err(_) => {
            return refuse(
                &mut send,
                &mut recv,
                handler,
                DoqRefusal::StreamTimeout,
                REQUEST_CANCELLED,
            );
        }
    };
    let Some(message) = framed(&bytes) else {
        return refuse(&mut send, &mut recv, handler, DoqRefusal::Malformed, PROTOCOL_ERROR);
    };
    let answered = {
        let Ok(_worker) = workers.acquire().await else {
            return;
        };
        super::request::answer(message, ends, handler, started).await
    };
    let write = handler.router.load().tcp.write;
    match answered {
        Some(reply) => {
            let mut out = Vec::with_capacity(reply.len() + 2);
            crate::query::defer::push_frame(&mut out, &reply);
            if tokio::time::timeout(write, send.write_all(&out)).await.is_ok() {
                let _ = send.finish();
                // Done once the client has the reply: a stopping listener
                // closes the connection when idle, which drops unsent data.
                let _ = tokio::time::timeout(write, send.stopped()).await;
                return;
            }
            let _ = send.reset(VarInt::from_u32(REQUEST_CANCELLED));
        }
        None => {
            let _ = send.reset(VarInt::from_u32(REQUEST_CANCELLED));
        }
    }
}

/// The message of a stream's bytes: a 2-byte length and exactly that many.
fn framed(bytes: &[u8]) -> Option<&[u8]> {
    let len = usize::from(u16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]));
    (bytes.len() == 2 + len).then(|| &bytes[2..])
}

/// Resets both halves of a stream with `code`, counting `why`.
fn refuse(send: &mut quinn::SendStream, recv: &mut quinn::RecvStream, handler: &Handler, why: DoqRefusal, code: u32) {
    handler.metrics.transports.doq_refused(why);
    let _ = recv.stop(VarInt::from_u32(code));
    let _ = send.reset(VarInt::from_u32(code));
}

#[cfg(test)]
mod tests {
    use super::framed;

    #[test]
    fn a_stream_holds_one_length_prefixed_message() {
        assert_eq!(framed(&[0, 2, 7, 8]), Some(&[7u8, 8][..]));
        assert_eq!(framed(&[0, 3, 7, 8]), None, "short");
        assert_eq!(framed(&[0, 1, 7, 8]), None, "trailing bytes");
        assert_eq!(framed(&[0]), None);
        assert_eq!(framed(&[]), None);
    }
}
