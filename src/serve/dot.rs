//! DNS over TLS (RFC 7858): the TCP path (`query::tcp`: framing,
//! pipelining, `timeouts`, `limits`, connection cap) over a TLS session.
//! The handshake runs in the connection's own task and must finish within
//! `timeouts { read }`; one that fails or stalls closes the connection
//! (`clusterdns_tcp_closed_total{reason="handshake"}`).

use std::sync::Arc;

use tokio::io::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::certs::Certs;
use crate::query::limits::timeouts::TcpLimits;
use crate::query::tcp::Upgrade;

/// ALPN of DNS over TLS (RFC 7858's registration).
pub const ALPN: &[&[u8]] = &[b"dot"];

/// Upgrades accepted connections to TLS with the listener's certificate.
pub struct Dot(pub Arc<Certs>);

impl Upgrade for Dot {
    type Read = ReadHalf<TlsStream<TcpStream>>;
    type Write = WriteHalf<TlsStream<TcpStream>>;
    const IDLE_READ: usize = crate::query::tcp::READ_ROOM;

    async fn upgrade(&self, stream: TcpStream, limits: &TcpLimits) -> Option<(Self::Read, Self::Write)> {
        let acceptor = TlsAcceptor::from(self.0.config());
        match tokio::time::timeout(limits.read, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => Some(tokio::io::split(tls)),
            Ok(Err(e)) => {
                tracing::debug!(target: "tls", "handshake failed: {e}");
                None
            }
            Err(_) => None,
        }
    }
}
