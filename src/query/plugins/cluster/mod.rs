//! The cluster zone, answered from one [`Snapshot`]: a decision table.
//!
//! 1. Not synced yet → SERVFAIL (never NXDOMAIN for a name that may exist),
//!    with the zone's SOA as CoreDNS writes it.
//! 2. A reverse zone → [`reverse`]; otherwise parse the name ([`qname`]).
//! 3. Each name kind finds records, NODATA (the name exists) or NXDOMAIN.
//! 4. Negative answers carry the zone's SOA; NXDOMAIN may fall through to
//!    the next plugin when `fallthrough` covers the name.

mod apex;
mod ctx;
mod declare;
pub mod direct;
mod found;
pub mod labels;
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
use crate::store::{Dep, Deps, Snapshot, Store};
use qname::Qname;

use ctx::{spelled, MAX_CHASE};
pub use ctx::{Cluster, Ctx};
use declare::declare;
pub(crate) use found::exists;
pub use found::{conclude, Found};

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

#[cfg(test)]
mod tests;
