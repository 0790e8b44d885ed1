//! What a handler produces: an rcode and three sections of records.
//! [`wire`] turns it into wire bytes; nothing else touches rcodes.

use std::net::IpAddr;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::rdata::{A, AAAA, CNAME, NS, PTR, SOA, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use crate::corefile::args::Net;
use crate::query::reply::loadbalance::setup::LoadbalanceConfig;

pub mod echo;
pub mod header;
pub mod loadbalance;
pub mod nsid;
pub mod summary;
pub mod tags;
pub mod wire;

pub use summary::Summary;
pub use tags::Tags;

/// A handler's reply, reused across queries by each worker: the message
/// being built (rcode, flags, three sections, the extended DNS error) and,
/// apart, its [`Tags`], which never reach the wire.
#[derive(Debug, Default)]
pub struct Answer {
    pub rcode: ResponseCode,
    pub authoritative: bool,
    /// Flags relayed from an upstream answer.
    pub recursion_available: bool,
    pub authentic_data: bool,
    /// The upstream answer was truncated: the client must see TC.
    pub truncated: bool,
    pub answers: Vec<Record>,
    pub authority: Vec<Record>,
    pub additional: Vec<Record>,
    /// RFC 8914 extended DNS error (code, text) for the OPT record.
    pub ede: Option<(u16, String)>,
    pub tags: Tags,
    /// Scratch space of the cluster zone's direct writer: the addresses
    /// it writes (no records are built for them).
    pub addrs: Vec<IpAddr>,
}

impl Answer {
    /// Empties the answer for the next query, keeping its allocations.
    pub fn clear(&mut self) {
        self.rcode = ResponseCode::NoError;
        self.authoritative = false;
        self.recursion_available = false;
        self.authentic_data = false;
        self.truncated = false;
        self.ede = None;
        self.tags = Tags {
            deps: crate::store::Deps::EVERYTHING,
            ..Tags::default()
        };
        self.answers.clear();
        self.authority.clear();
        self.additional.clear();
        self.addrs.clear();
    }

    /// An error reply with no records.
    pub fn error(&mut self, rcode: ResponseCode) {
        let plugin = self.tags.plugin;
        self.restart();
        (self.rcode, self.tags.plugin) = (rcode, plugin);
    }

    /// Empties the answer but for what entering the block set (`zone`,
    /// `bufsize`, `log`, `nsid`): the whole way after the short way declined.
    pub fn restart(&mut self) {
        let (log, zone, bufsize) = (self.tags.log, self.tags.zone, self.tags.bufsize);
        let nsid = self.tags.nsid.take();
        self.clear();
        (self.tags.log, self.tags.zone, self.tags.bufsize, self.tags.nsid) = (log, zone, bufsize, nsid);
    }

    /// Every record of the three sections.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.answers.iter().chain(&self.authority).chain(&self.additional)
    }

    /// Sets the TTL of every record of the three sections.
    pub fn set_ttls(&mut self, ttl: u32) {
        for r in self
            .answers
            .iter_mut()
            .chain(&mut self.authority)
            .chain(&mut self.additional)
        {
            r.ttl = ttl;
        }
    }

    /// Drops what a plugin that passed the query on may have left.
    pub fn clear_records(&mut self) {
        self.error(ResponseCode::NoError);
    }

    /// Takes an upstream's (or the cache's) reply: its rcode, flags and
    /// records, less its OPT record (ours is written by `finish`).
    pub fn relay(&mut self, msg: &hickory_proto::op::Message) {
        self.rcode = msg.metadata.response_code;
        self.recursion_available = msg.metadata.recursion_available;
        self.authentic_data = msg.metadata.authentic_data;
        self.truncated = msg.metadata.truncation;
        self.answers.extend(msg.answers.iter().cloned());
        self.authority.extend(msg.authorities.iter().cloned());
        self.additional.extend(
            msg.additionals
                .iter()
                .filter(|r| r.record_type() != RecordType::OPT)
                .cloned(),
        );
    }

    /// `loadbalance` on a NOERROR answer, as CoreDNS orders it: in each
    /// section, a run of addresses of one type is shuffled; a mixed one
    /// becomes CNAMEs, the other records, the addresses shuffled, the MX
    /// records shuffled. Then, with `prefer`, the answer and additional
    /// sections become CNAMEs, the addresses in the preferred networks (in
    /// the order they are listed) then the others, MX, the rest. Returns
    /// whether an order was drawn (the reply is then not memoized). With
    /// `weighted`, [`weighted`] orders instead.
    pub fn balance(&mut self, lb: &LoadbalanceConfig) -> bool {
        if self.rcode != ResponseCode::NoError {
            return false;
        }
        if let Some(w) = &lb.weighted {
            loadbalance::order(&mut self.answers, w);
            loadbalance::order(&mut self.additional, w);
            return true;
        }
        let drawn = [&self.answers, &self.authority, &self.additional]
            .iter()
            .any(|s| s.len() > 1);
        for section in [&mut self.answers, &mut self.authority, &mut self.additional] {
            round_robin(section);
        }
        if !lb.prefer.is_empty() {
            prefer(&mut self.answers, &lb.prefer);
            prefer(&mut self.additional, &lb.prefer);
        }
        drawn
    }
}

