//! The cluster zone, answered from one [`Snapshot`]: a decision table.
//!
//! 1. Not synced yet → SERVFAIL (never NXDOMAIN for a name that may exist),
//!    with the zone's SOA as CoreDNS writes it.
//! 2. A reverse zone → [`reverse`]; otherwise parse the name ([`qname`]).
//! 3. Each name kind finds records, NODATA (the name exists) or NXDOMAIN.
//! 4. Negative answers carry the zone's SOA; NXDOMAIN may fall through to
//!    the next plugin when `fallthrough` covers the name.

mod apex;
pub mod direct;
mod mcs;
mod pod;
pub mod qname;
pub mod reverse;
mod service;
pub mod zonal;

use std::sync::Arc;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use crate::kubernetes::KubernetesConfig;
use crate::metrics::Expansion;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::{self, Answer, Zone};
use crate::store::records::undash;
use crate::store::{Dep, Deps, Snapshot, Store};
use qname::Qname;

/// How deep an ExternalName chain inside the zone is followed.
const MAX_CHASE: u8 = 8;

/// What a lookup found for one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Records,
    NoData,
    NxDomain,
}

/// How a lookup in a zone of ours ends (the cluster zone and the zones of
/// Services' external addresses alike): records found but none of the type asked is
/// NODATA; an NXDOMAIN under `fallthrough` passes the query on (`out`
/// emptied); otherwise the answer is authoritative, a negative one with
/// nothing but the zone's `soa` in authority, and an outside CNAME target
/// is left to the router to chase.
pub fn conclude(
    found: Found,
    falls_through: bool,
    chase: Option<Name>,
    out: &mut Answer,
    soa: impl FnOnce() -> hickory_proto::rr::Record,
) -> Verdict {
    let found = match found {
        Found::Records if out.answers.is_empty() => Found::NoData,
        f => f,
    };
    if found == Found::NxDomain && falls_through {
        let nsid = out.tags.nsid.take();
        out.clear();
        out.tags.nsid = nsid; // the block's `nsid` still answers
        return Verdict::Next;
    }
    out.authoritative = true;
    if found != Found::Records {
        out.answers.clear();
        out.additional.clear();
        out.rcode = match found {
            Found::NxDomain => ResponseCode::NXDomain,
            _ => ResponseCode::NoError,
        };
        out.authority.push(soa());
    }
    chase.map_or(Verdict::Answered, Verdict::Chase)
}

/// The `kubernetes` plugin's query side: its options, zones and store.
pub struct Cluster {
    pub cfg: Arc<KubernetesConfig>,
    pub store: Arc<Store>,
    pub zones: Vec<Zone>,
    /// Whether its common answers may be written straight from the
    /// snapshot ([`direct`]); tests turn it off to compare the two paths.
    pub direct: bool,
}

/// One lookup: the snapshot, the options, the zone matched, the name whose
/// records are being collected (the query name, or a CNAME target) and the
/// reply being built.
pub struct Ctx<'s, 'o> {
    pub snap: &'s Snapshot,
    pub cfg: &'s KubernetesConfig,
    pub zone: &'s Zone,
    /// Every zone of the plugin (PTR targets use the first forward zone).
    pub zones: &'s [Zone],
    pub owner: Name,
    pub qtype: RecordType,
    pub out: &'o mut Answer,
    /// A CNAME's target outside the zone, for the router to chase.
    pub chase: Option<Name>,
}

impl Cluster {
    pub fn new(cfg: Arc<KubernetesConfig>, store: Arc<Store>) -> Cluster {
        let zones = cfg.zones.iter().cloned().map(Zone::new).collect();
        Cluster {
            cfg,
            store,
            zones,
            direct: true,
        }
    }

    /// The zone of ours that `qname` falls in (the longest), if any.
    pub fn zone_for(&self, qname: &Name) -> Option<&Zone> {
        self.zones
            .iter()
            .filter(|z| z.name.zone_of(qname))
            .max_by_key(|z| z.name.num_labels())
    }

