//! A question asked of one [`Zone`], answered as RFC 1034 section 4.3.2
//! describes and as CoreDNS's `file` plugin does it:
//!
//! 1. Walk down from the apex towards QNAME. At each name that exists, a
//!    DNAME above QNAME substitutes (RFC 6672: the DNAME, a CNAME made for
//!    QNAME, and the chase of its target); an NS set below the apex is a
//!    zone cut: a referral (NS in authority, glue in additional, no AA).
//! 2. QNAME exists: a CNAME is chased (when the question is not for the
//!    CNAME); the records asked for, else NODATA (the SOA). An empty
//!    non-terminal is NOERROR with the SOA too.
//! 3. QNAME does not exist: below the closest encloser CE, the wildcard
//!    `*.CE` synthesizes records owned by QNAME (RFC 4592); a wildcard that
//!    is itself an empty non-terminal is NODATA; else NXDOMAIN.
//!
//! Answers carry the apex NS set in authority, and the addresses of the
//! MX, SRV, SVCB and HTTPS targets inside the zone in additional. A CNAME
//! chain that leaves the zone stops at its last CNAME and names the target
//! in [`Found::outside`], for the server to look up through its own
//! plugins as CoreDNS does. A target inside the zone without records of its
//! own (a wildcard's name) is looked up again from the apex, at most 8
//! times deep: beyond, SERVFAIL; a target the zone does not have at all is
//! named in [`Found::outside`] too (a longer zone may hold it).

use std::collections::HashSet;

use hickory_proto::rr::rdata::CNAME;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::index::Zone;

/// How many lookups one question may start inside the zone (CoreDNS's 8).
const MAX_DEPTH: usize = 8;

/// What a lookup came to (the rcode and AA follow from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// NXDOMAIN.
    NameError,
    /// NOERROR without records of the type.
    NoData,
    /// A referral to a zone cut: not authoritative unless an alias was answered.
    Delegation,
    /// SERVFAIL: a loop, or a DNAME that does not change the name.
    ServerFailure,
    /// YXDOMAIN: a DNAME substitution made a name too long (RFC 6672 2.2).
    NameTooLong,
}

/// The three sections of an answer and how it came out.
#[derive(Debug)]
pub struct Found {
    pub answer: Vec<Record>,
    pub authority: Vec<Record>,
    pub additional: Vec<Record>,
    pub outcome: Outcome,
    /// The target outside the zone a CNAME chain ended at.
    pub outside: Option<Name>,
    /// The wildcard the answer was made from (RFC 4592), lowercased.
    pub wildcard: Option<Name>,
}

impl Found {
    fn new(answer: Vec<Record>, authority: Vec<Record>, additional: Vec<Record>, outcome: Outcome) -> Found {
        Found {
            answer,
            authority,
            additional,
            outcome,
            outside: None,
            wildcard: None,
        }
    }

    fn fail(outcome: Outcome) -> Found {
        Found::new(Vec::new(), Vec::new(), Vec::new(), outcome)
    }
}

impl Zone {
    /// Answers `qname` `qtype` from this zone (`qname` in any case).
    pub fn lookup(&self, qname: &Name, qtype: RecordType) -> Found {
        self.find(&qname.to_lowercase(), qtype, 0)
    }

