//! The records the query path builds, and the zones it answers for with
//! their prebuilt SOA names.

use std::net::IpAddr;

use hickory_proto::rr::rdata::{A, AAAA, CNAME, NS, PTR, SOA, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// The record of `addr` at `owner`, if its family matches `qtype`
/// (`ANY` matches both).
pub fn address(owner: &Name, ttl: u32, addr: IpAddr, qtype: RecordType) -> Option<Record> {
    match (addr, qtype) {
        (IpAddr::V4(v4), RecordType::A | RecordType::ANY) => {
            Some(Record::from_rdata(owner.clone(), ttl, RData::A(A(v4))))
        }
        (IpAddr::V6(v6), RecordType::AAAA | RecordType::ANY) => {
            Some(Record::from_rdata(owner.clone(), ttl, RData::AAAA(AAAA(v6))))
        }
        _ => None,
    }
}

/// The minimal answer to an ANY question (RFC 8482): one HINFO record, CoreDNS's.
pub fn hinfo_rfc8482(owner: &Name) -> Record {
    let hinfo = hickory_proto::rr::rdata::HINFO::new("ANY obsoleted".to_string(), "See RFC 8482".to_string());
    Record::from_rdata(owner.clone(), 8482, RData::HINFO(hinfo))
}

pub fn srv(owner: &Name, ttl: u32, weight: u16, port: u16, target: Name) -> Record {
    Record::from_rdata(owner.clone(), ttl, RData::SRV(SRV::new(0, weight, port, target)))
}

pub fn cname(owner: &Name, ttl: u32, target: Name) -> Record {
    Record::from_rdata(owner.clone(), ttl, RData::CNAME(CNAME(target)))
}

pub fn ptr(owner: &Name, ttl: u32, target: Name) -> Record {
    Record::from_rdata(owner.clone(), ttl, RData::PTR(PTR(target)))
}

pub fn txt(owner: &Name, ttl: u32, text: &str) -> Record {
    Record::from_rdata(owner.clone(), ttl, RData::TXT(TXT::new(vec![text.to_string()])))
}

pub fn ns(owner: &Name, ttl: u32, target: Name) -> Record {
    Record::from_rdata(owner.clone(), ttl, RData::NS(NS(target)))
}

/// A zone we answer authoritatively, with the names its SOA and NS use
/// built once instead of per negative answer.
#[derive(Debug, Clone)]
pub struct Zone {
    pub name: Name,
    /// `ns.dns.<zone>`: the SOA's MNAME and the apex NS target.
    pub ns_host: Name,
    /// `hostmaster.<zone>`: the SOA's RNAME.
    pub hostmaster: Name,
}

impl Zone {
    pub fn new(name: Name) -> Zone {
        Zone {
            ns_host: prefixed(&name, &["ns", "dns"]),
            hostmaster: prefixed(&name, &["hostmaster"]),
            name,
        }
    }
}

/// The SOA's refresh, retry and expire, as CoreDNS writes them.
pub const SOA_TIMERS: [i32; 3] = [7200, 1800, 86400];

/// The zone's SOA, as CoreDNS writes it: `ns.dns.<zone> hostmaster.<zone>`,
/// refresh 7200, retry 1800, expire 86400, minimum = the TTL.
pub fn soa(zone: &Zone, ttl: u32, serial: u32) -> Record {
    let [refresh, retry, expire] = SOA_TIMERS;
    let (mname, rname) = (zone.ns_host.clone(), zone.hostmaster.clone());
    let rdata = SOA::new(mname, rname, serial, refresh, retry, expire, ttl);
    Record::from_rdata(zone.name.clone(), ttl, RData::SOA(rdata))
}

/// `labels...` prepended to `base` (falls back to `base` on overflow).
pub fn prefixed(base: &Name, labels: &[&str]) -> Name {
    let mut name = base.clone();
    for label in labels.iter().rev() {
        name = match name.prepend_label(*label) {
            Ok(n) => n,
            Err(_) => return base.clone(),
        };
    }
    name
}
