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

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, IdleTimeout, VarInt};
use tokio::sync::Semaphore;

use super::certs::Certs;
use crate::config::transport::QuicLimits;
use crate::metrics::DoqRefusal;
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

/// The quinn server configuration of `certs` under `limits`.
fn server_config(certs: &Certs, limits: &QuicLimits, idle: Duration) -> std::io::Result<quinn::ServerConfig> {
    let crypto = QuicServerConfig::try_from(certs.config()).map_err(std::io::Error::other)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    let streams = u32::try_from(limits.max_streams).unwrap_or(u32::MAX);
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(streams))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(2 * STREAM_WINDOW))
        .max_idle_timeout(IdleTimeout::try_from(idle).ok());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Binds `addr` (UDP) for DNS over QUIC; its bound address and endpoint.
pub fn bind(
    addr: SocketAddr,
    certs: &Certs,
    limits: &QuicLimits,
    handler: &Handler,
) -> std::io::Result<(SocketAddr, Endpoint)> {
    let idle = handler.router.load().tcp.idle;
    let endpoint = Endpoint::server(server_config(certs, limits, idle)?, addr)?;
    Ok((endpoint.local_addr()?, endpoint))
}

/// Accepts connections until `stop` is set; a certificate read again is
/// given to the endpoint for new handshakes.
pub async fn serve(
    endpoint: Endpoint,
    handler: Arc<Handler>,
    stop: Arc<AtomicBool>,
    certs: Arc<Certs>,
    limits: QuicLimits,
) {
    let workers = Arc::new(Semaphore::new(limits.worker_pool_size));
    let mut in_use = certs.config();
    let conns = Conns::new();
    while !stop.load(Ordering::Relaxed) {
        let Ok(accepted) = tokio::time::timeout(Duration::from_millis(200), endpoint.accept()).await else {
            let now = certs.config();
            if !Arc::ptr_eq(&now, &in_use) {
                let idle = handler.router.load().tcp.idle;
                if let Ok(c) = server_config(&certs, &limits, idle) {
                    endpoint.set_server_config(Some(c));
                }
                in_use = now;
            }
            continue;
        };
        let Some(incoming) = accepted else {
            break;
        };
        let Some(seat) = admit(incoming, &conns, &handler) else {
            continue;
        };
        let (handler, workers) = (handler.clone(), workers.clone());
        let port = endpoint.local_addr().ok().map(|a| a.port());
        tokio::spawn(async move { connection(seat, port, &handler, &workers).await });
    }
    endpoint.close(VarInt::from_u32(NO_ERROR), b"shutting down");
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
            _ = seat.closed() => return conn.close(VarInt::from_u32(EXCESSIVE_LOAD), b"evicted"),
            accepted = conn.accept_bi() => match accepted {
                Ok(halves) => halves,
                Err(_) => return,
            },
        };
        // Weak: a stream outliving its connection does not hold its seat.
        let (handler, workers, seat) = (handler.clone(), workers.clone(), Arc::downgrade(&seat));
        tokio::spawn(async move {
            seat.upgrade().inspect(|s| s.begin());
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
    let Ok(_worker) = workers.acquire().await else {
        return;
    };
    match super::request::answer(message, ends, handler, started).await {
        Some(reply) => {
            let mut out = Vec::with_capacity(reply.len() + 2);
            crate::query::defer::push_frame(&mut out, &reply);
            if tokio::time::timeout(handler.router.load().tcp.write, send.write_all(&out))
                .await
                .is_ok()
            {
                let _ = send.finish();
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
