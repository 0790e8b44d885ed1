//! The encrypted and HTTP transports of server blocks, beside `query`'s
//! UDP and TCP: `tls://` (DNS over TLS, [`dot`]), `https://` (DNS over
//! HTTPS, [`doh`]), `https3://` (DNS over HTTPS over HTTP/3, [`doh3`]),
//! `quic://` (DNS over QUIC, [`doq`]) and `grpc://` (CoreDNS's gRPC
//! service, [`grpc`]), each answering through the same [`Handler`]
//! (router, plugin chain, metrics) as plain DNS; and the certificate they
//! present, read again when its files change ([`certs`]) or obtained
//! from an ACME server with `tls { acme }` ([`acme`]); DoH's answers
//! each in a TLS record of their own ([`records`]); an HTTP answer's body
//! ([`body`]); one DNS message of a request or stream read and answered
//! ([`request`]).
//!
//! Start at [`open`]: one listener for one address of a listener group.

pub mod acme;
pub mod body;
pub mod capped;
pub mod certs;
pub mod doh;
mod doh2;
pub mod doh3;
pub mod doq;
pub mod dot;
pub mod grpc;
pub mod quic;
pub mod records;
pub mod request;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::transport::{Listen, Scheme};
use crate::query::{tcp, Handler};

/// One running listener: the address bound and its accept loop.
pub struct Listening {
    pub bound: SocketAddr,
    pub task: tokio::task::JoinHandle<()>,
}

/// Binds `addr` for `listen`'s transport (not `dns://`) and serves it
/// with `handler` until `stop` is set. The certificate is read here: a
/// file that cannot be read is an error naming it.
pub fn open(
    addr: SocketAddr,
    listen: &Listen,
    handler: &Arc<Handler>,
    stop: &Arc<AtomicBool>,
) -> io::Result<Listening> {
    let alpn = match listen.scheme {
        Scheme::Https => doh::ALPN,
        Scheme::Quic => doq::ALPN,
        Scheme::Grpc => grpc::ALPN,
        Scheme::Https3 => doh3::ALPN,
        _ => dot::ALPN,
    };
    let certs = match &listen.tls {
        Some(files) => Some(certs::Certs::load(files, alpn).map_err(io::Error::other)?),
        None => None,
    };
    if let (Scheme::Quic | Scheme::Https3, Some(certs)) = (listen.scheme, &certs) {
        return open_quic(addr, listen, handler, stop, certs);
    }
    let listener = tcp::bind(addr)?;
    let bound = listener.local_addr()?;
    if let Some(c) = &certs {
        tokio::spawn(c.clone().watch(stop.clone(), handler.metrics.clone()));
    }
    let (handler, stop) = (handler.clone(), stop.clone());
    let task = match (listen.scheme, certs) {
        (Scheme::Https, certs) => {
            let max = listen
                .max_connections
                .unwrap_or(crate::config::transport::HTTPS_MAX_CONNECTIONS);
            tokio::spawn(doh::serve(listener, handler, stop, certs, (max, doh::Doh)))
        }
        (Scheme::Grpc, certs) => {
            let limits = listen.streams.unwrap_or_default();
            let app = grpc::Grpc {
                max_streams: limits.max_streams,
            };
            tokio::spawn(doh::serve(
                listener,
                handler,
                stop,
                certs,
                (limits.max_connections, app),
            ))
        }
        (_, Some(certs)) => tokio::spawn(tcp::serve_with(listener, handler, stop, Arc::new(dot::Dot(certs)))),
        (_, None) => tokio::spawn(tcp::serve(listener, handler, stop)),
    };
    tracing::info!("listening on {}://{bound}", listen.scheme.name());
    Ok(Listening { bound, task })
}

/// A `quic://` or `https3://` listener: one quinn endpoint on UDP.
fn open_quic(
    addr: SocketAddr,
    listen: &Listen,
    handler: &Arc<Handler>,
    stop: &Arc<AtomicBool>,
    certs: &Arc<certs::Certs>,
) -> io::Result<Listening> {
    let (quic_limits, stream_limits) = (listen.quic.unwrap_or_default(), listen.streams.unwrap_or_default());
    let is_doq = listen.scheme == Scheme::Quic;
    let shape = if is_doq {
        doq::shape(&quic_limits)
    } else {
        doh3::shape(&stream_limits)
    };
    let (bound, acceptor) = quic::bind(addr, certs, shape, handler)?;
    let (h, s) = (handler.clone(), stop.clone());
    let task = if is_doq {
        tokio::spawn(doq::serve(acceptor, h, s, quic_limits))
    } else {
        tokio::spawn(doh3::serve(acceptor, h, s, stream_limits))
    };
    tokio::spawn(certs.clone().watch(stop.clone(), handler.metrics.clone()));
    tracing::info!("listening on {}://{bound}", listen.scheme.name());
    Ok(Listening { bound, task })
}
