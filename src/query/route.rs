//! Route a query to the server block with the longest matching zone, then
//! through that block's plugins in CoreDNS's order: `local`, `acl`, `chaos`
//! (class CH), `rewrite` (the question changed here, the answer changed
//! back), `any`, `template`, `hosts`, `k8s_external`, `file`, `kubernetes`,
//! then `forward` (behind `cache`); `dns64` looks at the result of all of
//! them, and `bufsize` rides along in the answer. A CNAME whose target lies
//! outside (an ExternalName Service, a `k8s_external` ingress hostname, a
//! `template` or `rewrite cname` answer) has the target's records looked up
//! and appended. A name no plugin takes is REFUSED: we are not a server for it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use hickory_proto::op::Query;
use hickory_proto::rr::{DNSClass, Name, RecordType};

use super::answer::Answer;
use super::chaos::Chaos;
use super::cluster::{Cluster, Outcome};
use super::local::{Hosts, Local, ZoneFile};
use super::localhost::LocalNames;
use super::template::Templated;
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
    pub dns64: Option<Arc<super::dns64::Dns64>>,
    pub k8s_external: Option<super::k8s_external::K8sExternal>,
    pub templates: Option<super::template::Templates>,
    pub rewrite: Option<super::rewrite::Rewrite>,
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
            dns64: None,
            k8s_external: None,
            templates: None,
            rewrite: None,
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
    /// `autopath` reached the bare name and it must be forwarded (or
    /// `k8s_external` follows an ingress hostname): the answer to `Query`
    /// comes back under a CNAME from the client's name.
    Autopath(&'a Arc<Forwarding>, bool, Query),
    /// An ExternalName's target outside the cluster must be forwarded: its
    /// answer to `Query` comes back after the CNAME records in `out`.
    External(&'a Arc<Forwarding>, bool, Query),
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

    /// What memo entries are checked against: the config epoch, the sum
    /// of the stores' generations (it changes whenever any store
    /// publishes), and the store when there is exactly one (whose change
    /// table then keeps entries a publish did not touch).
    pub fn memo_view(&self) -> super::memo::View<'_> {
        let mut stores = self.blocks.iter().filter_map(|b| b.cluster.as_ref()).map(|c| &*c.store);
        let first = stores.next();
        let mut view = super::memo::View {
            epoch: self.epoch,
            generation: first.map_or(0, |s| s.generation()),
            store: first,
        };
        for other in stores.filter(|s| first.is_some_and(|f| !std::ptr::eq(f, *s))) {
            view.generation = view.generation.wrapping_add(other.generation());
            view.store = None;
        }
        view
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
    pub(crate) fn block(&self, qname: &Name) -> Option<(&Block, u16)> {
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

    /// Whether requests are counted by client namespace: a block watches
    /// pods (`pods verified`).
    pub fn counts_clients(&self) -> bool {
        self.blocks
            .iter()
            .filter_map(|b| b.cluster.as_ref())
            .any(|c| c.cfg.pods == crate::config::PodMode::Verified)
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
        if let Some(chaos) = block.chaos.as_ref().filter(|_| query.query_class() != DNSClass::IN) {
            if chaos.answer(qname, query.query_type(), query.query_class(), out) == Local::Answered {
                out.plugin = Plugin::Chaos;
                return Routed::Done;
            }
        }
        let rewritten = match block.rewrite.as_ref().map(|rw| rw.apply(query)) {
            None | Some(Ok(None)) => None,
            Some(Ok(Some(r))) => Some(r),
            Some(Err(e)) => {
                tracing::debug!(target: "rewrite", "{e}");
                out.error(ResponseCode::ServFail);
                return Routed::Done;
            }
        };
        let query = rewritten.as_ref().map_or(query, |(q, _)| q);
        if query.query_class() != DNSClass::IN {
            out.error(UNHANDLED); // another class than IN (after `rewrite class`) is not ours
            return Routed::Done;
        }
        let routed = match self.autopath(block, query, client, dnssec_ok, cd, out) {
            Some(routed) => routed,
            None => self.through(block, query, client, dnssec_ok, cd, out),
        };
        if let (Some((_, revert)), Routed::Done) = (&rewritten, &routed) {
            if let Some(target) = revert.cname(out) {
                out.outside = Some(target);
            }
        }
        let routed = match (routed, out.outside.take()) {
            (Routed::Done, Some(target)) => self.outside(block, target, query, client, dnssec_ok, cd, out),
            (routed, _) => routed,
        };
        let routed = super::dns64::after(self, block, query, client, (dnssec_ok, cd), routed, out);
        if let Some((q, revert)) = rewritten {
            match routed {
                Routed::Done => revert.answer(out),
                _ => out.rewrite = Some(Box::new((q, revert))),
            }
        }
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
        let asked = self.through(block, query, client, dnssec_ok, cd, out);
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
            match self.through(home, &candidate, client, dnssec_ok, cd, &mut found) {
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
                Routed::Forward(fwd, lb) | Routed::Autopath(fwd, lb, _) | Routed::External(fwd, lb, _) => {
                    return Some(Routed::Autopath(fwd, lb, candidate));
                }
            }
        }
        // Every name of the walk is NXDOMAIN: so is the asked one.
        let routed = self.through(block, query, client, dnssec_ok, cd, out);
        out.memoizable = false;
        Some(routed)
    }

    /// The records of an ExternalName's `target` outside the cluster zone,
    /// looked up through the plugins of the block that serves it (its
    /// `hosts`, `file`, `cache`, or a `forward`, answered later) and put
    /// after the CNAME in `out`. Without any, or when the lookup fails, the
    /// CNAME stays alone.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn outside<'a>(
        &'a self,
        block: &'a Block,
        target: Name,
        query: &Query,
        client: IpAddr,
        dnssec_ok: bool,
        cd: bool,
        out: &mut Answer,
    ) -> Routed<'a> {
        let Some((home, _)) = self.block(&target) else {
            return Routed::Done;
        };
        let chased = Query::query(target, query.query_type());
        let mut found = Answer::default();
        match self.through(home, &chased, client, dnssec_ok, cd, &mut found) {
            Routed::Done if matches!(found.rcode, ResponseCode::NoError | ResponseCode::NXDomain) => {
                out.answers.append(&mut found.answers);
                out.truncated |= found.truncated;
                out.memoizable &= found.memoizable;
                out.deps.union(&found.deps);
                Routed::Done
            }
            Routed::Forward(fwd, _) => Routed::External(fwd, block.loadbalance, chased),
            _ => Routed::Done,
        }
    }

    /// `query` through `block`'s plugins in order (no autopath, no dns64).
    pub(super) fn through<'a>(
        &'a self,
        block: &'a Block,
        query: &Query,
        client: IpAddr,
        dnssec_ok: bool,
        cd: bool,
        out: &mut Answer,
    ) -> Routed<'a> {
        let (qname, qtype) = (query.name(), query.query_type());
        if qtype == RecordType::ANY && block.any {
            out.answers.push(answer::hinfo_rfc8482(qname));
            out.memoizable = true;
            return Routed::Done;
        }
        if let Some(probe) = &block.loop_probe {
            if probe.looped(query) {
                loop_detected(block, probe, qname);
            }
        }
        if let Some(templates) = &block.templates {
            match templates.answer(query, client, out) {
                Templated::Next => {}
                Templated::Answered => {
                    out.plugin = Plugin::Template;
                    return Routed::Done;
                }
                Templated::Chase(target) => {
                    out.plugin = Plugin::Template;
                    out.outside = Some(target);
                    return Routed::Done;
                }
            }
        }
        if let Some(hosts) = &block.hosts {
            if hosts.answer(qname, qtype, out) == Local::Answered {
                out.plugin = Plugin::Hosts;
                return Routed::Done;
            }
        }
        if let (Some(ext), Some(cluster)) = (&block.k8s_external, &block.cluster) {
            if ext.answer(qname, qtype, &cluster.store, out) == Some(Outcome::Answered) {
                (out.plugin, out.memoizable) = (Plugin::K8sExternal, true);
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
                        out.expansion = cluster.expansion(qname, zone, &mut out.deps);
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
