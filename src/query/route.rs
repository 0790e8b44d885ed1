//! Route a query to the server block with the longest matching zone, then
//! through that block's plugins in CoreDNS's order: `local`, `acl`, `any`,
//! `chaos` (class CH), `hosts`, `file`, `kubernetes`, then `forward`
//! (behind `cache`); `bufsize` rides along in the answer. A name no plugin
//! takes is REFUSED: we are not a server for it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use hickory_proto::op::Query;
use hickory_proto::rr::{DNSClass, Name, RecordType};

use super::answer::Answer;
use super::chaos::Chaos;
use super::cluster::{Cluster, Outcome};
use super::local::{Hosts, Local, ZoneFile};
use super::localhost::LocalNames;
use super::UNHANDLED;
use std::net::IpAddr;

use hickory_proto::op::ResponseCode;

use super::answer;
use super::cluster;
use crate::config::local::{AclAction, AclRule, AutopathConfig, LogConfig};
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
    pub autopath: Option<AutopathConfig>,
    pub acl: Vec<AclRule>,
    /// `any`: every ANY query gets RFC 8482's minimal answer.
    pub any: bool,
    /// `bufsize`: the EDNS payload cap of requests to this block.
    pub bufsize: Option<u16>,
    /// `chaos`: CH TXT questions about the server.
    pub chaos: Option<Chaos>,
    /// `local`: localhost and the loopback reverse zones.
    pub local: Option<LocalNames>,
}

impl Block {
    /// A block serving `zones` with no plugin yet; set the ones it has.
    pub fn new(zones: Vec<Name>) -> Block {
        Block {
            zone_stats: vec![0; zones.len()],
            zones,
            hosts: None,
            files: Vec::new(),
            cluster: None,
            forwarding: None,
            loop_probe: None,
            log: None,
            loadbalance: false,
            autopath: None,
            acl: Vec::new(),
            any: false,
            bufsize: None,
            chaos: None,
            local: None,
        }
    }
}

