//! `multicluster` zones (`clusterset.local`): the KEP-1645 DNS
//! specification (schema 1.0.0), answered from the snapshot's imports.
//!
//! | name                                   | ClusterSetIP import        | headless import                          |
//! |----------------------------------------|----------------------------|------------------------------------------|
//! | `<svc>.<ns>.svc`  A/AAAA               | its `spec.ips`             | every ready endpoint of every cluster    |
//! | `<svc>.<ns>.svc`  SRV                  | `<port> <svc>.<ns>.svc`    | `<port> <host>.<cluster>.<svc>.<ns>.svc` |
//! | `_<port>._<proto>.<svc>.<ns>.svc` SRV  | the same, one named port   | the same, one named port                 |
//! | `<cluster>.<svc>.<ns>.svc`             | NXDOMAIN (must not exist)  | NODATA while the cluster has endpoints   |
//! | `<host>.<cluster>.<svc>.<ns>.svc`      | NXDOMAIN (must not exist)  | A/AAAA of that cluster's endpoint        |
//! | `dns-version`  TXT                     | "1.0.0"                    |                                          |
//!
//! A headless import without a ready endpoint is NXDOMAIN (spec 2.4.1);
//! `<ns>.svc` is NODATA while the namespace exists here or holds an
//! import. Pod names and the apex are the cluster zone's. PTR records of
//! ClusterSetIPs and endpoints ([`reverse`]) are written for addresses
//! the cluster itself does not name (CoreDNS writes none).

use std::net::IpAddr;

use hickory_proto::rr::{Name, RecordType};

use super::ctx::Ctx;
use super::found::{exists, Found};
use super::qname::Qname;
use super::service::{addresses, wanted, write_srv, SrvTargets};
use super::{apex, pod};
use crate::query::reply::{self, prefixed};
use crate::store::mcs::{Import, ImportKind, McsHost};
use crate::store::records::undash;
use crate::store::{Dep, Deps, Snapshot};

/// The schema version of the MCS DNS specification (KEP-1645): CoreDNS
/// answers "1.1.0", the cluster zone's; the specification says "1.0.0".
pub const MCS_SCHEMA_VERSION: &str = "1.0.0";

/// What the answer to `name` reads from the snapshot.
pub(super) fn declare(cfg: &crate::kubernetes::KubernetesConfig, name: &Qname<'_>, deps: &mut Deps) {
    match *name {
        Qname::Service { ns, svc }
        | Qname::ProtoEnt { ns, svc, .. }
        | Qname::Endpoint { ns, svc, .. }
        | Qname::Port { ns, svc, .. }
        | Qname::ClusterEndpoint { ns, svc, .. } => deps.add(Dep::import(ns, svc)),
        Qname::Namespace { ns } => {
            deps.add(Dep::namespace(ns));
            deps.add(Dep::import_namespace(ns));
        }
        _ => super::declare::declare(cfg, name, deps), // the cluster zone's names
    }
}

/// Finds the records of `c.owner` in a multicluster zone.
pub(super) fn lookup(c: &mut Ctx<'_, '_>, name: Qname<'_>) -> Found {
    match name {
        Qname::Apex => apex::apex(c),
        Qname::DnsVersion => dns_version(c),
        Qname::NsHost => apex::ns_host(c),
        Qname::Ent => Found::NoData,
        Qname::Namespace { ns } => {
            exists(c.snap.namespace(ns).is_some() || (c.snap.exposed(ns) && c.snap.clusterset.has_namespace(ns)))
        }
        Qname::Service { ns, svc } => service(c, ns, svc),
        Qname::ProtoEnt { ns, svc, proto } => proto_ent(c, ns, svc, proto),
        Qname::Endpoint { ns, svc, host } => cluster_ent(c, ns, svc, host),
        Qname::Port { ns, svc, port, proto } => named_port(c, ns, svc, port, proto),
        Qname::ClusterEndpoint { ns, svc, cluster, host } => endpoint(c, ns, svc, cluster, host),
        Qname::PodNamespace { ns } => pod::namespace(c, ns),
        Qname::Pod { ns, ip } => pod::pod(c, ns, ip),
        Qname::Zonal { .. } | Qname::Unknown => Found::NxDomain, // zonal names are not defined here
    }
}

fn dns_version(c: &mut Ctx<'_, '_>) -> Found {
    if c.qtype != RecordType::TXT {
        return Found::NoData;
    }
    let owner = &c.owner;
    c.out
        .answers
        .push(reply::txt(owner, apex::DNS_VERSION_TTL, MCS_SCHEMA_VERSION));
    Found::Records
}

/// The import of `ns/svc` if its name has records.
fn find<'s>(c: &Ctx<'s, '_>, ns: &str, svc: &str) -> Option<(&'s Import, &'s ImportKind)> {
    let import = c.snap.clusterset.import(ns, svc).filter(|_| c.snap.exposed(ns))?;
    let import = Some(import).filter(|i| i.has_records(c.cfg.ignore_empty_service))?;
    Some((import, import.kind.as_ref()?))
}

