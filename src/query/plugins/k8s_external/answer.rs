//! The decision table of the plugin's head (`k8s_external.rs`), on one
//! snapshot of the cluster store ([`K8sExternal::answer`]).

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use super::setup::K8sExternalConfig;
use crate::query::plugins::cluster::{conclude, exists, reverse, Found};
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::{self, prefixed, Answer, Zone};
use crate::store::records::undash;
use crate::store::{Service, ServiceKind, Snapshot, Store};

/// The Service whose addresses are the zone's name server.
const DNS_SERVICE: (&str, &str) = ("kube-system", "kube-dns");

/// One zone: its SOA names and where its name server lives.
struct ExternalZone {
    /// `ns1.<apex>.<zone>` and `hostmaster.<apex>.<zone>`.
    soa: Zone,
    /// `<apex>.<zone>`.
    apex: Name,
    reverse: bool,
}

/// The plugin's query side.
pub struct K8sExternal {
    pub cfg: Arc<K8sExternalConfig>,
    zones: Vec<ExternalZone>,
}

impl K8sExternal {
    pub fn new(cfg: Arc<K8sExternalConfig>) -> K8sExternal {
        let zones = cfg
            .zones
            .iter()
            .map(|z| {
                let apex = cfg.apex.clone().append_domain(z).unwrap_or_else(|_| z.clone());
                ExternalZone {
                    soa: Zone {
                        name: z.clone(),
                        ns_host: prefixed(&apex, &["ns1"]),
                        hostmaster: prefixed(&apex, &["hostmaster"]),
                    },
                    apex,
                    reverse: reverse::is_reverse(z),
                }
            })
            .collect();
        K8sExternal { cfg, zones }
    }

    /// Answers `qname` if it is in one of the plugin's zones (`Next`: not
    /// ours, or `fallthrough`).
    pub fn answer(&self, qname: &Name, qtype: RecordType, store: &Store, out: &mut Answer) -> Verdict {
        let zone = self
            .zones
            .iter()
            .filter(|z| z.soa.name.zone_of(qname))
            .max_by_key(|z| z.soa.name.num_labels());
        let Some(zone) = zone else {
            return Verdict::Next; // not one of our zones
        };
        let snap = store.load();
        if !snap.synced {
            out.error(ResponseCode::ServFail);
            return Verdict::Answered;
        }
        let mut lookup = Lookup {
            snap: &snap,
            ttl: self.cfg.ttl,
            headless: self.cfg.headless,
            zones: &self.zones,
            zone,
            qname,
            qtype,
            out,
            chase: None,
        };
        let found = if qname.num_labels() == zone.soa.name.num_labels() {
            lookup.apex()
        } else if zone.apex.zone_of(qname) {
            lookup.ns_host()
        } else if zone.reverse {
            lookup.reverse()
        } else {
            lookup.service()
        };
        let chase = lookup.chase.take();
        let falls = self.cfg.falls_through(qname);
        conclude(found, falls, chase, out, || {
            reply::soa(&zone.soa, self.cfg.ttl, snap.serial)
        })
    }
}

/// One address a name answers: an IP or an ingress hostname, with the
/// port it serves (`None`: the Service has no port) and, for a headless
/// endpoint, its host label.
struct Entry<'s> {
    addr: Addr<'s>,
    port: Option<u16>,
    host: Option<Cow<'s, str>>,
}

#[derive(Clone, Copy)]
enum Addr<'s> {
    Ip(IpAddr),
    Host(&'s Name),
}

/// One lookup's state.
struct Lookup<'a, 'o> {
    snap: &'a Snapshot,
    ttl: u32,
    headless: bool,
    zones: &'a [ExternalZone],
    zone: &'a ExternalZone,
    qname: &'a Name,
    qtype: RecordType,
    out: &'o mut Answer,
    /// An ingress hostname to chase, like an ExternalName's outside target.
    chase: Option<Name>,
}