    fn find(&self, qname: &Name, qtype: RecordType, depth: usize) -> Found {
        if depth > MAX_DEPTH {
            return Found::fail(Outcome::ServerFailure);
        }
        if qname == &self.origin && matches!(qtype, RecordType::SOA | RecordType::NS) {
            let answer = self.get(qname, qtype).to_vec();
            return match qtype {
                RecordType::SOA => Found::new(answer, self.apex_ns.clone(), Vec::new(), Outcome::Success),
                _ => Found::new(answer, Vec::new(), self.glue(&self.apex_ns), Outcome::Success),
            };
        }
        for labels in self.origin.num_labels()..=qname.num_labels() {
            let name = qname.trim_to(usize::from(labels));
            if !self.exists(&name) {
                return self.missing(qname, &name.base_name(), qtype, depth);
            }
            if let Some(target) = self.dnames.get(&name).filter(|_| &name != qname) {
                return self.substitute(qname, &name, target, qtype, depth);
            }
            if let Some(ns) = self.cut(&name).filter(|_| !(qtype == RecordType::DS && &name == qname)) {
                return Found::new(Vec::new(), ns.to_vec(), self.glue(ns), Outcome::Delegation);
            }
        }
        if !self.owns(qname) {
            // An empty non-terminal: NOERROR with the SOA, which CoreDNS
            // counts as a success (so `fallthrough` passes it on).
            return Found::new(Vec::new(), vec![self.soa.clone()], Vec::new(), Outcome::Success);
        }
        let records = |t| self.get(qname, t).to_vec();
        self.answer(records(RecordType::CNAME), records(qtype), qtype, depth)
    }

    /// The answer from one name's records (or a wildcard's, renamed).
    fn answer(&self, cname: Vec<Record>, records: Vec<Record>, qtype: RecordType, depth: usize) -> Found {
        if !cname.is_empty() && qtype != RecordType::CNAME {
            return self.chase(cname, qtype, depth);
        }
        if records.is_empty() {
            return self.nodata();
        }
        let additional = self.additional(&records);
        Found::new(records, self.apex_ns.clone(), additional, Outcome::Success)
    }

    /// QNAME does not exist; `encloser` is its closest encloser.
    fn missing(&self, qname: &Name, encloser: &Name, qtype: RecordType, depth: usize) -> Found {
        let wildcard = Name::from_labels([&b"*"[..]])
            .and_then(|w| w.append_domain(encloser))
            .ok();
        match wildcard {
            Some(w) if self.owns(&w) => {
                let renamed = |t| {
                    self.get(&w, t)
                        .iter()
                        .map(|r| {
                            let mut r = r.clone();
                            r.name = qname.clone();
                            r
                        })
                        .collect()
                };
                let mut found = self.answer(renamed(RecordType::CNAME), renamed(qtype), qtype, depth);
                found.wildcard = Some(w);
                found
            }
            Some(w) if self.exists(&w) => self.nodata(),
            _ => Found::new(Vec::new(), vec![self.soa.clone()], Vec::new(), Outcome::NameError),
        }
    }

    fn nodata(&self) -> Found {
        Found::new(Vec::new(), vec![self.soa.clone()], Vec::new(), Outcome::NoData)
    }

    /// RFC 6672: `qname` is below the DNAME at `owner` pointing to `target`.
    fn substitute(&self, qname: &Name, owner: &Name, target: &Name, qtype: RecordType, depth: usize) -> Found {
        let dname = self.get(owner, RecordType::DNAME).to_vec();
        let ttl = dname.first().map_or(0, |r| r.ttl);
        let keep = usize::from(qname.num_labels() - owner.num_labels());
        let Ok(new) = Name::from_labels(qname.iter().take(keep)).and_then(|n| n.append_domain(target)) else {
            return Found::new(dname, Vec::new(), Vec::new(), Outcome::NameTooLong);
        };
        if &new == qname {
            return Found::fail(Outcome::ServerFailure); // it can only loop
        }
        let cname = Record::from_rdata(qname.clone(), ttl, RData::CNAME(CNAME(new)));
        let mut found = if qtype == RecordType::CNAME {
            Found::new(vec![cname], self.apex_ns.clone(), Vec::new(), Outcome::Success)
        } else {
            self.chase(vec![cname], qtype, depth + 1)
        };
        found.answer.splice(0..0, dname);
        found
    }

