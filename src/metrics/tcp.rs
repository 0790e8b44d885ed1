//! TCP connection counts: open now, closed by reason ([`TcpClose`]), and
//! refused at the connection cap.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::catalogue::{self as c, TCP_CLOSE_REASONS};

/// Why a TCP connection ended (`clusterdns_tcp_closed_total{reason}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpClose {
    /// The client closed it (or reset it).
    Client,
    /// No query within the idle timeout.
    Idle,
    /// A query did not arrive whole within the read timeout.
    Read,
    /// The client did not take its replies within the write timeout.
    Write,
    /// Closed for a new connection at the connection cap (idle longest).
    Evicted,
    /// Server shutdown or reload.
    Shutdown,
    /// `timeouts { maxtcpqueries N }` queries were answered on it.
    MaxQueries,
    /// The TLS handshake failed or did not finish in time (`tls://`, `https://`).
    Handshake,
}

impl TcpClose {
    pub const ALL: [TcpClose; 8] = [
        TcpClose::Client,
        TcpClose::Idle,
        TcpClose::Read,
        TcpClose::Write,
        TcpClose::Evicted,
        TcpClose::Shutdown,
        TcpClose::MaxQueries,
        TcpClose::Handshake,
    ];

    fn label(self) -> &'static str {
        TCP_CLOSE_REASONS[self as usize]
    }
}

/// TCP connection counts.
#[derive(Default)]
pub struct Tcp {
    /// Open now.
    pub open: AtomicU64,
    closed: [AtomicU64; 8],
    /// Refused at the cap with no idle connection to close.
    rejected: AtomicU64,
}

impl Tcp {
    pub fn closed(&self, why: TcpClose) {
        self.closed[why as usize].fetch_add(1, Relaxed);
    }

    fn closed_count(&self, why: TcpClose) -> u64 {
        self.closed[why as usize].load(Relaxed)
    }

    /// A connection refused because the cap was reached and none was idle.
    pub fn rejected(&self) {
        self.rejected.fetch_add(1, Relaxed);
    }

    pub(super) fn render(&self, s: &mut String) {
        c::TCP_CONNECTIONS.single(s, self.open.load(Relaxed));
        c::TCP_CLOSED.by(s, TcpClose::ALL.map(|why| (why.label(), self.closed_count(why))));
        c::TCP_REJECTED.single(s, self.rejected.load(Relaxed));
    }
}