impl Lookup<'_, '_> {
    fn apex(&mut self) -> Found {
        let zone = &self.zone.soa;
        match self.qtype {
            RecordType::SOA => self.out.answers.push(reply::soa(zone, self.ttl, self.snap.serial)),
            RecordType::NS => {
                self.out
                    .answers
                    .push(reply::ns(&zone.name, self.ttl, zone.ns_host.clone()));
                for ip in ns_addresses(self.snap) {
                    let glue = reply::address(&zone.ns_host, self.ttl, ip, RecordType::ANY);
                    self.out.additional.extend(glue);
                }
            }
            _ => return Found::NoData,
        }
        Found::Records
    }

    /// Names under `<apex>.<zone>`: only `ns1` exists below it.
    fn ns_host(&mut self) -> Found {
        if self.qname.num_labels() == self.zone.apex.num_labels() {
            return Found::NoData;
        }
        if *self.qname != self.zone.soa.ns_host {
            return Found::NxDomain;
        }
        for ip in ns_addresses(self.snap) {
            self.out
                .answers
                .extend(reply::address(self.qname, self.ttl, ip, self.qtype));
        }
        Found::Records
    }

    /// A full reverse name: the Services with that external IP.
    fn reverse(&mut self) -> Found {
        let Some(ip) = reverse::parse(self.qname) else {
            return Found::NxDomain;
        };
        let snap = self.snap;
        let has_ip = |s: &Service| s.external.as_ref().is_some_and(|e| e.ips.contains(&ip));
        let live = |id: &&Arc<crate::store::ServiceId>| snap.service(&id.namespace, &id.name).is_some_and(has_ip);
        let ids: Vec<_> = snap.external_reverse(ip).filter(live).collect();
        if ids.is_empty() {
            return Found::NxDomain;
        }
        let Some(forward) = self.zones.iter().find(|z| !z.reverse) else {
            return Found::NoData;
        };
        if self.qtype == RecordType::PTR {
            for id in ids {
                let target = prefixed(&forward.soa.name, &[&id.name, &id.namespace]);
                self.out.answers.push(reply::ptr(self.qname, self.ttl, target));
            }
        }
        Found::Records
    }

    /// `[host.]<svc>.<ns>` and `_<port>._<proto>.<svc>.<ns>` (and `<ns>`).
    fn service(&mut self) -> Found {
        let n = usize::from(self.qname.num_labels() - self.zone.soa.name.num_labels());
        let labels: Vec<String> = self
            .qname
            .iter()
            .take(n)
            .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
            .collect();
        let strip = |l: &str| l.strip_prefix('_').unwrap_or(l).to_string();
        let (endpoint, port, ns, svc) = match labels.as_slice() {
            [ns] => return exists(self.snap.namespace(ns).is_some()),
            [svc, ns] => (None, None, ns, svc),
            [host, svc, ns] => (Some(host.as_str()), None, ns, svc),
            [port, proto, svc, ns] => (None, Some((strip(port), strip(proto))), ns, svc),
            _ => return Found::NxDomain,
        };
        let Some(service) = self.snap.service(ns, svc) else {
            return Found::NxDomain;
        };
        let filter = port.as_ref().map(|(p, t)| (p.as_str(), t.as_str()));
        let entries = self.entries(service, endpoint, filter);
        if entries.is_empty() {
            return Found::NxDomain;
        }
        let base = prefixed(&self.zone.soa.name, &[svc, ns]);
        match self.qtype {
            RecordType::A | RecordType::AAAA => self.addresses(&entries),
            RecordType::SRV => self.srv(&entries, &base),
            _ => return Found::NoData,
        }
        Found::Records
    }

