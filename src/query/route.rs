//! Route a query to the server block with the longest matching zone, then
//! through that block's plugins in CoreDNS's order: `hosts`, `file`,
//! `kubernetes`, then `forward` (behind `cache`). A name no plugin takes
//! is REFUSED: we are not a server for it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use hickory_proto::op::Query;
use hickory_proto::rr::{Name, RecordType};

use super::answer::Answer;
use super::cluster::{Cluster, Outcome};
use super::local::{Hosts, Local, ZoneFile};
use super::UNHANDLED;
use crate::config::local::LogConfig;
use crate::metrics::{Plugin, ZoneStats};
use crate::query::forward::Forwarding;

/// The `loop` plugin's state: the random probe name sent to ourselves at
/// start, and how often it came in.
pub struct LoopProbe {
    pub name: Mutex<Option<Name>>,
    seen: AtomicU32,
    pub exit: bool,
}

impl LoopProbe {
    pub fn new(exit: bool) -> LoopProbe {
        LoopProbe {
            name: Mutex::new(None),
            seen: AtomicU32::new(0),
            exit,
        }
    }

    /// Counts `query` if it is the probe; true when it came back (a loop).
    fn looped(&self, query: &Query) -> bool {
        if query.query_type() != RecordType::HINFO {
            return false;
        }
        let ours = self.name.lock().ok().is_some_and(|n| n.as_ref() == Some(query.name()));
        ours && self.seen.fetch_add(1, Ordering::Relaxed) + 1 == 2
    }
}

/// One server block's zones and plugins.
pub struct Block {
    pub zones: Vec<Name>,
    /// The router's stats slot of each zone.
    pub zone_stats: Vec<u16>,
    pub hosts: Option<Hosts>,
    pub files: Vec<ZoneFile>,
    pub cluster: Option<Cluster>,
    pub forwarding: Option<Arc<Forwarding>>,
    pub loop_probe: Option<Arc<LoopProbe>>,
    pub log: Option<LogConfig>,
    pub loadbalance: bool,
}

/// Where a query went.
pub enum Routed<'a> {
    /// `out` holds the answer.
    Done,
    /// Not cached: forward it (and shuffle the answer: `loadbalance`).
    Forward(&'a Arc<Forwarding>, bool),
}

/// The server blocks sharing one listener.
pub struct Router {
    pub blocks: Vec<Block>,
    /// Bumped by each reload, so memoized replies of the old config die.
    pub epoch: u64,
    /// `coredns_dns_*` per zone; slot 0 counts queries no zone matched.
    pub stats: Vec<Arc<ZoneStats>>,
}

impl Router {
    /// Changes whenever any store publishes a snapshot or the config is
    /// reloaded.
    pub fn generation(&self) -> u64 {
        let stores: u64 = self
            .blocks
            .iter()
            .filter_map(|b| b.cluster.as_ref())
            .map(|c| c.store.generation())
            .sum();
        stores.wrapping_add(self.epoch << 40)
    }

    /// Whether any block logs queries (so the clock is read per query
    /// only when a log line needs the duration).
    pub fn logs(&self) -> bool {
        self.blocks.iter().any(|b| b.log.is_some())
    }

    /// The block with the longest zone containing `qname`, and that
    /// zone's stats slot.
    fn block(&self, qname: &Name) -> Option<(&Block, u16)> {
        self.blocks
            .iter()
            .filter_map(|b| {
                b.zones
                    .iter()
                    .zip(&b.zone_stats)
                    .filter(|(z, _)| z.zone_of(qname))
                    .map(|(z, slot)| (z.num_labels(), b, *slot))
                    .max_by_key(|(n, _, _)| *n)
            })
            .max_by_key(|(n, _, _)| *n)
            .map(|(_, b, slot)| (b, slot))
    }

    /// The namespace of the one running pod with `ip`, when a block
    /// watches pods (`pods verified`).
    pub fn client_namespace(&self, ip: std::net::IpAddr) -> Option<Arc<str>> {
        self.blocks
            .iter()
            .filter_map(|b| b.cluster.as_ref())
            .find(|c| c.cfg.pods == crate::config::PodMode::Verified)
            .and_then(|c| c.store.load().pod_namespace(ip))
    }

    /// Answers `query` into `out`, or says it must be forwarded.
    pub fn answer(&self, query: &Query, dnssec_ok: bool, cd: bool, out: &mut Answer) -> Routed<'_> {
        let qname = query.name();
        let Some((block, slot)) = self.block(qname) else {
            out.error(UNHANDLED);
            return Routed::Done;
        };
        out.zone = slot;
        out.log = block
            .log
            .as_ref()
            .filter(|l| l.names.is_empty() || l.names.iter().any(|n| n.zone_of(qname)))
            .map(|l| l.style);
        let routed = self.through(block, query, dnssec_ok, cd, out);
        if block.loadbalance && out.answers.len() > 1 {
            out.shuffle_addresses();
            out.memoizable = false;
        }
        routed
    }

    fn through<'a>(&self, block: &'a Block, query: &Query, dnssec_ok: bool, cd: bool, out: &mut Answer) -> Routed<'a> {
        let (qname, qtype) = (query.name(), query.query_type());
        if let Some(probe) = &block.loop_probe {
            if probe.looped(query) {
                loop_detected(block, probe, qname);
            }
        }
        if let Some(hosts) = &block.hosts {
            if hosts.answer(qname, qtype, out) == Local::Answered {
                out.plugin = Plugin::Hosts;
                return Routed::Done;
            }
        }
        for file in block.files.iter().filter(|f| f.serves(qname)) {
            if file.answer(qname, qtype, out) == Local::Answered {
                out.plugin = Plugin::File;
                return Routed::Done;
            }
        }
        if let Some(cluster) = &block.cluster {
            if let Some(zone) = cluster.zone_for(qname) {
                if cluster.answer(qname, qtype, zone, out) == Outcome::Answered {
                    if out.rcode == hickory_proto::op::ResponseCode::NXDomain {
                        out.expansion = cluster.expansion(qname, zone);
                    }
                    out.plugin = Plugin::Kubernetes;
                    out.memoizable = true;
                    return Routed::Done;
                }
            }
        }
        if let Some(fwd) = block.forwarding.as_ref().filter(|f| f.handles(qname)) {
            out.clear_records();
            if fwd.cached(query, dnssec_ok, cd, out) {
                out.plugin = Plugin::Cache;
                return Routed::Done;
            }
            return Routed::Forward(fwd, block.loadbalance);
        }
        out.error(UNHANDLED);
        out.memoizable = true;
        Routed::Done
    }
}

fn loop_detected(block: &Block, probe: &LoopProbe, qname: &Name) {
    let upstreams = block.forwarding.as_ref().map(|f| f.loop_found()).unwrap_or_default();
    tracing::error!(
        target: "loop",
        "forwarding loop detected: our probe {qname} HINFO came back through {upstreams:?}; \
         no longer forwarding to them (the cluster zone is still served). Fix the upstream: it must not forward to this server"
    );
    if probe.exit {
        tracing::error!(target: "loop", "exiting (loop {{ exit }})");
        std::process::exit(1);
    }
}
