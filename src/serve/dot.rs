//! DNS over TLS (RFC 7858): the TCP path (`query::tcp`: framing,
//! pipelining, `timeouts`, `limits`, connection cap) over a TLS session.
//! The handshake runs in the connection's own task and must finish within
//! `timeouts { read }`; one that fails or stalls closes the connection
//! (`clusterdns_tcp_closed_total{reason="handshake"}`).
//!
//! The session is rustls's unbuffered one over buffers of our own
//! (`session`), read and written through the socket's readiness by two
//! halves that share it (`stream`): an idle connection holds no TLS
//! buffer, only the session's keys and state.

use std::io;
use std::sync::Arc;

use tokio::net::TcpStream;

use super::certs::Certs;
use crate::query::limits::timeouts::TcpLimits;
use crate::query::tcp::Upgrade;

mod session;
mod stream;

use session::{Seal, Session, Stage};
pub use stream::{TlsRead, TlsWrite};

/// ALPN of DNS over TLS (RFC 7858's registration).
pub const ALPN: &[&[u8]] = &[b"dot"];

/// Upgrades accepted connections to TLS with the listener's certificate.
pub struct Dot(pub Arc<Certs>);

impl Upgrade for Dot {
    type Read = TlsRead;
    type Write = TlsWrite;

    async fn readable(read: &TlsRead) {
        read.readable().await
    }

    async fn upgrade(&self, stream: TcpStream, limits: &TcpLimits) -> Option<(Self::Read, Self::Write)> {
        // Boxed: the handshake's state is freed when it ends, and the
        // connection's task stays as small as a plain TCP one's.
        let handshake = Box::pin(handshake(stream, self.0.config()));
        match tokio::time::timeout(limits.read, handshake).await {
            Ok(Ok(halves)) => Some(halves),
            Ok(Err(e)) => {
                tracing::debug!(target: "tls", "handshake failed: {e}");
                None
            }
            Err(_) => None,
        }
    }
}

/// The server's side of the handshake on `tcp` with `config`; the halves
/// once application data may flow.
async fn handshake(tcp: TcpStream, config: Arc<rustls::ServerConfig>) -> io::Result<(TlsRead, TlsWrite)> {
    let broken = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, e);
    let mut session = Session::new(config).map_err(broken)?;
    loop {
        let stage = session.advance(Seal::Nothing).map_err(broken)?;
        while !session.unsent().is_empty() {
            tcp.writable().await?;
            match tcp.try_write(session.unsent()) {
                Ok(n) => session.sent(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        match stage {
            Stage::Open => return Ok(stream::split(tcp, session)),
            Stage::Closed => return Err(io::ErrorKind::UnexpectedEof.into()),
            Stage::Handshaking if session.ended => return Err(io::ErrorKind::UnexpectedEof.into()),
            Stage::Handshaking => {}
        }
        tcp.readable().await?;
        match session.read_with(|room| tcp.try_read_buf(room)) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests;