    /// What the service's name answers: its endpoints (a headless Service
    /// with `headless` and no external address), else its external
    /// addresses, each once per port passing `filter`.
    fn entries<'s>(
        &self,
        service: &'s Service,
        endpoint: Option<&str>,
        filter: Option<(&str, &str)>,
    ) -> Vec<Entry<'s>> {
        let mut entries = Vec::new();
        let headless = matches!(service.kind, Some(ServiceKind::Headless));
        if self.headless && service.external.is_none() && (headless || endpoint.is_some()) {
            let as_ip = endpoint.and_then(undash);
            for slice in service.slices.iter() {
                let ports = ports(slice.ports.iter().map(|p| (&*p.name, p.proto.label(), p.port)), filter);
                for e in slice
                    .endpoints
                    .iter()
                    .filter(|e| endpoint.is_none_or(|h| e.named(h, as_ip)))
                {
                    entries.extend(ports.iter().map(|port| Entry {
                        addr: Addr::Ip(e.addr),
                        port: *port,
                        host: Some(e.host()),
                    }));
                }
            }
            return entries;
        }
        let (Some(external), None) = (&service.external, endpoint) else {
            return entries;
        };
        let ports = ports(
            service.ports.iter().map(|p| (&*p.name, p.proto.label(), p.port)),
            filter,
        );
        let addrs = external.ips.iter().map(|ip| Addr::Ip(*ip));
        for addr in addrs.chain(external.hostnames.iter().map(Addr::Host)) {
            entries.extend(ports.iter().map(|port| Entry {
                addr,
                port: *port,
                host: None,
            }));
        }
        entries
    }

    fn addresses(&mut self, entries: &[Entry<'_>]) {
        let mut has_ip = false;
        for e in entries {
            if let Addr::Ip(ip) = e.addr {
                has_ip = true;
                let record = reply::address(self.qname, self.ttl, ip, self.qtype);
                if let Some(r) = record.filter(|r| !self.out.answers.contains(r)) {
                    self.out.answers.push(r);
                }
            }
        }
        let host = entries.iter().find_map(|e| match e.addr {
            Addr::Host(h) => Some(h),
            Addr::Ip(_) => None,
        });
        if let (false, Some(host)) = (has_ip, host) {
            self.out.answers.push(reply::cname(self.qname, self.ttl, host.clone()));
            // Followed like an ExternalName's outside target: the router
            // looks it up and puts its records after the CNAME.
            if matches!(self.qtype, RecordType::A | RecordType::AAAA) {
                self.chase = Some(host.clone());
            }
        }
    }

    fn srv(&mut self, entries: &[Entry<'_>], base: &Name) {
        let mut targets: Vec<(u16, Name)> = Vec::new();
        let mut glue: Vec<(Name, IpAddr)> = Vec::new();
        for e in entries {
            let Some(port) = e.port else { continue };
            let target = match (e.addr, &e.host) {
                (Addr::Host(h), _) => h.clone(),
                (Addr::Ip(_), Some(host)) => prefixed(base, &[host]),
                (Addr::Ip(_), None) => base.clone(),
            };
            if let Addr::Ip(ip) = e.addr {
                glue.push((target.clone(), ip));
            }
            targets.push((port, target));
        }
        targets.sort();
        targets.dedup();
        let weight = (100 / targets.len().max(1)).max(1) as u16;
        for (port, target) in targets {
            self.out
                .answers
                .push(reply::srv(self.qname, self.ttl, weight, port, target));
        }
        for (name, ip) in glue {
            let record = reply::address(&name, self.ttl, ip, RecordType::ANY);
            if let Some(g) = record.filter(|g| !self.out.additional.contains(g)) {
                self.out.additional.push(g);
            }
        }
    }
}

/// The ports passing `filter` (`(name, protocol)`, named ports only);
/// a Service or slice without ports answers once, with no port, when
/// there is no filter.
fn ports<'p>(
    all: impl Iterator<Item = (&'p str, &'static str, u16)>,
    filter: Option<(&str, &str)>,
) -> Vec<Option<u16>> {
    let all: Vec<_> = all.collect();
    if all.is_empty() {
        return if filter.is_none() { vec![None] } else { Vec::new() };
    }
    all.into_iter()
        .filter(|(name, proto, _)| filter.is_none_or(|(n, p)| !name.is_empty() && *name == n && *proto == p))
        .map(|(_, _, port)| Some(port))
        .collect()
}

/// The name server's addresses: the DNS Service's external IPs, else its
/// cluster IPs.
fn ns_addresses(snap: &Snapshot) -> Vec<IpAddr> {
    let Some(service) = snap.service(DNS_SERVICE.0, DNS_SERVICE.1) else {
        return Vec::new();
    };
    match (&service.external, &service.kind) {
        (Some(e), _) if !e.ips.is_empty() => e.ips.to_vec(),
        (_, Some(ServiceKind::ClusterIp(ips))) => ips.to_vec(),
        _ => Vec::new(),
    }
}
