//! What a handler produces: an rcode and three sections of records.
//! [`super::finish`] turns it into wire bytes; nothing else touches rcodes.

use std::net::IpAddr;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::rdata::{A, AAAA, CNAME, NS, PTR, SOA, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// A handler's reply, reused across queries by each worker.
#[derive(Debug, Default)]
pub struct Answer {
    pub rcode: ResponseCode,
    pub authoritative: bool,
    pub answers: Vec<Record>,
    pub authority: Vec<Record>,
    pub additional: Vec<Record>,
    /// Whether the reply depends only on the question and the snapshot, so
    /// it may be replayed by [`super::memo`] until the next snapshot.
    pub memoizable: bool,
    /// Whether the server block that answered has `log`.
    pub log: bool,
}

impl Answer {
    /// Empties the answer for the next query, keeping its allocations.
    pub fn clear(&mut self) {
        self.rcode = ResponseCode::NoError;
        self.authoritative = false;
        self.memoizable = false;
        self.log = false;
        self.answers.clear();
        self.authority.clear();
        self.additional.clear();
    }

    /// An error reply with no records.
    pub fn error(&mut self, rcode: ResponseCode) {
        self.clear();
        self.rcode = rcode;
    }
}

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

/// The zone's SOA, as CoreDNS writes it: `ns.dns.<zone> hostmaster.<zone>`,
/// refresh 7200, retry 1800, expire 86400, minimum = the TTL.
pub fn soa(zone: &Zone, ttl: u32, serial: u32) -> Record {
    let rdata = SOA::new(
        zone.ns_host.clone(),
        zone.hostmaster.clone(),
        serial,
        7200,
        1800,
        86400,
        ttl,
    );
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
