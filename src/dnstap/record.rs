//! What the query path stamps for one exchange: which side it was on,
//! the peers, the two instants and where its wire messages lie in the
//! batch; fixed size, so pushing it never allocates.

use std::net::SocketAddr;
use std::time::Instant;

/// Which pair of dnstap messages a [`Record`] becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// CLIENT_QUERY and CLIENT_RESPONSE: `peer` is the client.
    Client,
    /// FORWARDER_QUERY, and FORWARDER_RESPONSE when an answer came: `peer`
    /// is the upstream, `local` our end of the socket.
    Forwarder,
}

/// One query and its answer, as queued for the writer: fixed size, the
/// wire messages (with `full`) kept beside it in the queue's batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    pub(super) side: Side,
    pub(super) tcp: bool,
    pub(super) peer: SocketAddr,
    pub(super) local: Option<SocketAddr>,
    pub(super) asked: Instant,
    /// When the answer was sent (client) or came (forwarder); `None`: no
    /// answer came.
    pub(super) answered: Option<Instant>,
    /// Ranges of the batch's wire bytes; empty without `full`.
    pub(super) query: (u32, u32),
    pub(super) reply: (u32, u32),
}

impl Record {
    pub(super) fn new(side: Side, peer: SocketAddr, tcp: bool, asked: Instant) -> Record {
        Record {
            side,
            tcp,
            peer,
            local: None,
            asked,
            answered: None,
            query: (0, 0),
            reply: (0, 0),
        }
    }

    /// How many dnstap messages this becomes.
    pub(super) fn messages(&self) -> u64 {
        1 + u64::from(self.answered.is_some())
    }
}