fn is_address(r: &Record) -> bool {
    matches!(r.record_type(), RecordType::A | RecordType::AAAA)
}

/// `records` taken apart as `[CNAME, other, A and AAAA, MX]`, each in order.
pub(crate) fn partition(records: &mut Vec<Record>) -> [Vec<Record>; 4] {
    let mut parts: [Vec<Record>; 4] = Default::default();
    for r in records.drain(..) {
        let slot = match r.record_type() {
            RecordType::CNAME => 0,
            RecordType::A | RecordType::AAAA => 2,
            RecordType::MX => 3,
            _ => 1,
        };
        parts[slot].push(r);
    }
    parts
}

/// CoreDNS's round robin of one section (see [`Answer::balance`]).
fn round_robin(records: &mut Vec<Record>) {
    if records.len() < 2 {
        return;
    }
    let first = records[0].record_type();
    if is_address(&records[0]) && records.iter().all(|r| r.record_type() == first) {
        shuffle(records.len(), |k, j| records.swap(k, j));
        return;
    }
    let [cname, rest, mut addrs, mut mx] = partition(records);
    shuffle(addrs.len(), |k, j| addrs.swap(k, j));
    shuffle(mx.len(), |k, j| mx.swap(k, j));
    records.extend(cname.into_iter().chain(rest).chain(addrs).chain(mx));
}

fn address_of(r: &Record) -> Option<IpAddr> {
    match &r.data {
        RData::A(a) => Some(IpAddr::V4(a.0)),
        RData::AAAA(a) => Some(IpAddr::V6(a.0)),
        _ => None,
    }
}

/// `loadbalance { prefer }`'s order of one section (see [`Answer::balance`]).
fn prefer(records: &mut Vec<Record>, nets: &[Net]) {
    let [cname, rest, mut addrs, mx] = partition(records);
    let rank = |r: &Record| {
        let ip = address_of(r);
        nets.iter()
            .position(|n| ip.is_some_and(|ip| n.contains(ip)))
            .unwrap_or(nets.len())
    };
    addrs.sort_by_key(rank); // stable: the shuffled order within a rank stays
    records.extend(cname.into_iter().chain(addrs).chain(mx).chain(rest));
}

