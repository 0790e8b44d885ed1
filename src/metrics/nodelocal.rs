//! The `nodelocal` directive's counters (rendered only when it runs) and
//! the `/health` endpoint's: the node-side and the probe-side view of a
//! node-local cache.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use super::catalogue::{self as c, health_bound, HEALTH_BUCKETS, NODECACHE_ERRORS, RESTORED};
use super::hist::Hist;
use super::render::histogram;

/// The `nodelocal` directive's counters.
#[derive(Default)]
pub struct NodeLocal {
    pub enabled: AtomicBool,
    /// By [`NODECACHE_ERRORS`].
    pub setup_errors: [AtomicU64; 5],
    /// By [`RESTORED`].
    pub restored: [AtomicU64; 3],
    /// Hand-overs to a successor instance (0 or 1 in a process's life).
    pub handovers: AtomicU64,
    /// Queries answered while handing over (the old sockets draining).
    pub drained: AtomicU64,
    /// Other instances on the node at the last look.
    pub peers: AtomicU64,
}

impl NodeLocal {
    pub(super) fn render(&self, s: &mut String) {
        if !self.enabled.load(Relaxed) {
            return;
        }
        let families = [
            (c::NODECACHE_SETUP_ERRORS, &NODECACHE_ERRORS[..], &self.setup_errors[..]),
            (c::NODELOCAL_RESTORED, &RESTORED[..], &self.restored[..]),
        ];
        for (family, names, counters) in families {
            family.by(s, names.iter().zip(counters).map(|(n, c)| (*n, c.load(Relaxed))));
        }
        c::NODELOCAL_HANDOVERS.single(s, self.handovers.load(Relaxed));
        c::NODELOCAL_DRAINED.single(s, self.drained.load(Relaxed));
        c::NODELOCAL_PEERS.single(s, self.peers.load(Relaxed));
    }
}

/// `coredns_health_*`: the time to answer each `/health` request.
#[derive(Default)]
pub struct Health {
    duration: Hist<HEALTH_BUCKETS>,
    pub failures: AtomicU64,
}

impl Health {
    pub fn observe(&self, nanos: u64) {
        let slot = (0..HEALTH_BUCKETS)
            .find(|k| nanos as f64 <= health_bound(*k) * 1e9)
            .unwrap_or(HEALTH_BUCKETS);
        self.duration.add(slot, nanos, false);
    }

    pub(super) fn render(&self, s: &mut String) {
        c::HEALTH_DURATION.head(s);
        let bounds: Vec<f64> = (0..HEALTH_BUCKETS).map(health_bound).collect();
        let (counts, over, sum) = self.duration.load();
        histogram(s, c::HEALTH_DURATION.name, "", &bounds, &counts, over, sum as f64 / 1e9);
        c::HEALTH_FAILURES.single(s, self.failures.load(Relaxed));
    }
}
