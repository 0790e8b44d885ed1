//! Counters of the `tls://` and `https://` listeners: server certificates
//! read again after their files changed (and reads that failed, keeping
//! the old one), DNS over HTTPS (HTTP/2, HTTP/1.1 and HTTP/3) and gRPC
//! requests refused before the DNS path, and DNS over QUIC connections
//! and streams refused.
//! Connections refused at a cap, idle or stalled in their handshake are
//! counted with TCP's (`clusterdns_tcp_*`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::catalogue as c;

/// Why a DNS over HTTPS request got an HTTP error (`reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DohRefusal {
    /// Not `/dns-query` (404).
    Path,
    /// Neither GET nor POST (405).
    Method,
    /// GET without a valid base64url `dns` parameter, or a POST of another
    /// content type (400, 415).
    Malformed,
    /// The `dns` parameter or the body is over a DNS message's 65535 bytes (413, 414).
    TooLarge,
    /// Over `https { max_connections }` (the connection is closed).
    Connections,
}

impl DohRefusal {
    const ALL: [DohRefusal; 5] = [
        DohRefusal::Path,
        DohRefusal::Method,
        DohRefusal::Malformed,
        DohRefusal::TooLarge,
        DohRefusal::Connections,
    ];
    const LABELS: [&'static str; 5] = ["path", "method", "malformed", "too_large", "max_connections"];
}

/// Why DNS over QUIC refused a connection or a stream (`reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoqRefusal {
    /// Over the listener's connection cap (`limits { connections }`).
    Connections,
    /// The handshake failed or did not finish within `timeouts { read }`.
    Handshake,
    /// A stream's query did not arrive whole (FIN) within `timeouts { read }`.
    StreamTimeout,
    /// A stream's bytes are not one length-prefixed message.
    Malformed,
}

impl DoqRefusal {
    const LABELS: [&'static str; 4] = ["max_connections", "handshake", "stream_timeout", "malformed"];
}

#[derive(Debug, Default)]
pub struct Transports {
    /// Certificates read again: [succeeded, failed].
    reloads: [AtomicU64; 2],
    doh_refused: [AtomicU64; 5],
    doq_refused: [AtomicU64; 4],
    /// `proxyproto`: [UDP, TCP].
    proxyproto_refused: [AtomicU64; 2],
    grpc_refused: [AtomicU64; 5],
}

impl Transports {
    /// A certificate read again after its files changed (`ok`: in use now).
    pub fn reloaded(&self, ok: bool) {
        self.reloads[usize::from(!ok)].fetch_add(1, Relaxed);
    }

    pub fn doh_refused(&self, why: DohRefusal) {
        self.doh_refused[why as usize].fetch_add(1, Relaxed);
    }

    /// A gRPC request refused before the DNS path (`Path`: another
    /// method than `Query`, `TooLarge`: over a DNS message's size).
    pub fn grpc_refused(&self, why: DohRefusal) {
        self.grpc_refused[why as usize].fetch_add(1, Relaxed);
    }

    pub fn doq_refused(&self, why: DoqRefusal) {
        self.doq_refused[why as usize].fetch_add(1, Relaxed);
    }

    /// A datagram dropped (`udp`) or a connection closed for its PROXY header.
    pub fn proxyproto_refused(&self, udp: bool) {
        self.proxyproto_refused[usize::from(!udp)].fetch_add(1, Relaxed);
    }

    pub(super) fn render(&self, s: &mut String) {
        let [ok, failed] = [0, 1].map(|i| self.reloads[i].load(Relaxed));
        c::TLS_CERT_RELOADS.by(s, [("ok", ok), ("failed", failed)]);
        let refused = DohRefusal::ALL.map(|w| {
            (
                DohRefusal::LABELS[w as usize],
                self.doh_refused[w as usize].load(Relaxed),
            )
        });
        c::DOH_REFUSED.by(s, refused);
        let grpc = DohRefusal::ALL.map(|w| {
            (
                DohRefusal::LABELS[w as usize],
                self.grpc_refused[w as usize].load(Relaxed),
            )
        });
        c::GRPC_REFUSED.by(s, grpc);
        let doq = DoqRefusal::LABELS;
        c::DOQ_REFUSED.by(s, [0, 1, 2, 3].map(|i| (doq[i], self.doq_refused[i].load(Relaxed))));
        let pp = |i: usize| self.proxyproto_refused[i].load(Relaxed);
        c::PROXYPROTO_REFUSED.by(s, [("udp", pp(0)), ("tcp", pp(1))]);
    }
}
