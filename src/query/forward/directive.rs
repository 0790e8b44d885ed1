//! One `forward` directive: its upstreams, the names it takes, and the
//! order its policy tries them in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::Name;

use super::setup::{ForwardConfig, Policy};
use super::upstream::Upstream;

/// One `forward` directive.
pub struct Forward {
    pub cfg: ForwardConfig,
    pub upstreams: Vec<Arc<Upstream>>,
    next_rr: AtomicUsize,
    pub(super) inflight: AtomicUsize,
}

impl Forward {
    pub fn new(cfg: ForwardConfig) -> Forward {
        Forward {
            upstreams: cfg.to.iter().map(|t| Arc::new(Upstream::to(t, &cfg.tls))).collect(),
            cfg,
            next_rr: AtomicUsize::new(0),
            inflight: AtomicUsize::new(0),
        }
    }

    /// Whether this directive forwards `qname`.
    pub fn handles(&self, qname: &Name) -> bool {
        self.cfg.from.zone_of(qname) && !self.cfg.except.iter().any(|z| z.zone_of(qname))
    }

    /// Whether `m` goes on to the next `forward` (`next RCODE`, or
    /// `next_on_nodata` for NOERROR without answer records).
    pub(super) fn passes_on(&self, m: &Message) -> bool {
        let rcode = m.metadata.response_code;
        self.cfg.next.contains(&rcode)
            || (self.cfg.next_on_nodata && rcode == ResponseCode::NoError && m.answers.is_empty())
            || (rcode == ResponseCode::NXDomain && m.queries.first().is_some_and(|q| self.falls_through(q.name())))
    }

    /// `grpc { fallthrough [ZONES] }` takes `qname`: its NXDOMAIN, or no
    /// answer at all, goes on to what follows.
    pub(super) fn falls_through(&self, qname: &Name) -> bool {
        let zones = self.cfg.grpc.as_ref().and_then(|g| g.fallthrough.as_ref());
        zones.is_some_and(|z| z.is_empty() || z.iter().any(|z| z.zone_of(qname)))
    }

    /// Upstream indexes in the order the policy tries them.
    pub(super) fn order(&self) -> Vec<usize> {
        let n = self.upstreams.len();
        let mut order: Vec<usize> = (0..n).collect();
        match self.cfg.policy {
            Policy::Sequential => {}
            // As CoreDNS: the counter is bumped first, its upstream leads,
            // the others follow in Corefile order.
            Policy::RoundRobin if n > 0 => {
                let first = (self.next_rr.fetch_add(1, Ordering::Relaxed) + 1) % n;
                order.remove(first);
                order.insert(0, first);
            }
            Policy::RoundRobin => {}
            Policy::Random => fastrand::shuffle(&mut order),
        }
        order
    }
}
