//! The seam between an upstream and its encrypted transport: which one a
//! `forward` target asks for (`tls://`: [`Dot`], `https://`: [`Doh`]), built from the TLS client
//! configuration the config loaded, and the one call the exchange makes;
//! and [`Handshake`], how both open a connection and count and log its
//! failures.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hickory_proto::op::{Message, Query};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::doh::Doh;
use super::dot::Dot;
use super::upstream::ExchangeError;
use crate::config::forward::ForwardConfig;
use crate::config::forward_tls::{Target, TlsSettings, Via};

/// An upstream's encrypted transport.
pub enum Encrypted {
    Tls(Dot),
    Https(Doh),
    /// An encrypted target this build cannot reach: every exchange fails
    /// (never plain DNS instead).
    Unavailable,
}

impl std::fmt::Debug for Encrypted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Encrypted::Tls(_) => f.write_str("tls"),
            Encrypted::Https(_) => f.write_str("https"),
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
            Encrypted::Unavailable => 0,
        }
    }

    /// The scheme for the `to` label: `tls` or `https`.
    pub fn scheme(&self) -> &'static str {
        match self {
            Encrypted::Https(_) => "https",
            Encrypted::Tls(_) | Encrypted::Unavailable => "tls",
        }
    }
}

/// How DoT and DoH open a connection: TCP (from `source_address` when set),
/// then the TLS handshake against the upstream's server name; a failed
/// handshake is counted (`coredns_forward_tls_failures_total`) and logged
/// once until a handshake succeeds again.
pub struct Handshake {
    addr: SocketAddr,
    name: ServerName<'static>,
    connector: TlsConnector,
    /// Who the warning names: `tls://IP (server name N)` or the DoH URL.
    label: String,
    /// Failed TLS handshakes.
    pub failures: AtomicU64,
    /// Set once the current run of failures has been logged.
    warned: AtomicBool,
}

impl Handshake {
    /// `None` when `name` is not a DNS name or IP (never on a checked config).
    pub fn new(addr: SocketAddr, name: &str, connector: TlsConnector, label: String) -> Option<Handshake> {
        Some(Handshake {
            addr,
            name: ServerName::try_from(name.to_string()).ok()?,
            connector,
            label,
            failures: AtomicU64::new(0),
            warned: AtomicBool::new(false),
        })
    }

    pub async fn open(&self, cfg: &ForwardConfig) -> Result<TlsStream<TcpStream>, ExchangeError> {
        let tcp = super::dot::connect(self.addr, cfg.source_address).await?;
        match self.connector.connect(self.name.clone(), tcp).await {
            Ok(tls) => {
                self.warned.store(false, Ordering::Relaxed);
                Ok(tls)
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(target: "forward", "upstream {}: TLS handshake failed: {e}; its queries get no answer from it (never sent in plain text)", self.label);
                }
                Err(ExchangeError::Io(e))
            }
        }
    }
}

/// Asks on the shared connection `open(false)` gives (with whether it was
/// just opened); when a reused one fails with an I/O error (the server
/// closed it meanwhile), once more on a new one, `open(true)`. DNS over
/// TLS and over HTTPS both ask this way.
pub(super) async fn once_more<C, Open, Opened, Ask, Asked>(open: Open, ask: Ask) -> Result<Message, ExchangeError>
where
    Open: Fn(bool) -> Opened,
    Opened: std::future::Future<Output = Result<(C, bool), ExchangeError>>,
    Ask: Fn(C) -> Asked,
    Asked: std::future::Future<Output = Result<Message, ExchangeError>>,
{
    let (conn, fresh) = open(false).await?;
    match ask(conn).await {
        Err(ExchangeError::Io(_)) if !fresh => ask(open(true).await?.0).await,
        got => got,
    }
}