    /// Answers `qname`/`qtype` in `zone` (from [`Cluster::zone_for`]).
    pub fn answer(&self, qname: &Name, qtype: RecordType, zone: &Zone, out: &mut Answer) -> Verdict {
        let snap = self.store.load();
        let (cfg, zones) = (&*self.cfg, &self.zones[..]);
        let spelt = spelled(qname, zone);
        let zone = spelt.as_ref().unwrap_or(zone);
        if !snap.synced {
            // As CoreDNS's BackendError: authoritative, the zone's SOA.
            out.error(ResponseCode::ServFail);
            out.authoritative = true;
            out.authority.push(reply::soa(zone, cfg.ttl, snap.serial));
            return Verdict::Answered;
        }
        out.tags.deps = Deps::NONE; // each lookup below adds what it reads
        let mut c = Ctx {
            snap: &snap,
            cfg,
            zone,
            zones,
            owner: qname.clone(),
            qtype,
            out,
            chase: None,
        };
        let found = if reverse::is_reverse(&zone.name) {
            reverse::answer(&mut c)
        } else {
            c.lookup(0)
        };
        let chase = c.chase.take();
        let falls = cfg.falls_through(qname);
        conclude(found, falls, chase, out, || reply::soa(zone, cfg.ttl, snap.serial))
    }
}

impl Cluster {
    /// The records of `owner`/`qtype` in `zone` as `snap` holds them, into
    /// `out.answers` (and the NS glue into `out.additional`), with no CNAME
    /// target chased: one name of a zone transfer.
    pub fn records(&self, snap: &Snapshot, owner: &Name, qtype: RecordType, zone: &Zone, out: &mut Answer) {
        let mut c = Ctx {
            snap,
            cfg: &self.cfg,
            zone,
            zones: &self.zones,
            owner: owner.clone(),
            qtype,
            out,
            chase: None,
        };
        c.lookup(MAX_CHASE);
    }

    /// For a name answered NXDOMAIN in `zone`: whether it is a search-path
    /// expansion, an outside name with one of the kubelet's search
    /// suffixes appended — `<name>.<ns>.svc.<zone>` where `<name>` has a dot
    /// and cannot name a Service, `<name>.svc.<zone>` where no namespace is
    /// `<name>`'s last label, or `<name>.<zone>` outside `svc` and `pod`
    /// (a short name's walk ends in the last two). What it reads is added
    /// to `deps`.
    pub fn expansion(&self, qname: &Name, zone: &Zone, deps: &mut Deps) -> Option<Expansion> {
        let labels: Vec<String> = qname
            .iter()
            .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
            .collect();
        let n = labels.len().checked_sub(zone.name.num_labels() as usize)?;
        let rel = &labels[..n];
        match rel {
            [] => None,
            [.., last] if last == "pod" => None,
            [only] if only == "svc" => None,
            [.., ns, svc] if svc == "svc" => {
                let snap = self.store.load();
                deps.add(Dep::namespace(ns));
                if snap.namespace(ns).is_none() {
                    return Some(Expansion::Svc);
                }
                let name = &rel[..n - 2];
                let service = name.last()?;
                deps.add(Dep::service(ns, service));
                (name.len() >= 2 && !name[0].starts_with('_') && snap.service(ns, service).is_none())
                    .then_some(Expansion::Namespace)
            }
            _ => Some(Expansion::Zone),
        }
    }
}

