//! One server block as the router holds it: its zones and the plugins it
//! enables (`Block`), and the `loop` plugin's probe with what happens when
//! it comes back. The order the plugins run in lives in `route.rs`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use hickory_proto::op::Query;
use hickory_proto::rr::{Name, RecordType};

use crate::query::forward::Forwarding;
use crate::query::log::setup::LogConfig;
use crate::query::plugins::autopath::setup::AutopathConfig;
use crate::query::plugins::chain::Chain;
use crate::query::plugins::cluster::Cluster;
use crate::query::reply::loadbalance::setup::LoadbalanceConfig;

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
    pub(super) fn looped(&self, query: &Query) -> bool {
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
    /// Each zone's lower-cased wire form ([`crate::corefile::args::lower_wire`]).
    pub zone_wires: Vec<Box<[u8]>>,
    /// The router's stats slot of each zone.
    pub zone_stats: Vec<u16>,
    pub cluster: Option<Cluster>,
    pub forwarding: Option<Arc<Forwarding>>,
    pub loop_probe: Option<Arc<LoopProbe>>,
    pub log: Option<LogConfig>,
    /// `loadbalance`: how answers are shuffled and ordered.
    pub loadbalance: Option<Arc<LoadbalanceConfig>>,
    pub autopath: Option<AutopathConfig>,
    /// Whether any directive takes part in answering: without one, REFUSED
    /// instead of SERVFAIL for a name nothing answers.
    pub chain: bool,
    pub rewrite: Option<crate::query::plugins::rewrite::Rewrite>,
    /// `bufsize`: the EDNS payload cap of requests to this block.
    pub bufsize: Option<u16>,
    /// `nsid`: the NSID a request that asks for it gets back.
    pub nsid: Option<Arc<[u8]>>,
    /// `header`: flags set or cleared in queries and responses.
    pub header: Option<Arc<crate::query::reply::header::Rules>>,
    /// `minimal`: successful answers lose their authority and additional records.
    pub minimal: bool,
    /// The answering plugins that live in their own homes, by stage.
    pub plugins: Chain,
    /// `transfer`: AXFR of the cluster zones (served from `tcp.rs`).
    pub transfer: Option<Arc<crate::query::transfer::Transfer>>,
    /// `view`: when the block serves a query ([`super::view`]).
    pub view: Option<Arc<crate::query::route::view::setup::ViewConfig>>,
    /// `metadata`: the labels of the block's queries ([`crate::query::metadata`]).
    pub metadata: Option<Arc<crate::query::metadata::Metadata>>,
}

impl Block {
    /// A block serving `zones` with no plugin yet; set the ones it has.
    pub fn new(zones: Vec<Name>) -> Block {
        Block {
            zone_stats: vec![0; zones.len()],
            zone_wires: zones.iter().map(crate::corefile::args::lower_wire).collect(),
            zones,
            cluster: None,
            forwarding: None,
            loop_probe: None,
            log: None,
            loadbalance: None,
            autopath: None,
            chain: true,
            rewrite: None,
            bufsize: None,
            nsid: None,
            header: None,
            minimal: false,
            plugins: Chain::default(),
            transfer: None,
            view: None,
            metadata: None,
        }
    }
}

impl Block {
    /// The longest of the block's zones holding `name`: its length in wire
    /// bytes and its stats slot.
    pub(super) fn longest(&self, name: &Name) -> Option<(usize, u16)> {
        use crate::query::plugins::guard::Asked;
        (self.zones.iter().zip(&self.zone_wires).zip(&self.zone_stats))
            .filter(|((z, w), _)| name.under(z, w))
            .map(|((_, w), slot)| (w.len(), *slot))
            .max_by_key(|(n, _)| *n)
    }
}

/// Logs a forwarding loop (our probe came back) and, with `loop { exit }`,
/// ends the process.
pub(super) fn loop_detected(block: &Block, probe: &LoopProbe, qname: &Name) {
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

/// The rcode a query outside every plugin gets.
pub const UNHANDLED: hickory_proto::op::ResponseCode = hickory_proto::op::ResponseCode::Refused;
