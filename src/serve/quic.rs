//! The quinn endpoint that DNS over QUIC ([`super::doq`]) and DNS over
//! HTTP/3 ([`super::doh3`]) both serve on: what its transport allows a
//! connection ([`Shape`]), its binding, and an accept loop that gives a
//! certificate read again to the endpoint for new handshakes
//! ([`Acceptor`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, IdleTimeout, Incoming, VarInt};

use super::certs::Certs;
use crate::query::Handler;

/// How long one wait for a connection lasts before the stop flag and
/// the certificate are looked at again.
const POLL: Duration = Duration::from_millis(200);

/// What a listener's QUIC transport allows one connection.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Request streams open at once (QUIC's stream credit); `None`:
    /// quinn's default.
    pub bidi: Option<u32>,
    /// Unidirectional streams the client may open.
    pub uni: u32,
    /// Bytes one stream may hold unread (the connection: twice that).
    pub window: u32,
}

/// The quinn server configuration of `certs` shaped by `shape`, a
/// connection closed after `idle` of silence.
fn server_config(certs: &Certs, shape: Shape, idle: Duration) -> std::io::Result<quinn::ServerConfig> {
    let crypto = QuicServerConfig::try_from(certs.config()).map_err(std::io::Error::other)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    if let Some(streams) = shape.bidi {
        transport.max_concurrent_bidi_streams(VarInt::from_u32(streams));
    }
    transport
        .max_concurrent_uni_streams(VarInt::from_u32(shape.uni))
        .stream_receive_window(VarInt::from_u32(shape.window))
        .receive_window(VarInt::from_u32(2 * shape.window))
        .max_idle_timeout(IdleTimeout::try_from(idle).ok());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Binds `addr` (UDP) for a QUIC listener; its bound address and
/// endpoint. Connections close after the block's `timeouts { idle }`.
pub fn bind(
    addr: SocketAddr,
    certs: &Certs,
    shape: Shape,
    handler: &Handler,
) -> std::io::Result<(SocketAddr, Endpoint)> {
    let idle = handler.router.load().tcp.idle;
    let endpoint = Endpoint::server(server_config(certs, shape, idle)?, addr)?;
    Ok((endpoint.local_addr()?, endpoint))
}

/// An endpoint's incoming connections, with the certificate in use.
pub struct Acceptor {
    pub endpoint: Endpoint,
    certs: Arc<Certs>,
    in_use: Arc<rustls::ServerConfig>,
    shape: Shape,
}

impl Acceptor {
    pub fn new(endpoint: Endpoint, certs: Arc<Certs>, shape: Shape) -> Acceptor {
        let in_use = certs.config();
        Acceptor {
            endpoint,
            certs,
            in_use,
            shape,
        }
    }

    /// The next connection, or `None` once `stop` is set or the endpoint
    /// closed. While it waits, a certificate read again is given to the
    /// endpoint for new handshakes.
    pub async fn next(&mut self, stop: &AtomicBool, handler: &Handler) -> Option<Incoming> {
        while !stop.load(Ordering::Relaxed) {
            match tokio::time::timeout(POLL, self.endpoint.accept()).await {
                Ok(accepted) => return accepted,
                Err(_) => self.rotate(handler),
            }
        }
        None
    }

    fn rotate(&mut self, handler: &Handler) {
        let now = self.certs.config();
        if Arc::ptr_eq(&now, &self.in_use) {
            return;
        }
        let idle = handler.router.load().tcp.idle;
        if let Ok(c) = server_config(&self.certs, self.shape, idle) {
            self.endpoint.set_server_config(Some(c));
        }
        self.in_use = now;
    }

    /// The port the endpoint is bound to.
    pub fn port(&self) -> Option<u16> {
        self.endpoint.local_addr().ok().map(|a| a.port())
    }
}
