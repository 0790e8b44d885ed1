//! The records of one zone in transfer order, read from one snapshot a
//! step at a time, so a transfer of a big zone never holds the whole zone
//! as records.
//!
//! ```text
//! SOA                                        the serial SOA queries answer
//! NS  ns.dns.<zone>  + its A/AAAA            the kube-dns Service's cluster IPs
//! dns-version TXT
//! per Service (namespace, name order)        cluster zone            multicluster zone
//!   <svc>.<ns>.svc        A AAAA SRV | CNAME   cluster IPs, endpoints  ClusterSetIPs, endpoints
//!   _<port>._<proto>.<svc>...  SRV             named ports             named ports
//!   <host>.<svc>...       A AAAA               endpoints               -
//!   <host>.<cluster>.<svc>...  A AAAA          -                       headless endpoints
//! SOA
//! ```
//!
//! Every name is looked up through the `kubernetes` plugin's own lookup
//! ([`Cluster::records`]), so a transferred record is exactly what a
//! query for that name and type answers. Pod names (`pods insecure`
//! answers any address) and reverse zones are not transferred, as in
//! CoreDNS.

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::{Name, Record, RecordType};

use crate::query::plugins::cluster::Cluster;
use crate::query::plugins::zone_source::ports;
use crate::query::reply::{self, prefixed, Answer, Zone};
use crate::store::mcs::ImportKind;
use crate::store::{Endpoint, ServiceId, ServiceKind, Snapshot};

/// Where a walk through the zone is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Head,
    /// The service (or import) at this index of `ids`.
    Service(usize),
    Tail,
    Done,
}

/// A walk through one zone of one snapshot.
pub struct Walk {
    snap: Arc<Snapshot>,
    zone: Zone,
    multicluster: bool,
    ids: Vec<Arc<ServiceId>>,
    step: Step,
    scratch: Answer,
}

impl Walk {
    pub fn new(cluster: &Cluster, snap: Arc<Snapshot>, zone: &Zone) -> Walk {
        let multicluster = cluster.cfg.is_multicluster(&zone.name);
        let ids = if multicluster {
            snap.clusterset.imports().iter().map(|i| i.id.clone()).collect()
        } else {
            snap.services().iter().map(|s| s.id.clone()).collect()
        };
        Walk {
            snap,
            zone: zone.clone(),
            multicluster,
            ids,
            step: Step::Head,
            scratch: Answer::default(),
        }
    }

    /// The serial of the snapshot walked.
    pub fn serial(&self) -> u32 {
        self.snap.serial
    }

    /// The zone's SOA record.
    pub fn soa(&self, cluster: &Cluster) -> Record {
        reply::soa(&self.zone, cluster.cfg.ttl, self.snap.serial)
    }

    /// Appends the records of the next step to `out`; false when the walk
    /// is over (nothing appended).
    pub fn next(&mut self, cluster: &Cluster, out: &mut Vec<Record>) -> bool {
        match self.step {
            Step::Head => {
                out.push(self.soa(cluster));
                let apex = self.zone.name.clone();
                self.ask(cluster, &apex, RecordType::NS, out);
                let ns_host = self.zone.ns_host.clone();
                self.ask(cluster, &ns_host, RecordType::A, out);
                self.ask(cluster, &ns_host, RecordType::AAAA, out);
                self.ask(cluster, &prefixed(&apex, &["dns-version"]), RecordType::TXT, out);
                self.step = Step::Service(0);
            }
            Step::Service(i) => {
                self.step = if i + 1 < self.ids.len() {
                    Step::Service(i + 1)
                } else {
                    Step::Tail
                };
                if let Some(id) = self.ids.get(i).cloned() {
                    for (name, qtype) in self.names(&id) {
                        self.ask(cluster, &name, qtype, out);
                    }
                }
            }
            Step::Tail => {
                out.push(self.soa(cluster));
                self.step = Step::Done;
            }
            Step::Done => return false,
        }
        true
    }