    /// Follows the CNAME chain starting with `answer` (its last record).
    fn chase(&self, mut answer: Vec<Record>, qtype: RecordType, depth: usize) -> Found {
        for _ in 0..=MAX_DEPTH {
            let Some(RData::CNAME(CNAME(target))) = answer.last().map(|r| &r.data) else {
                break;
            };
            let target = target.to_lowercase();
            if let Some((ns, glue)) = self.delegation_of(&target, qtype) {
                return Found::new(answer, ns, glue, Outcome::Delegation);
            }
            if !self.origin.zone_of(&target) {
                let mut found = self.finish(answer, Outcome::Success);
                found.outside = Some(target);
                return found;
            }
            let apex_only = qtype == RecordType::NS || (qtype == RecordType::SOA && target == self.origin);
            if !self.owns(&target) || apex_only {
                let again = self.find(&target, qtype, depth + 1);
                if again.outcome == Outcome::NameError && !apex_only {
                    // Not here: CoreDNS asks the whole server, where a
                    // longer zone (another `file`, another plugin) may hold it.
                    let mut found = self.finish(answer, Outcome::Success);
                    found.outside = Some(target);
                    return found;
                }
                let outcome = match again.outcome {
                    Outcome::Success if again.answer.is_empty() => Outcome::NoData,
                    outcome => outcome,
                };
                answer.extend(again.answer);
                let mut found = self.finish(answer, outcome);
                found.outside = again.outside;
                return found;
            }
            let cname = self.get(&target, RecordType::CNAME);
            if cname.is_empty() {
                answer.extend_from_slice(self.get(&target, qtype));
                break;
            }
            answer.extend_from_slice(cname);
        }
        self.finish(answer, Outcome::Success)
    }

    /// An answer's authority (the SOA when negative, else the apex NS set)
    /// and additional records.
    fn finish(&self, answer: Vec<Record>, outcome: Outcome) -> Found {
        let authority = match outcome {
            Outcome::NameError | Outcome::NoData => vec![self.soa.clone()],
            _ => self.apex_ns.clone(),
        };
        let additional = self.additional(&answer);
        Found::new(answer, authority, additional, outcome)
    }

    /// The first zone cut between the apex and `name` (inclusive; at
    /// `name` itself not for DS): its NS set and glue.
    fn delegation_of(&self, name: &Name, qtype: RecordType) -> Option<(Vec<Record>, Vec<Record>)> {
        if !self.origin.zone_of(name) {
            return None;
        }
        (self.origin.num_labels() + 1..=name.num_labels())
            .map(|labels| name.trim_to(usize::from(labels)))
            .filter(|cut| !(qtype == RecordType::DS && cut == name))
            .find_map(|cut| self.cut(&cut).map(|ns| (ns.to_vec(), self.glue(ns))))
    }

    /// Glue: the addresses of the NS targets at or below their NS owner.
    fn glue(&self, ns: &[Record]) -> Vec<Record> {
        let mut glue = Vec::new();
        for r in ns {
            if let RData::NS(target) = &r.data {
                if r.name.zone_of(&target.0) {
                    glue.extend(self.addresses(&target.0));
                }
            }
        }
        glue
    }

    /// The addresses of the MX, SRV, SVCB and HTTPS targets inside the
    /// zone, each target once.
    fn additional(&self, answer: &[Record]) -> Vec<Record> {
        let mut seen = HashSet::new();
        let mut extra = Vec::new();
        for r in answer {
            let target = match &r.data {
                RData::MX(mx) => &mx.exchange,
                RData::SRV(srv) => &srv.target,
                RData::SVCB(svcb) => &svcb.target_name,
                RData::HTTPS(https) => &https.0.target_name,
                _ => continue,
            };
            if self.origin.zone_of(target) && seen.insert(target.to_lowercase()) {
                extra.extend(self.addresses(target));
            }
        }
        extra
    }

    /// The A then AAAA records `name` owns.
    fn addresses(&self, name: &Name) -> impl Iterator<Item = Record> + '_ {
        let a = self.get(name, RecordType::A).iter();
        a.chain(self.get(name, RecordType::AAAA)).cloned()
    }
}
