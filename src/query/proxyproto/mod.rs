//! `proxyproto`: the PROXY protocol (HAProxy's, versions 1 and 2) in front
//! of a listener, so that a load balancer that speaks it passes on the
//! real client's address: the guard, `whoami`, the logs, fairness and the
//! metrics then see the client, and replies still go to the balancer.
//! Over TCP (and DoT, DoH: before the TLS handshake) a connection may
//! start with a v1 or v2 header; over UDP each datagram may start with a
//! v2 header (of a DGRAM address). Which sources may send one is the
//! policy ([`Proxyproto::policy`]); what a header says is read by
//! [`header`], which never reads past the bytes it is given.
//! Cloudflare Spectrum's UDP sessions (a header alone in the first
//! datagram, none after) are remembered per balancer address
//! ([`sessions`]).

pub mod sessions;
pub mod setup;

pub use setup::{Policy, Proxyproto, MAX_SESSIONS};

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

impl Proxyproto {
    /// The policy for a connection or datagram from `source`, as
    /// CoreDNS's: without `allow`, `default` (use when not written) for
    /// all; with it, use for the sources it lists and `default` (ignore
    /// when not written) for the others.
    pub fn policy(&self, source: IpAddr) -> Policy {
        if self.allow.is_empty() {
            return self.default.unwrap_or(Policy::Use);
        }
        let source = canonical(source);
        if self.allow.iter().any(|n| n.contains(source)) {
            return Policy::Use;
        }
        self.default.unwrap_or(Policy::Ignore)
    }
}

/// An IPv4-mapped IPv6 address as IPv4 (a dual-stack socket's view).
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The transport a header is read on: a v2 header must name the same
/// (STREAM over TCP, DGRAM over UDP); v1 exists over TCP only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    Stream,
    Datagram,
}

/// What the first bytes of a connection or datagram hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// No PROXY header: the bytes are the payload.
    Absent,
    /// Not enough bytes yet to tell (a stream whose start is still coming).
    Partial,
    /// A header of `len` bytes, giving the client's address (`None`: a
    /// LOCAL command, an UNSPEC or UNIX address: the sender is the client).
    Present { len: usize, client: Option<SocketAddr> },
    /// A header that does not parse, or names another transport.
    Invalid(&'static str),
}

/// The v2 signature.
const V2: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// The v1 start, and the longest v1 line (CRLF included).
const V1: &[u8] = b"PROXY ";
const V1_MAX: usize = 107;
/// The longest v2 header accepted (its address block with TLVs).
pub const V2_MAX: usize = 16 + 512;

/// Reads the PROXY header at the start of `bytes`, if any.
pub fn header(bytes: &[u8], carrier: Carrier) -> Header {
    let prefix = |sig: &[u8]| bytes.len() >= sig.len() && bytes.starts_with(sig) || sig.starts_with(bytes);
    if prefix(V2) {
        return v2(bytes, carrier);
    }
    if carrier == Carrier::Stream && prefix(V1) {
        return v1(bytes);
    }
    Header::Absent
}

fn v2(bytes: &[u8], carrier: Carrier) -> Header {
    let Some(head) = bytes.get(..16) else {
        return Header::Partial;
    };
    let len = 16 + usize::from(u16::from_be_bytes([head[14], head[15]]));
    if head[12] >> 4 != 2 {
        return Header::Invalid("not PROXY protocol version 2");
    }
    if len > V2_MAX {
        return Header::Invalid("header longer than 528 bytes");
    }
    let Some(body) = bytes.get(16..len) else {
        return Header::Partial;
    };
    let client = match head[12] & 0x0f {
        0 => None, // LOCAL: the balancer's own (health) traffic
        1 => match v2_address(head[13], body, carrier) {
            Ok(client) => client,
            Err(why) => return Header::Invalid(why),
        },
        _ => return Header::Invalid("unknown command"),
    };
    Header::Present { len, client }
}

/// The source address of a v2 PROXY command's address block.
fn v2_address(family: u8, body: &[u8], carrier: Carrier) -> Result<Option<SocketAddr>, &'static str> {
    let transport = match family & 0x0f {
        0 => return Ok(None),
        1 => Carrier::Stream,
        2 => Carrier::Datagram,
        _ => return Err("unknown transport"),
    };
    if transport != carrier {
        return Err(match carrier {
            Carrier::Stream => "a datagram header on a stream",
            Carrier::Datagram => "a stream header on a datagram",
        });
    }
    let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    match family >> 4 {
        1 if body.len() >= 12 => {
            let ip = Ipv4Addr::new(body[0], body[1], body[2], body[3]);
            Ok(Some(SocketAddr::new(ip.into(), port(8))))
        }
        2 if body.len() >= 36 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&body[..16]);
            Ok(Some(SocketAddr::new(Ipv6Addr::from(octets).into(), port(32))))
        }
        0 | 3 => Ok(None),
        1 | 2 => Err("address block too short"),
        _ => Err("unknown address family"),
    }
}

