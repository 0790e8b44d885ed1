//! The records that point at hosts, as CoreDNS's `backend_lookup.go`
//! writes them from services: SRV (weights shared out within a
//! priority), MX (services with `mail`), NS (the services under
//! `ns.dns.ZONE`, which must be addresses) and the zone's made-up SOA.
//! A service whose host is an address is named after its key and that
//! address goes in the additional section; a name in the zone has its A
//! records there. (Addresses of names outside the zone are not looked
//! up: CoreDNS asks its upstream for them.)

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::rr::rdata::{A, AAAA, MX, NS, SOA, SRV};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::lookup::{lower, name, within, Lookup, Miss};
use super::service::{domain, Found, HostKind, Service};

/// Records for the answer and for the additional section.
pub type Sections = (Vec<Record>, Vec<Record>);

/// The SOA's TTL and minimum (CoreDNS's etcd `MinTTL`).
const SOA_TTL: u32 = 30;

/// `name A|AAAA ip` with the service's TTL.
fn address(s: &Service, owner: Name, ip: IpAddr) -> Record {
    let data = match ip {
        IpAddr::V4(v4) => RData::A(A(v4)),
        IpAddr::V6(v6) => RData::AAAA(AAAA(v6)),
    };
    Record::from_rdata(owner, s.ttl, data)
}

/// The target named after a service's key (its host being an address),
/// `targetstrip` labels taken off.
fn key_target(f: &Found) -> Option<Name> {
    let s = Service {
        host: domain(&f.key),
        ..f.service.clone()
    };
    name(&s.target())
}

/// SRV's weight of each service: its share (100 without one) of its
/// priority's total, scaled to 100, at least 1.
fn weights(found: &[Found]) -> Vec<u16> {
    let own = |s: &Service| if s.weight == 0 { 100 } else { s.weight };
    let mut total: HashMap<i64, i64> = HashMap::new();
    for f in found {
        *total.entry(f.service.priority).or_default() += own(&f.service);
    }
    found
        .iter()
        .map(|f| {
            let share = 100.0 / total[&f.service.priority] as f64 * own(&f.service) as f64;
            (share.floor() as u16).max(1)
        })
        .collect()
}

impl Lookup<'_> {
    /// The A records of a target in the zone (nothing for one outside).
    fn inside(&self, target: &Name, asked: &mut HashSet<Name>) -> Vec<Record> {
        if !asked.insert(target.clone()) || !within(&lower(target), self.zone) {
            return Vec::new();
        }
        self.follow(target, RecordType::A, &[], &mut None).unwrap_or_default()
    }

    /// SRV records of `owner`, with the targets' addresses.
    pub fn srv(&self, owner: &Name) -> Result<Sections, Miss> {
        let found = self.services(&lower(owner), false, RecordType::SRV)?;
        let (mut records, mut extra) = (Vec::new(), Vec::new());
        let (mut dup, mut asked) = (HashSet::new(), HashSet::new());
        for (f, weight) in found.iter().zip(weights(&found)) {
            let s = &f.service;
            if s.port == -1 {
                continue;
            }
            let srv = |target: Name| SRV::new(s.priority as u16, weight, s.port as u16, target);
            let rr = |target: Name| Record::from_rdata(owner.clone(), s.ttl, RData::SRV(srv(target)));
            match s.kind() {
                HostKind::Name => {
                    let Some(target) = name(&s.target()) else { continue };
                    records.push(rr(target.clone()));
                    extra.extend(self.inside(&target, &mut asked));
                }
                HostKind::Addr(ip) => {
                    let Some(target) = key_target(f) else { continue };
                    if dup.insert((target.clone(), None, s.port as u16)) {
                        records.push(rr(target.clone()));
                    }
                    if dup.insert((target.clone(), Some(ip), 0)) {
                        extra.push(address(s, target, ip));
                    }
                }
                HostKind::Text => {}
            }
        }
        Ok((records, extra))
    }

    /// MX records of `owner` (its services with `mail`), with addresses.
    pub fn mx(&self, owner: &Name) -> Result<Sections, Miss> {
        let found = self.services(&lower(owner), false, RecordType::MX)?;
        let (mut records, mut extra) = (Vec::new(), Vec::new());
        let (mut dup, mut asked) = (HashSet::new(), HashSet::new());
        for f in found.iter().filter(|f| f.service.mail) {
            let s = &f.service;
            let pref = s.priority as u16;
            let rr = |target: Name| Record::from_rdata(owner.clone(), s.ttl, RData::MX(MX::new(pref, target)));
            match s.kind() {
                HostKind::Name => {
                    let Some(target) = name(&s.target()) else { continue };
                    records.push(rr(target.clone()));
                    extra.extend(self.inside(&target, &mut asked));
                }
                HostKind::Addr(ip) => {
                    let Some(target) = key_target(f) else { continue };
                    if dup.insert((target.clone(), None, pref)) {
                        records.push(rr(target.clone()));
                    }
                    let host = name(&domain(&f.key)).unwrap_or(target);
                    if dup.insert((host.clone(), Some(ip), 0)) {
                        extra.push(address(s, host, ip));
                    }
                }
                HostKind::Text => {}
            }
        }
        Ok((records, extra))
    }

    /// The zone's NS records: the services under `ns.dns.ZONE`, named
    /// after their keys, their addresses in the additional section.
    pub fn ns(&self, owner: &Name) -> Result<Sections, Miss> {
        let at = format!("ns.dns.{}", self.zone.trim_start_matches('.'));
        let found = self.services(&at, false, RecordType::NS)?;
        let (mut records, mut extra, mut seen) = (Vec::new(), Vec::new(), HashSet::new());
        for f in &found {
            match f.service.kind() {
                HostKind::Name => {
                    let why = format!("NS record must be an IP address: {}", f.service.host);
                    return Err(Miss::Failed(why));
                }
                HostKind::Addr(ip) => {
                    let Some(target) = key_target(f) else { continue };
                    extra.push(address(&f.service, target.clone(), ip));
                    if seen.insert(target.clone()) {
                        let ns = RData::NS(NS(target));
                        records.push(Record::from_rdata(owner.clone(), f.service.ttl, ns));
                    }
                }
                HostKind::Text => {}
            }
        }
        Ok((records, extra))
    }

    /// The zone's SOA as CoreDNS makes it up: `ns.dns.ZONE
    /// hostmaster.ZONE`, the time as serial, TTL and minimum 30.
    pub fn soa(&self) -> Option<Record> {
        let zone = Name::from_ascii(self.zone).ok()?;
        let mname = Name::from_ascii("ns.dns").ok()?.append_domain(&zone).ok()?;
        let rname = Name::from_ascii("hostmaster").ok()?.append_domain(&zone).ok()?;
        let serial = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        let [refresh, retry, expire] = crate::query::reply::SOA_TIMERS;
        let soa = SOA::new(mname, rname, serial, refresh, retry, expire, SOA_TTL);
        Some(Record::from_rdata(zone, SOA_TTL, RData::SOA(soa)))
    }
}
