//! The scratch space a worker reuses for every query it handles, and
//! what [`super::Handler`] carries a message through its path with.

use std::net::SocketAddr;
use std::time::Instant;

use super::replay;
use super::reply::Answer;
use crate::metrics::Transport;

/// Per-worker scratch space, reused for every query it handles.
#[derive(Default)]
pub struct Scratch {
    pub answer: Answer,
    pub out: Vec<u8>,
    pub(super) memo: replay::memo::Memo,
    pub(super) key: Vec<u8>,
    /// Cache hits replayed as bytes ([`replay::hits`]).
    pub(super) hits: replay::hits::Hits,
    /// Client addresses → `clusterdns_client_requests_total` series.
    pub(super) clients: crate::metrics::ClientSlots,
    /// The listener's address queries come in on (`rewrite`'s `{server_ip}`).
    pub local: Option<SocketAddr>,
}

/// A message as it came in, with what [`super::request::parse`] read of it.
#[derive(Clone, Copy)]
pub(super) struct Arrival<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) wire: Option<super::request::Wire>,
    /// [`super::Router::admits`] for a plain query (`wire`).
    pub(super) admitted: Option<super::route::Admission<'a>>,
    pub(super) peer: SocketAddr,
    pub(super) transport: Transport,
    pub(super) started: Instant,
}

/// What became of a message: a reply now (replayed or made), none, or one later.
pub(super) enum Fate {
    Reply(super::reply::Summary),
    /// No reply (dropped packet).
    Nothing,
    /// Handed to a task that replies later (or shed at the in-flight cap).
    Later,
}
