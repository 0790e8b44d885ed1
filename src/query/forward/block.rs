//! The forwarding side of one server block: its `forward` directives in
//! order, its `cache`, the queries in flight upstream and its counters.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use hickory_proto::rr::Name;

use super::cache::{Cache, Key};
use super::directive::Forward;
use super::upstream::Upstream;
use crate::metrics::Metrics;
use crate::query::defer::Job;

/// What went into one upstream query, shared by every waiter on it.
pub(super) type Flight = Vec<Job>;

/// The forwarding side of one server block.
pub struct Forwarding {
    pub server: String,
    pub chain: Vec<Arc<Forward>>,
    pub cache: Option<Cache>,
    pub(super) flights: Mutex<std::collections::HashMap<(Key, bool), Flight, foldhash::fast::RandomState>>,
    pub(super) runtime: tokio::runtime::Handle,
    /// Every upstream is plain DNS over UDP first: a UDP worker's misses
    /// may run on its own lane (`lanes.rs`; `force_tcp` and the encrypted
    /// transports keep connections, and their tasks, shared between threads).
    pub(super) local: bool,
    pub(super) metrics: Arc<Metrics>,
    pub max_concurrent_rejects: AtomicU64,
    pub healthcheck_broken: AtomicU64,
    pub loop_detected: AtomicU64,
    /// The loop probe's name and the upstreams it was sent to.
    pub probe: Mutex<(Option<Name>, Vec<Arc<Upstream>>)>,
    /// The block's `errors` plugin: failed client queries are logged there.
    pub errors: Option<Arc<crate::query::errors::ErrorLog>>,
    /// The block's `dnstap` taps: each upstream exchange is sent there.
    pub taps: Option<Arc<crate::dnstap::Taps>>,
    /// What one query may spend in all (`cancel`, at most forward's 5 s).
    pub budget: std::time::Duration,
}
