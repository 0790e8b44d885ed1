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
use quinn::{Endpoint, EndpointConfig, IdleTimeout, Incoming, VarInt};
use socket2::Type;

use super::certs::Certs;
use crate::query::udp;
use crate::query::Handler;

/// How long one wait for a connection lasts before the stop flag and
/// the certificate are looked at again (the flag also at once when
/// `look_at_stop_flags` asks).
const POLL: Duration = Duration::from_millis(200);
/// How long a closed endpoint waits for its connections' closes to leave
/// (a shutdown would otherwise exit first; clients then wait out their
/// idle timeout).
const CLOSING: Duration = Duration::from_millis(200);

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
/// acceptor. Connections close after the block's `timeouts { idle }`.
/// The socket has `SO_REUSEPORT`, as the UDP and TCP listeners' have: a
/// reload that binds the address anew (other certificate files) binds
/// before the old endpoint closes. Port 0 is a port no socket holds.
pub fn bind(
    addr: SocketAddr,
    certs: &Arc<Certs>,
    shape: Shape,
    handler: &Handler,
) -> std::io::Result<(SocketAddr, Acceptor)> {
    let idle = handler.router.load().tcp.idle;
    let socket = socket(addr)?;
    let config = Some(server_config(certs, shape, idle)?);
    let runtime = Arc::new(quinn::TokioRuntime);
    let endpoint = Endpoint::new(EndpointConfig::default(), config, socket.try_clone()?, runtime)?;
    let acceptor = Acceptor {
        endpoint,
        socket,
        certs: certs.clone(),
        in_use: certs.config(),
        shape,
    };
    Ok((acceptor.endpoint.local_addr()?, acceptor))
}

/// The endpoint's UDP socket on `addr` (port 0: `udp::unshared::bind`'s).
fn socket(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let in_use = |e: &std::io::Error| e.kind() == std::io::ErrorKind::AddrInUse;
    udp::unshared::bind(
        addr,
        |e| e,
        in_use,
        |at| {
            let socket = udp::unshared::socket(at, Type::DGRAM)?;
            socket.set_reuse_port(true)?;
            socket.bind(&at.into())?;
            Ok(socket.into())
        },
    )
}

/// An endpoint's incoming connections, with the certificate in use.
pub struct Acceptor {
    pub endpoint: Endpoint,
    /// The endpoint's socket (another descriptor of it).
    socket: std::net::UdpSocket,
    certs: Arc<Certs>,
    in_use: Arc<rustls::ServerConfig>,
    shape: Shape,
}

impl Acceptor {
    /// The next connection, or `None` once `stop` is set or the endpoint
    /// closed. While it waits, a certificate read again is given to the
    /// endpoint for new handshakes.
    pub async fn next(&mut self, stop: &AtomicBool, handler: &Handler) -> Option<Incoming> {
        loop {
            let woken = crate::query::tcp::accept::stopping();
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            tokio::select! {
                biased;
                got = tokio::time::timeout(POLL, self.endpoint.accept()) => match got {
                    Ok(accepted) => return accepted,
                    Err(_) => self.rotate(handler),
                },
                () = woken => {}
            }
        }
    }

    /// Closes the endpoint's connections with `code` and `reason`, once
    /// it has left its port's group: new clients go to the group's other
    /// sockets from now (a reload's new endpoint), not to this closing one.
    /// Waits (at most [`CLOSING`]) for the closes to be sent.
    pub async fn close(&self, code: u32, reason: &[u8]) {
        let _ = udp::leave_group(&self.socket);
        self.endpoint.close(VarInt::from_u32(code), reason);
        let _ = tokio::time::timeout(CLOSING, self.endpoint.wait_idle()).await;
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
