//! The server blocks sharing one listener, and what they share.

use std::sync::Arc;

use super::block::Block;
use crate::metrics::ZoneStats;

/// The server blocks sharing one listener.
pub struct Router {
    pub blocks: Vec<Block>,
    /// Bumped by each reload, so memoized replies of the old config die.
    pub epoch: u64,
    /// `coredns_dns_*` per zone; slot 0 counts queries no zone matched.
    pub stats: Vec<Arc<ZoneStats>>,
    /// TCP timeouts and caps of this listener (its first block's).
    pub tcp: crate::query::limits::timeouts::TcpLimits,
    /// Queries being forwarded at once (process-wide); more are dropped.
    pub in_flight: usize,
    /// `proxyproto` of this listener (its first block's).
    pub proxy: Option<Arc<crate::query::proxyproto::Proxyproto>>,
    /// The `dnstap` taps of each stats slot's block (empty: none taps).
    pub taps: Vec<Option<Arc<crate::dnstap::Taps>>>,
    /// The `trace` tracer of each stats slot's block (empty: none traces).
    pub traces: Vec<Option<Arc<crate::query::plugins::trace::Tracer>>>,
    /// The `tsig` directives of the blocks (none: requests are not looked at).
    pub tsig: Option<Arc<crate::query::tsig::Tsig>>,
    /// Whether a block has a `view`: blocks are then chosen by
    /// [`Router::viewed`], and nothing is replayed ([`view`]).
    pub views: bool,
    /// Whether a query's ECS address is read for the plugins (a block
    /// has a `view`, or `metadata` with `geoip { edns-subnet }`).
    pub subnets: bool,
}