/// `loadbalance`'s draws, one place for every form it shuffles (records,
/// addresses written straight from the snapshot, a cache hit's bytes): a
/// Fisher-Yates shuffle of `len` items, each step a `swap(k, j)`, `j <= k`.
pub fn shuffle(len: usize, mut swap: impl FnMut(usize, usize)) {
    for k in (1..len).rev() {
        swap(k, fastrand::usize(..=k));
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

/// `any`'s answer to ANY (RFC 8482): one HINFO record, CoreDNS's.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rr(text: &str) -> Record {
        let n = Name::from_ascii("x.example.").expect("name");
        match text.split_once(' ') {
            Some(("A", ip)) => address(&n, 60, ip.parse().expect("ip"), RecordType::A).expect("A"),
            Some(("CNAME", t)) => cname(&n, 60, Name::from_ascii(t).expect("target")),
            Some(("MX", t)) => Record::from_rdata(
                n,
                60,
                RData::MX(hickory_proto::rr::rdata::MX::new(10, Name::from_ascii(t).expect("mx"))),
            ),
            _ => Record::from_rdata(n, 60, RData::TXT(TXT::new(vec![text.to_string()]))),
        }
    }

    fn kinds(a: &Answer) -> Vec<String> {
        a.answers.iter().map(|r| r.record_type().to_string()).collect()
    }

    #[test]
    fn balance_orders_sections_as_coredns_and_prefer_puts_networks_first() {
        let mut a = Answer::default();
        for t in ["A 10.0.0.1", "t", "MX m.", "CNAME c.", "A 192.168.1.1", "A 10.9.20.5"] {
            a.answers.push(rr(t));
        }
        assert!(a.balance(&LoadbalanceConfig::default()));
        assert_eq!(kinds(&a), ["CNAME", "TXT", "A", "A", "A", "MX"]);
        let prefer = LoadbalanceConfig {
            prefer: vec![
                Net::parse("10.9.20.0/24").expect("net"),
                Net::parse("192.168.1.0/24").expect("net"),
            ],
            weighted: None,
        };
        a.balance(&prefer);
        assert_eq!(kinds(&a), ["CNAME", "A", "A", "A", "MX", "TXT"]);
        let addrs: Vec<String> = a.answers[1..3].iter().map(|r| r.data.to_string()).collect();
        assert_eq!(addrs, ["10.9.20.5", "192.168.1.1"]);
        // not NOERROR: left as it is
        let mut nx = Answer {
            rcode: ResponseCode::NXDomain,
            ..Answer::default()
        };
        nx.answers.extend([rr("t"), rr("CNAME c.")]);
        assert!(!nx.balance(&prefer));
        assert_eq!(kinds(&nx), ["TXT", "CNAME"]);
    }

    /// plugin/loadbalance/prefer_test.go TestSortPreferred (coredns/coredns),
    /// as data: the order `prefer` gives, before any shuffle.
    #[test]
    fn coredns_sort_preferred() {
        let n = Name::from_ascii("example.org.").expect("name");
        let mut records: Vec<Record> = [
            "10.9.30.1",
            "10.9.20.5",
            "192.168.1.2",
            "10.10.0.1",
            "10.9.20.3",
            "172.16.0.1",
            "2001:db8::1",
            "2001:db8:abcd::1",
            "fd00::1",
        ]
        .iter()
        .filter_map(|ip| {
            let ip: IpAddr = ip.parse().ok()?;
            address(&n, 300, ip, if ip.is_ipv4() { RecordType::A } else { RecordType::AAAA })
        })
        .collect();
        records.push(cname(&n, 300, Name::from_ascii("alias.example.org.").expect("target")));
        let nets: Vec<Net> = ["2001:db8::/32", "10.9.20.0/24", "10.9.30.0/24"]
            .iter()
            .filter_map(|c| Net::parse(c))
            .collect();
        prefer(&mut records, &nets);
        let order: Vec<String> = records.iter().map(|r| r.data.to_string()).collect();
        let want = [
            "alias.example.org.",
            "2001:db8::1",
            "2001:db8:abcd::1",
            "10.9.20.5",
            "10.9.20.3",
            "10.9.30.1",
            "192.168.1.2",
            "10.10.0.1",
            "172.16.0.1",
            "fd00::1",
        ];
        assert_eq!(order, want);
    }
}
