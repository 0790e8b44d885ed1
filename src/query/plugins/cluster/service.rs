//! Service names: `<svc>.<ns>.svc`, `<host>.<svc>.<ns>.svc`,
//! `_<port>._<proto>.<svc>.<ns>.svc` and `_<proto>.<svc>.<ns>.svc`.
//!
//! | service kind | A/AAAA                  | SRV (bare name: every port)                 |
//! |--------------|-------------------------|---------------------------------------------|
//! | ClusterIP    | cluster IPs             | `<port> <svc>.<ns>.svc.<zone>`              |
//! | headless     | ready endpoint IPs      | `<endpoint port> <host>.<svc>.<ns>.svc...`  |
//! | ExternalName | CNAME (+ in-zone chase) | CNAME (+ in-zone chase)                     |

use std::net::IpAddr;

use hickory_proto::rr::{Name, RecordType};

use super::ctx::Ctx;
use super::found::Found;
use crate::query::reply::{self, prefixed};
use crate::store::records::undash;
use crate::store::{Endpoint, Port, Service, ServiceKind};

/// The service if its name has records, with its kind.
fn lookup<'s>(c: &Ctx<'s, '_>, ns: &str, svc: &str) -> Option<(&'s Service, &'s ServiceKind)> {
    find(c.snap, c.cfg, ns, svc)
}

/// [`lookup`] outside a [`Ctx`] (the direct writer's).
pub(super) fn find<'s>(
    snap: &'s crate::store::Snapshot,
    cfg: &crate::kubernetes::KubernetesConfig,
    ns: &str,
    svc: &str,
) -> Option<(&'s Service, &'s ServiceKind)> {
    let service = snap
        .service(ns, svc)
        .filter(|s| s.has_records(cfg.ignore_empty_service))?;
    Some((service, service.kind.as_ref()?))
}

/// `<svc>.<ns>.svc.<zone>`.
pub fn service(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, depth: u8) -> Found {
    let Some((service, kind)) = lookup(c, ns, svc) else {
        return Found::NxDomain;
    };
    match kind {
        ServiceKind::ExternalName(target) => return external_name(c, target, depth),
        _ if c.qtype == RecordType::SRV => return srv_records(c, ns, svc, service, None, None),
        ServiceKind::ClusterIp(ips) => addresses(c, ips.iter().copied()),
        ServiceKind::Headless => addresses(c, service.endpoints().map(|e| e.addr)),
    }
    Found::Records
}

/// `<host>.<svc>.<ns>.svc.<zone>`: the endpoints named `host`.
pub fn endpoint(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, host: &str) -> Found {
    let Some(mut named) = named(c.snap, c.cfg, ns, svc, host).map(Iterator::peekable) else {
        return Found::NxDomain;
    };
    if named.peek().is_none() {
        return Found::NxDomain;
    }
    addresses(c, named);
    Found::Records
}

/// The addresses of the endpoints of `ns/svc` named `host` (`None`: no
/// such Service, or an ExternalName).
pub(super) fn named<'s>(
    snap: &'s crate::store::Snapshot,
    cfg: &crate::kubernetes::KubernetesConfig,
    ns: &str,
    svc: &str,
    host: &'s str,
) -> Option<impl Iterator<Item = IpAddr> + 's> {
    let (service, kind) = find(snap, cfg, ns, svc)?;
    if matches!(kind, ServiceKind::ExternalName(_)) {
        return None;
    }
    let as_ip = undash(host);
    Some(
        service
            .endpoints()
            .filter(move |e| e.named(host, as_ip))
            .map(|e| e.addr),
    )
}

/// `_<port>._<proto>.<svc>.<ns>.svc.<zone>`: SRV of one named port.
pub fn port(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, port: &str, proto: &str) -> Found {
    let Some((service, _)) = lookup(c, ns, svc) else {
        return Found::NxDomain;
    };
    let filter = Some((port, proto));
    let exists = service
        .ports
        .iter()
        .chain(service.slices.iter().flat_map(|s| s.ports.iter()))
        .any(|p| wanted(p, filter));
    if !exists {
        return Found::NxDomain;
    }
    if c.qtype != RecordType::SRV {
        return Found::NoData;
    }
    srv_records(c, ns, svc, service, filter, None)
}

/// `_<proto>.<svc>.<ns>.svc.<zone>`: exists while some named port uses it.
pub fn proto_ent(c: &mut Ctx<'_, '_>, ns: &str, svc: &str, proto: &str) -> Found {
    let Some((service, _)) = lookup(c, ns, svc) else {
        return Found::NxDomain;
    };
    let used = service
        .ports
        .iter()
        .any(|p| !p.name.is_empty() && p.proto.label() == proto);
    if used {
        Found::NoData
    } else {
        Found::NxDomain
    }
}

pub(super) fn addresses(c: &mut Ctx<'_, '_>, addrs: impl Iterator<Item = IpAddr>) {
    let (owner, ttl, qtype) = (&c.owner, c.cfg.ttl, c.qtype);
    for addr in addrs {
        if let Some(record) = reply::address(owner, ttl, addr, qtype) {
            if !c.out.answers.contains(&record) {
                c.out.answers.push(record);
            }
        }
    }
}

