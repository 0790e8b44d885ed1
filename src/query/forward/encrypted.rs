//! The seam between an upstream and its encrypted transport: which one a
//! `forward` target asks for (`tls://`: [`Dot`], `https://`: [`Doh`]; a `grpc`
//! directive's: [`Grpc`]), built from the TLS client
//! configuration the config loaded, and the one call the exchange makes;
//! and [`Handshake`], how both open a connection and count and log its
//! failures.

use std::sync::atomic::Ordering;

use hickory_proto::op::{Message, Query};

use super::doh::Doh;
use super::dot::Dot;
use super::exchange::ExchangeError;
use super::grpc::Grpc;
use crate::query::forward::setup::tls::{Target, TlsSettings, Via};
use crate::query::forward::setup::ForwardConfig;

/// An upstream's encrypted transport.
pub enum Encrypted {
    Tls(Dot),
    Https(Doh),
    /// The `grpc` directive's upstreams (h2c without `tls`).
    Grpc(Box<Grpc>),
    /// An encrypted target this build cannot reach: every exchange fails
    /// (never plain DNS instead).
    Unavailable,
}

impl std::fmt::Debug for Encrypted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Encrypted::Tls(_) => f.write_str("tls"),
            Encrypted::Https(_) => f.write_str("https"),
            Encrypted::Grpc(_) => f.write_str("grpc"),
            Encrypted::Unavailable => f.write_str("unavailable"),
        }
    }
}

impl Encrypted {
    /// The transport `target` asks for; `None` for plain DNS.
    pub fn of(target: &Target, tls: &TlsSettings) -> Option<Encrypted> {
        let client = tls.client.clone();
        let built = match &target.via {
            Via::Dns => return None,
            Via::Grpc => Grpc::new(target.addr, &target.server_name(tls), client.as_deref())
                .map(|g| Encrypted::Grpc(Box::new(g))),
            Via::GrpcUnix(path) => Some(Encrypted::Grpc(Box::new(Grpc::unix(path)))),
            Via::Tls(_) => client.and_then(|c| Dot::new(target.addr, &target.server_name(tls), c).map(Encrypted::Tls)),
            Via::Https(host) => client.and_then(|c| {
                Doh::new(target.addr, host, &target.server_name(tls), tls.doh_method, &c).map(Encrypted::Https)
            }),
        };
        Some(built.unwrap_or(Encrypted::Unavailable))
    }

    pub async fn exchange(
        &self,
        request: &[u8],
        id: u16,
        query: &Query,
        cfg: &ForwardConfig,
    ) -> Result<Message, ExchangeError> {
        match self {
            Encrypted::Tls(dot) => dot.exchange(request, id, query, cfg).await,
            Encrypted::Https(doh) => doh.exchange(request, id, query, cfg).await,
            Encrypted::Grpc(grpc) => grpc.exchange(request, id, query, cfg).await,
            Encrypted::Unavailable => Err(ExchangeError::Io(std::io::Error::other(
                "encrypted transport unavailable",
            ))),
        }
    }

    /// Failed TLS handshakes so far.
    pub fn failures(&self) -> u64 {
        match self {
            Encrypted::Tls(dot) => dot.tls.failures.load(Ordering::Relaxed),
            Encrypted::Https(doh) => doh.tls.failures.load(Ordering::Relaxed),
            Encrypted::Grpc(grpc) => grpc.tls.as_ref().map_or(0, |t| t.failures.load(Ordering::Relaxed)),
            Encrypted::Unavailable => 0,
        }
    }

    /// The scheme for the `to` label: `tls` or `https`.
    pub fn scheme(&self) -> &'static str {
        match self {
            Encrypted::Https(_) => "https",
            Encrypted::Grpc(_) => "grpc",
            Encrypted::Tls(_) | Encrypted::Unavailable => "tls",
        }
    }
}