fn v1(bytes: &[u8]) -> Header {
    let window = &bytes[..bytes.len().min(V1_MAX)];
    let Some(end) = window.windows(2).position(|w| w == b"\r\n") else {
        return if bytes.len() >= V1_MAX {
            Header::Invalid("v1 line longer than 107 bytes")
        } else {
            Header::Partial
        };
    };
    let Ok(line) = std::str::from_utf8(&bytes[V1.len()..end]) else {
        return Header::Invalid("v1 line is not text");
    };
    let words: Vec<&str> = line.split(' ').collect();
    let client = match words.as_slice() {
        ["UNKNOWN", ..] => None,
        [family @ ("TCP4" | "TCP6"), source, _, port, _] => {
            let Ok(ip) = source.parse::<IpAddr>() else {
                return Header::Invalid("v1 source is not an address");
            };
            if ip.is_ipv4() != (*family == "TCP4") {
                return Header::Invalid("v1 address of the other family");
            }
            let Ok(port) = port.parse::<u16>() else {
                return Header::Invalid("v1 source port is not a port");
            };
            Some(SocketAddr::new(ip, port))
        }
        _ => return Header::Invalid("v1 line malformed"),
    };
    Header::Present { len: end + 2, client }
}

/// Why a connection or datagram was refused.
pub type Refusal = &'static str;

/// Counts a datagram dropped or a connection closed for its header from
/// `peer`, and says why in a debug line.
pub fn refused(
    metrics: &crate::metrics::Metrics,
    transport: crate::metrics::Transport,
    peer: SocketAddr,
    why: Refusal,
) {
    let udp = transport == crate::metrics::Transport::Udp;
    metrics.transports.proxyproto_refused(udp);
    tracing::debug!(target: "proxyproto", "{transport:?} from {peer} refused: {why}");
}

/// A datagram from `sender` under `p`: where its query starts and who the
/// client is; `Err` when it is to be dropped (a refused or invalid header,
/// or a header alone: a Spectrum session's start, remembered in `sessions`).
pub fn datagram(
    p: &Proxyproto,
    bytes: &[u8],
    sender: SocketAddr,
    sessions: &mut sessions::Sessions,
    now: Instant,
) -> Result<(usize, SocketAddr), Refusal> {
    let policy = p.policy(sender.ip());
    if policy == Policy::Skip {
        return Ok((0, sender));
    }
    let tracking = !p.session_ttl.is_zero();
    match (header(bytes, Carrier::Datagram), policy) {
        (Header::Absent, Policy::Use) if tracking => {
            Ok((0, sessions.client(sender, now, p.session_ttl).unwrap_or(sender)))
        }
        (Header::Absent, _) => Ok((0, sender)),
        (Header::Partial, _) => Err("a datagram cut inside its PROXY header"),
        (Header::Invalid(why), _) => Err(why),
        (Header::Present { .. }, Policy::Reject) => Err("a PROXY header from a source not allowed"),
        (Header::Present { len, client }, policy) => {
            let client = client.filter(|_| policy == Policy::Use).unwrap_or(sender);
            if tracking && policy == Policy::Use {
                sessions.remember(sender, client, now, p.session_ttl, p.max_sessions);
            }
            if len == bytes.len() {
                return Err("a PROXY header alone");
            }
            Ok((len, client))
        }
    }
}

/// The client of a connection from `peer` under `p`: its PROXY header (if
/// any) read off `stream`, and nothing past it, within `wait`.
pub async fn stream(
    p: &Proxyproto,
    stream: &tokio::net::TcpStream,
    peer: SocketAddr,
    wait: Duration,
) -> Result<SocketAddr, Refusal> {
    let policy = p.policy(peer.ip());
    if policy == Policy::Skip {
        return Ok(peer);
    }
    let read = tokio::time::timeout(wait, start(stream));
    let (len, client) = match read.await.map_err(|_| "no PROXY header decided in time")?? {
        Header::Absent => return Ok(peer),
        Header::Present { .. } if policy == Policy::Reject => return Err("a PROXY header from a source not allowed"),
        Header::Present { len, client } => (len, client.filter(|_| policy == Policy::Use)),
        Header::Invalid(why) => return Err(why),
        Header::Partial => return Err("closed inside its PROXY header"),
    };
    let mut left = len;
    let mut sink = [0u8; V2_MAX];
    while left > 0 {
        // the header's bytes are all there (peeked): these reads do not wait
        let n = stream
            .try_read(&mut sink[..left])
            .map_err(|_| "closed inside its PROXY header")?;
        if n == 0 {
            return Err("closed inside its PROXY header");
        }
        left -= n;
    }
    Ok(client.unwrap_or(peer))
}

/// Peeks at the start of `stream` until it is known whether a header is
/// there and how long it is.
async fn start(stream: &tokio::net::TcpStream) -> Result<Header, Refusal> {
    let mut buf = [0u8; V2_MAX];
    // a header comes in one segment as a rule; bounded by the caller's timeout
    loop {
        let n = stream.peek(&mut buf).await.map_err(|_| "closed before a query")?;
        match header(&buf[..n], Carrier::Stream) {
            Header::Partial if n > 0 && n < buf.len() => {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            decided => return Ok(decided),
        }
    }
}

#[cfg(test)]
mod tests;