/// Where a query went.
pub enum Routed<'a> {
    /// `out` holds the answer.
    Done,
    /// `acl` says: no reply at all.
    Drop,
    /// Not cached: forward it (and shuffle the answer: `loadbalance`).
    Forward(&'a Arc<Forwarding>, bool),
    /// `autopath` reached the bare name and it must be forwarded: the
    /// answer to `Query` comes back under a CNAME from the client's name.
    Autopath(&'a Arc<Forwarding>, bool, Query),
}

/// The server blocks sharing one listener.
pub struct Router {
    pub blocks: Vec<Block>,
    /// Bumped by each reload, so memoized replies of the old config die.
    pub epoch: u64,
    /// `coredns_dns_*` per zone; slot 0 counts queries no zone matched.
    pub stats: Vec<Arc<ZoneStats>>,
    /// TCP timeouts and caps of this listener (its first block's).
    pub tcp: crate::config::local::TcpLimits,
    /// Queries being forwarded at once (process-wide); more are dropped.
    pub in_flight: usize,
}

impl Router {
    /// A router over `blocks` with the default TCP limits and in-flight
    /// cap (tests, benchmarks, the fuzzer).
    pub fn new(blocks: Vec<Block>, stats: Vec<Arc<ZoneStats>>) -> Router {
        Router {
            blocks,
            epoch: 0,
            stats,
            tcp: Default::default(),
            in_flight: crate::config::local::IN_FLIGHT,
        }
    }

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

    /// Whether replies may be replayed from the per-worker memo: not when
    /// an `acl` makes the answer depend on the client.
    pub fn memo_allowed(&self) -> bool {
        self.blocks.iter().all(|b| b.acl.is_empty())
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
    pub fn answer(&self, query: &Query, client: IpAddr, dnssec_ok: bool, cd: bool, out: &mut Answer) -> Routed<'_> {
        let qname = query.name();
        let Some((block, slot)) = self.block(qname) else {
            out.error(UNHANDLED);
            return Routed::Done;
        };
        out.zone = slot;
        out.bufsize = block.bufsize;
        out.log = block
            .log
            .as_ref()
            .filter(|l| l.names.is_empty() || l.names.iter().any(|n| n.zone_of(qname)))
            .map(|l| l.style);
        // CoreDNS's order: log, local, acl, any, chaos, ... (plugin.cfg).
        if let Some(local) = &block.local {
            if local.answer(qname, query.query_type(), query.query_class(), out) == Local::Answered {
                out.plugin = Plugin::Local;
                return Routed::Done;
            }
        }
        if let Some(rule) = block.acl.iter().find(|r| r.matches(client, query.query_type())) {
            match rule.action {
                AclAction::Allow => {}
                AclAction::Block => {
                    out.error(ResponseCode::Refused);
                    return Routed::Done;
                }
                AclAction::Filter => {
                    out.error(ResponseCode::NoError);
                    return Routed::Done;
                }
                AclAction::Drop => return Routed::Drop,
            }
        }
        let routed = match self.autopath(block, query, client, dnssec_ok, cd, out) {
            Some(routed) => routed,
            None => self.through(block, query, dnssec_ok, cd, out),
        };
        if block.loadbalance && out.answers.len() > 1 {
            out.shuffle_addresses();
            out.memoizable = false;
        }
        routed
    }

    /// `autopath`: for a client pod in namespace `ns` asking
    /// `<base>.<ns>.svc.<zone>` (the first name of its search walk), walks
    /// the rest of the pod's search path here — `<base>.svc.<zone>`,
    /// `<base>.<zone>`, the extra search domains, then `<base>` itself — and
    /// answers the first name that is not NXDOMAIN under a CNAME from the
    /// asked name, so the walk costs the client one query. `None`: not
    /// applicable (no single Running pod for the client, or another name).
    fn autopath<'a>(
        &'a self,
        block: &'a Block,
        query: &Query,
        client: IpAddr,
        dnssec_ok: bool,
        cd: bool,
        out: &mut Answer,
    ) -> Option<Routed<'a>> {
        let ap = block.autopath.as_ref()?;
        let cluster = block.cluster.as_ref()?;
        let qname = query.name();
        if !ap.zones.is_empty() && !ap.zones.iter().any(|z| z.zone_of(qname)) {
            return None;
        }
        let ns = cluster.store.load().pod_namespace(client)?;
        let zone = cluster
            .zones
            .iter()
            .find(|z| !cluster::reverse::is_reverse(&z.name))?
            .name
            .clone();
        let svc_zone = Name::from_ascii("svc").ok()?.append_domain(&zone).ok()?;
        let first = Name::from_ascii(&*ns).ok()?.append_domain(&svc_zone).ok()?;
        if !first.zone_of(qname) || qname.num_labels() <= first.num_labels() {
            return None;
        }
        // The asked name first: anything but NXDOMAIN is its own answer.
        let asked = self.through(block, query, dnssec_ok, cd, out);
        out.memoizable = false; // depends on the client from here on
        if !matches!(asked, Routed::Done) || out.rcode != ResponseCode::NXDomain {
            return Some(asked);
        }
        let keep = usize::from(qname.num_labels() - first.num_labels());
        let base = Name::from_labels(qname.iter().take(keep)).ok()?;
        let mut candidates = vec![svc_zone, zone];
        candidates.extend(ap.search.iter().cloned());
        candidates.push(Name::root());
        let mut found = Answer::default();
        for domain in candidates {
            let Ok(name) = base.clone().append_domain(&domain) else {
                continue;
            };
            let Some(home) = self.block(&name).map(|(b, _)| b) else {
                continue;
            };
            let candidate = Query::query(name.clone(), query.query_type());
            found.clear();
            match self.through(home, &candidate, dnssec_ok, cd, &mut found) {
                Routed::Drop => continue,
                Routed::Done if found.rcode == ResponseCode::NXDomain => continue,
                Routed::Done => {
                    let (log, zone) = (out.log, out.zone);
                    std::mem::swap(out, &mut found);
                    out.answers
                        .insert(0, answer::cname(qname, cluster.cfg.ttl, name.clone()));
                    (out.log, out.zone, out.plugin, out.memoizable, out.autopath) =
                        (log, zone, Plugin::Autopath, false, true);
                    return Some(Routed::Done);
                }
                Routed::Forward(fwd, lb) | Routed::Autopath(fwd, lb, _) => {
                    return Some(Routed::Autopath(fwd, lb, candidate));
                }
            }
        }
        // Every name of the walk is NXDOMAIN: so is the asked one.
        let routed = self.through(block, query, dnssec_ok, cd, out);
        out.memoizable = false;
        Some(routed)
    }

    fn through<'a>(&self, block: &'a Block, query: &Query, dnssec_ok: bool, cd: bool, out: &mut Answer) -> Routed<'a> {
        let (qname, qtype) = (query.name(), query.query_type());
        if qtype == RecordType::ANY && block.any {
            out.answers.push(answer::hinfo_rfc8482(qname));
            out.memoizable = true;
            return Routed::Done;
        }
        if query.query_class() != DNSClass::IN {
            // Only `chaos` answers another class (CH); the rest is not ours.
            let chaos = block
                .chaos
                .as_ref()
                .map(|c| c.answer(qname, qtype, query.query_class(), out));
            if chaos == Some(Local::Answered) {
                out.plugin = Plugin::Chaos;
            } else {
                out.error(UNHANDLED);
            }
            return Routed::Done;
        }
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
        let forwarded = block.forwarding.as_ref().filter(|f| f.handles(qname));
        if qtype == RecordType::ANY && forwarded.is_some() {
            // RFC 8482: one small record instead of everything (no amplification upstream or here).
            out.clear_records();
            out.answers.push(answer::hinfo_rfc8482(qname));
            return Routed::Done;
        }
        if let Some(fwd) = forwarded {
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
