//! What every upstream transport shares (plain TCP, DNS over TLS, DNS
//! over HTTPS): a TCP connection from `source_address`, the TLS handshake
//! against the upstream's server name, the error of an exchange, the check
//! that an answer is the one to our question, and asking once more on a
//! fresh connection when a reused one was closed. The transports use this
//! file; it uses none of them.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hickory_proto::op::{Message, Query};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::query::forward::setup::ForwardConfig;

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error("timed out")]
    Timeout,
    /// Timed out after a reply with our ID to another question or without
    /// QR came (discarded, RFC 5452 section 3); answered FORMERR, as
    /// CoreDNS answers such a reply.
    #[error("timed out after a reply to another question")]
    Mismatch,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A TCP connection to `addr`, from `source` when set; without Nagle's
/// delay (as Go dials, CoreDNS's too), so a message written in parts (an
/// HTTP/2 HEADERS frame, then DATA) is not held for the peer's ACK.
pub async fn connect(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<TcpStream> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    if let Some(ip) = source {
        socket.bind(SocketAddr::new(ip, 0))?;
    }
    let stream = socket.connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
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
        let tcp = connect(self.addr, cfg.source_address).await?;
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
pub async fn once_more<C, Open, Opened, Ask, Asked>(open: Open, ask: Ask) -> Result<Message, ExchangeError>
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

/// Why a datagram that arrived on one of our ports is not the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stray {
    /// Not a DNS response, or cut short.
    Malformed,
    /// Another ID than the one we sent.
    Id,
    /// Our ID, but not our question (case aside).
    Question,
    /// From another address or port than the upstream's.
    Source,
    /// Queued on an idle port before its next query was sent.
    Late,
}

impl Stray {
    pub const ALL: [Stray; 5] = [Stray::Malformed, Stray::Id, Stray::Question, Stray::Source, Stray::Late];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Stray::Malformed => "malformed",
            Stray::Id => "id",
            Stray::Question => "question",
            Stray::Source => "source",
            Stray::Late => "late",
        }
    }
}

/// Whether a datagram `classify` refused carries our ID (`id`): a reply
/// to another question, or our query's ID without QR.
pub fn mismatched(bytes: &[u8], id: u16, why: Stray) -> bool {
    let ours = bytes.len() >= 12 && u16::from_be_bytes([bytes[0], bytes[1]]) == id;
    let no_qr = bytes.get(2).is_some_and(|b| b & 0x80 == 0);
    ours && (why == Stray::Question || why == Stray::Malformed && no_qr)
}

/// The answer in `bytes` if it is a response to our query `id`.
pub fn matching(bytes: &[u8], id: u16, query: &Query) -> Option<Message> {
    classify(bytes, id, query).ok()
}

/// The answer in `bytes` if it is a response to our query `id` with our
/// question, else why not.
pub fn classify(bytes: &[u8], id: u16, query: &Query) -> Result<Message, Stray> {
    if bytes.len() < 12 || bytes[2] & 0x80 == 0 {
        return Err(Stray::Malformed);
    }
    if u16::from_be_bytes([bytes[0], bytes[1]]) != id {
        return Err(Stray::Id);
    }
    let m = Message::from_vec(bytes).map_err(|_| Stray::Malformed)?;
    let q = m.queries.first().ok_or(Stray::Question)?;
    let same =
        q.query_type() == query.query_type() && q.query_class() == query.query_class() && q.name() == query.name(); // case-insensitive
    if same {
        Ok(m)
    } else {
        Err(Stray::Question)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{MessageType, OpCode};
    use hickory_proto::rr::{Name, RecordType};

    fn reply(id: u16, name: &str) -> Vec<u8> {
        let mut m = Message::new(id, MessageType::Response, OpCode::Query);
        m.add_query(Query::query(Name::from_ascii(name).expect("name"), RecordType::A));
        m.to_vec().expect("encode")
    }

    #[test]
    fn only_our_answer_is_accepted() {
        let q = Query::query(Name::from_ascii("Example.org.").expect("name"), RecordType::A);
        assert!(matching(&reply(7, "example.org."), 7, &q).is_some());
        assert!(matching(&reply(8, "example.org."), 7, &q).is_none(), "wrong id");
        assert!(matching(&reply(7, "example.net."), 7, &q).is_none(), "wrong question");
        assert!(matching(&[0u8; 5], 7, &q).is_none(), "garbage");
        assert_eq!(classify(&reply(8, "example.org."), 7, &q).err(), Some(Stray::Id));
        assert_eq!(classify(&reply(7, "example.net."), 7, &q).err(), Some(Stray::Question));
        assert_eq!(classify(&[0u8; 5], 7, &q).err(), Some(Stray::Malformed));
        let mut query = reply(7, "example.org.");
        query[2] &= 0x7f; // QR clear: a query, not a reply
        assert_eq!(classify(&query, 7, &q).err(), Some(Stray::Malformed));
        assert!(mismatched(&query, 7, Stray::Malformed), "our ID without QR");
        assert!(!mismatched(&query, 8, Stray::Malformed), "another ID without QR");
        assert!(mismatched(&reply(7, "example.net."), 7, Stray::Question));
        assert!(!mismatched(&reply(8, "example.org."), 7, Stray::Id));
    }
}