fn service(c: &mut Ctx<'_, '_>, ns: &str, svc: &str) -> Found {
    let Some((import, kind)) = find(c, ns, svc) else {
        return Found::NxDomain;
    };
    match kind {
        _ if c.qtype == RecordType::SRV => return srv(c, ns, svc, import, None),
        ImportKind::ClusterSetIp(ips) => addresses(c, ips.iter().copied()),
        ImportKind::Headless => addresses(c, import.endpoints().map(|(_, e)| e.addr)),
    }
    Found::Records
}

/// The ports of the import and of its slices.
fn ports(import: &Import) -> impl Iterator<Item = &crate::store::Port> {
    let slices = import.slices.iter().flat_map(|s| s.slice.ports.iter());
    import.ports.iter().chain(slices)
}

fn proto_ent(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, proto: &str) -> Found {
    let Some((import, _)) = find(c, ns, svc) else {
        return Found::NxDomain;
    };
    exists(ports(import).any(|p| !p.name.is_empty() && p.proto.label() == proto))
}

fn named_port(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, port: &str, proto: &str) -> Found {
    let Some((import, _)) = find(c, ns, svc) else {
        return Found::NxDomain;
    };
    let filter = Some((port, proto));
    if !ports(import).any(|p| wanted(p, filter)) {
        return Found::NxDomain;
    }
    if c.qtype != RecordType::SRV {
        return Found::NoData;
    }
    srv(c, ns, svc, import, filter)
}

/// `<cluster>.<svc>.<ns>.svc`: an empty non-terminal of a headless import
/// while that cluster has a ready endpoint.
fn cluster_ent(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, cluster: &str) -> Found {
    let Some((import, ImportKind::Headless)) = find(c, ns, svc) else {
        return Found::NxDomain;
    };
    exists(import.endpoints().any(|(id, _)| &**id == cluster))
}

/// `<host>.<cluster>.<svc>.<ns>.svc`: the endpoints of a headless import
/// in `cluster` named `host`.
fn endpoint(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, cluster: &str, host: &str) -> Found {
    let Some((import, ImportKind::Headless)) = find(c, ns, svc) else {
        return Found::NxDomain;
    };
    let as_ip = undash(host);
    let mut named = import
        .endpoints()
        .filter(|(id, e)| &***id == cluster && e.named(host, as_ip))
        .map(|(_, e)| e.addr)
        .peekable();
    if named.peek().is_none() {
        return Found::NxDomain;
    }
    addresses(c, named);
    Found::Records
}

/// SRV records of the ports passing `filter`: the service name for a
/// ClusterSetIP import, every endpoint of every cluster when headless.
fn srv(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, import: &Import, filter: Option<(&str, &str)>) -> Found {
    let base = prefixed(&c.zone.name, &[svc, ns, "svc"]);
    let mut found = SrvTargets {
        targets: Vec::new(),
        glue: Vec::new(),
    };
    match &import.kind {
        Some(ImportKind::ClusterSetIp(ips)) => {
            let ports: Vec<u16> = import
                .ports
                .iter()
                .filter(|p| wanted(p, filter))
                .map(|p| p.port)
                .collect();
            found.add_virtual(ips, &ports, &base);
        }
        Some(ImportKind::Headless) => {
            for s in &import.slices {
                let ports: Vec<u16> = s
                    .slice
                    .ports
                    .iter()
                    .filter(|p| wanted(p, filter))
                    .map(|p| p.port)
                    .collect();
                for e in s.slice.endpoints.iter().filter(|_| !ports.is_empty()) {
                    let host = prefixed(&base, &[&e.host(), &s.cluster]);
                    found.targets.extend(ports.iter().map(|port| (*port, host.clone())));
                    found.glue.push((host, e.addr));
                }
            }
        }
        None => return Found::NxDomain,
    }
    write_srv(c, found)
}

/// PTR records of `addr` (in a reverse zone) naming imports, in the
/// first multicluster zone; NXDOMAIN when none has it.
pub(super) fn reverse(c: &mut Ctx<'_, '_>, addr: IpAddr) -> Found {
    let Some(zone) = c.cfg.multicluster.first() else {
        return Found::NxDomain;
    };
    let targets = ptr_targets(c.snap, zone, addr);
    if targets.is_empty() {
        return Found::NxDomain;
    }
    if c.qtype != RecordType::PTR {
        return Found::NoData;
    }
    for target in targets {
        let record = reply::ptr(&c.owner, c.cfg.ttl, target);
        if !c.out.answers.contains(&record) {
            c.out.answers.push(record);
        }
    }
    Found::Records
}

/// The PTR targets of `addr` in the multicluster `zone`: its import's name
/// for a ClusterSetIP, `<host>.<cluster>.<svc>.<ns>.svc` for an endpoint.
fn ptr_targets(snap: &Snapshot, zone: &Name, addr: IpAddr) -> Vec<Name> {
    let targets = snap.clusterset.reverse(addr).into_iter();
    targets
        .filter(|(id, _)| snap.exposed(&id.namespace))
        .map(|(id, host)| {
            let base = prefixed(zone, &[&id.name, &id.namespace, "svc"]);
            match host {
                McsHost::Service => base,
                McsHost::Endpoint { host, cluster } => prefixed(&base, &[&host, &cluster]),
            }
        })
        .collect()
}