impl Ctx<'_, '_> {
    /// Finds the records of `self.owner` (a forward name in the zone).
    fn lookup(&mut self, depth: u8) -> Found {
        let mut buf = [0u8; 255];
        let zone_labels = self.zone.name.num_labels();
        let name = qname::parse(&self.owner, zone_labels, &mut buf);
        if self.cfg.is_multicluster(&self.zone.name) {
            mcs::declare(self.cfg, &name, &mut self.out.tags.deps);
            return mcs::lookup(self, name);
        }
        self.declare(&name);
        match name {
            Qname::Apex => apex::apex(self),
            Qname::DnsVersion => apex::dns_version(self),
            Qname::NsHost => apex::ns_host(self),
            Qname::Ent => Found::NoData,
            Qname::Namespace { ns } => exists(self.snap.namespace(ns).is_some()),
            Qname::Service { ns, svc } => service::service(self, ns, svc, depth),
            Qname::ProtoEnt { ns, svc, proto } => service::proto_ent(self, ns, svc, proto),
            Qname::Endpoint { ns, svc, host } => service::endpoint(self, ns, svc, host),
            Qname::Port { ns, svc, port, proto } => service::port(self, ns, svc, port, proto),
            Qname::PodNamespace { ns } => pod::namespace(self, ns),
            Qname::Pod { ns, ip } => pod::pod(self, ns, ip),
            Qname::Zonal { ns, svc, zone, prefer } => zonal::zonal(self, ns, svc, zone, prefer),
            Qname::ClusterEndpoint { .. } | Qname::Unknown => Found::NxDomain,
        }
    }

    /// Declares what the answer to `name` reads from the snapshot: the
    /// namespace's existence for names under `<ns>.svc` and `<ns>.pod`, the
    /// one Service a service name turns on, the kube-dns Service for the
    /// name server's host, everything for the apex (its SOA serial and NS
    /// glue). The SOA of negative answers is patched by the memo.
    fn declare(&mut self, name: &Qname<'_>) {
        declare(self.cfg, name, &mut self.out.tags.deps);
    }

    /// Follows a CNAME to `target` inside the zone, appending its records.
    /// A missing target leaves the CNAME alone (the client sees the chain).
    fn chase(&mut self, target: &Name, depth: u8) {
        let saved = std::mem::replace(&mut self.owner, target.clone());
        let kept = self.out.answers.len();
        if self.lookup(depth) != Found::Records {
            self.out.answers.truncate(kept);
        }
        self.owner = saved;
    }
}

/// What the answer to `name` reads from the snapshot ([`Ctx::declare`]).
fn declare(cfg: &KubernetesConfig, name: &Qname<'_>, deps: &mut Deps) {
    match *name {
        Qname::Apex => *deps = Deps::EVERYTHING,
        Qname::NsHost => deps.add(Dep::service(apex::DNS_SERVICE.0, apex::DNS_SERVICE.1)),
        Qname::DnsVersion | Qname::Ent | Qname::Unknown => {}
        Qname::ClusterEndpoint { .. } => {} // NXDOMAIN outside multicluster zones
        Qname::Namespace { ns } | Qname::PodNamespace { ns } => deps.add(Dep::namespace(ns)),
        Qname::Service { ns, svc }
        | Qname::ProtoEnt { ns, svc, .. }
        | Qname::Endpoint { ns, svc, .. }
        | Qname::Port { ns, svc, .. }
        | Qname::Zonal { ns, svc, .. } => {
            deps.add(Dep::namespace(ns));
            deps.add(Dep::service(ns, svc));
        }
        Qname::Pod { ns, ip } => match (cfg.pods, undash(ip)) {
            (crate::kubernetes::PodMode::Verified, Some(addr)) => deps.add(Dep::pod(ns, addr)),
            _ => deps.add(Dep::namespace(ns)),
        },
    }
}

/// `zone` as `qname` spells it, when that is not as configured: the names
/// a reply builds in the zone (SOA, NS host, SRV targets and their glue)
/// follow the question's case, as CoreDNS writes them
/// (`handler_case_test.go`). `None` when spelt as configured.
pub(crate) fn spelled(qname: &Name, zone: &Zone) -> Option<Zone> {
    let labels = zone.name.num_labels();
    let skip = qname.num_labels().checked_sub(labels)?;
    if qname.iter().skip(usize::from(skip)).eq(zone.name.iter()) {
        return None;
    }
    Some(Zone::new(qname.trim_to(usize::from(labels))))
}

/// NODATA for a name that exists, NXDOMAIN otherwise.
pub(crate) fn exists(yes: bool) -> Found {
    if yes {
        Found::NoData
    } else {
        Found::NxDomain
    }
}

#[cfg(test)]
mod tests;