    /// Appends the records the lookup answers for `owner`/`qtype` that are
    /// owned by `owner` (not a chased target's).
    fn ask(&mut self, cluster: &Cluster, owner: &Name, qtype: RecordType, out: &mut Vec<Record>) {
        self.scratch.clear();
        cluster.records(&self.snap, owner, qtype, &self.zone, &mut self.scratch);
        let mine = |r: &&Record| &r.name == owner && r.record_type() == qtype;
        out.extend(self.scratch.answers.iter().filter(mine).cloned());
    }

    /// The names (with the types to ask) of service or import `id`.
    fn names(&self, id: &ServiceId) -> Vec<(Name, RecordType)> {
        let base = prefixed(&self.zone.name, &[&id.name, &id.namespace, "svc"]);
        let mut names = Vec::new();
        if self.multicluster {
            let Some(import) = self.snap.clusterset.import(&id.namespace, &id.name) else {
                return names;
            };
            let own: Vec<IpAddr> = match &import.kind {
                Some(ImportKind::ClusterSetIp(ips)) => ips.to_vec(),
                _ => import.endpoints().map(|(_, e)| e.addr).collect(),
            };
            addresses(&mut names, &base, own.iter().copied());
            names.push((base.clone(), RecordType::SRV));
            let slices = import.slices.iter().flat_map(|s| s.slice.ports.iter());
            ports(&mut names, &base, import.ports.iter().chain(slices));
            if matches!(import.kind, Some(ImportKind::Headless)) {
                let endpoints = import.endpoints().map(|(cluster, e)| (Some(&**cluster), e));
                hosts(&mut names, &base, endpoints);
            }
            return names;
        }
        let Some(service) = self.snap.service(&id.namespace, &id.name) else {
            return names;
        };
        let own: Vec<IpAddr> = match &service.kind {
            Some(ServiceKind::ExternalName(_)) => {
                names.push((base, RecordType::CNAME));
                return names;
            }
            Some(ServiceKind::ClusterIp(ips)) => ips.to_vec(),
            _ => service.endpoints().map(|e| e.addr).collect(),
        };
        addresses(&mut names, &base, own.iter().copied());
        names.push((base.clone(), RecordType::SRV));
        let slices = service.slices.iter().flat_map(|s| s.ports.iter());
        ports(&mut names, &base, service.ports.iter().chain(slices));
        hosts(&mut names, &base, service.endpoints().map(|e| (None, e)));
        names
    }
}

/// `owner` with A and/or AAAA, as the families of `addrs` need.
fn addresses(names: &mut Vec<(Name, RecordType)>, owner: &Name, addrs: impl Iterator<Item = IpAddr>) {
    let (mut v4, mut v6) = (false, false);
    for a in addrs {
        v4 |= a.is_ipv4();
        v6 |= a.is_ipv6();
    }
    names.extend(v4.then(|| (owner.clone(), RecordType::A)));
    names.extend(v6.then(|| (owner.clone(), RecordType::AAAA)));
}

/// `<host>[.<cluster>].<base>` A/AAAA, once per distinct name.
fn hosts<'e>(
    names: &mut Vec<(Name, RecordType)>,
    base: &Name,
    endpoints: impl Iterator<Item = (Option<&'e str>, Endpoint<'e>)>,
) {
    let mut all: Vec<(Option<&str>, String, IpAddr)> =
        endpoints.map(|(c, e)| (c, e.host().into_owned(), e.addr)).collect();
    all.sort_unstable();
    let mut i = 0;
    while i < all.len() {
        let same = all[i..]
            .iter()
            .take_while(|(c, h, _)| (*c, h) == (all[i].0, &all[i].1))
            .count();
        let (cluster, host, _) = &all[i];
        let owner = match cluster {
            Some(c) => prefixed(base, &[host, c]),
            None => prefixed(base, &[host]),
        };
        addresses(names, &owner, all[i..i + same].iter().map(|(_, _, a)| *a));
        i += same;
    }
}