/// SRV records for the ports passing `filter` (`(name, proto)`; `None`
/// for every port): service ports of a ClusterIP service, endpoint ports of
/// a headless one, of its endpoints in topology zone `zone` if one is given.
pub(super) fn srv_records(
    c: &mut Ctx<'_, '_>,
    ns: &str,
    svc: &str,
    service: &Service,
    filter: Option<(&str, &str)>,
    zone: Option<&str>,
) -> Found {
    let Some(kind) = &service.kind else {
        return Found::NxDomain;
    };
    let base = prefixed(&c.zone.name, &[svc, ns, "svc"]);
    match srv_targets(kind, service, &base, filter, zone) {
        Some(found) => write_srv(c, found),
        None => Found::NoData,
    }
}

/// Writes SRV records to `targets` (sorted, duplicates dropped) and their
/// glue; NODATA when there is none. Each weighs 100 over the number of
/// targets before duplicates are dropped, as CoreDNS weighs one per
/// address and port (a dual-stack ClusterIP's port: 50; two endpoints
/// sharing a hostname count twice).
pub(super) fn write_srv(c: &mut Ctx<'_, '_>, SrvTargets { mut targets, glue }: SrvTargets) -> Found {
    let weigh = targets.len();
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        return Found::NoData;
    }
    let ttl = c.cfg.ttl;
    let weight = (100 / weigh).max(1) as u16;
    let owner = &c.owner;
    c.out.answers.extend(
        targets
            .into_iter()
            .map(|(port, target)| reply::srv(owner, ttl, weight, port, target)),
    );
    for (name, addr) in glue {
        let record = reply::address(&name, ttl, addr, RecordType::ANY);
        if let Some(g) = record.filter(|g| !c.out.additional.contains(g)) {
            c.out.additional.push(g);
        }
    }
    Found::Records
}

/// The SRV targets of one service and the addresses they need as glue.
pub(super) struct SrvTargets {
    /// (port, target name) pairs, one per address and port (a ClusterIP's
    /// port once per cluster IP): [`write_srv`] weighs them before merging.
    pub targets: Vec<(u16, Name)>,
    pub glue: Vec<(Name, IpAddr)>,
}

impl SrvTargets {
    /// A virtual IP Service's targets (a ClusterIP, a ClusterSetIP
    /// import): its name once per address and port, each address as glue
    /// when there is a port.
    pub fn add_virtual(&mut self, ips: &[IpAddr], ports: &[u16], base: &Name) {
        let before = self.targets.len();
        self.targets
            .extend(ips.iter().flat_map(|_| ports.iter().map(|p| (*p, base.clone()))));
        if self.targets.len() > before {
            self.glue.extend(ips.iter().map(|ip| (base.clone(), *ip)));
        }
    }
}

/// The SRV targets of `service` (named `base`) passing `filter`: the
/// service name for a ClusterIP, each endpoint's name when headless (only
/// those in topology zone `zone`, if given). `None` for an ExternalName,
/// which has no SRV records.
fn srv_targets(
    kind: &ServiceKind,
    service: &Service,
    base: &Name,
    filter: Option<(&str, &str)>,
    zone: Option<&str>,
) -> Option<SrvTargets> {
    let mut out = SrvTargets {
        targets: Vec::new(),
        glue: Vec::new(),
    };
    match kind {
        ServiceKind::ClusterIp(ips) => {
            let ports = service.ports.iter().filter(|p| wanted(p, filter));
            let ports: Vec<u16> = ports.map(|p| p.port).collect();
            out.add_virtual(ips, &ports, base);
        }
        ServiceKind::Headless => {
            for slice in &service.slices {
                let ports: Vec<u16> = slice
                    .ports
                    .iter()
                    .filter(|p| wanted(p, filter))
                    .map(|p| p.port)
                    .collect();
                if ports.is_empty() {
                    continue;
                }
                let zoned = slice.endpoints.iter_zoned();
                for (e, _) in zoned.filter(|(_, z)| zone.is_none() || *z == zone) {
                    let host = endpoint_name(base, &e);
                    out.targets.extend(ports.iter().map(|port| (*port, host.clone())));
                    out.glue.push((host, e.addr));
                }
            }
        }
        ServiceKind::ExternalName(_) => return None,
    }
    Some(out)
}

/// Whether `p` passes `filter`: a named port with that name and protocol,
/// or any port when there is no filter.
pub(super) fn wanted(p: &Port, filter: Option<(&str, &str)>) -> bool {
    filter.is_none_or(|(name, proto)| !p.name.is_empty() && &*p.name == name && p.proto.label() == proto)
}

fn endpoint_name(base: &Name, e: &Endpoint<'_>) -> Name {
    prefixed(base, &[&e.host()])
}

/// CNAME to the target; a target inside this zone is answered too, one
/// outside it is left to the router (`Ctx::chase`, a `Verdict::Chase`).
fn external_name(c: &mut Ctx<'_, '_>, target: &Name, depth: u8) -> Found {
    let record = reply::cname(&c.owner, c.cfg.ttl, target.clone());
    if c.out.answers.contains(&record) {
        return Found::Records; // a loop: the chain is already in the answer
    }
    c.out.answers.push(record);
    if c.qtype == RecordType::CNAME || depth >= super::ctx::MAX_CHASE {
        return Found::Records;
    }
    if c.zone.name.zone_of(target) {
        c.chase(target, depth + 1);
    } else if c.qtype != RecordType::ANY {
        c.chase = Some(target.clone());
    }
    Found::Records
}
