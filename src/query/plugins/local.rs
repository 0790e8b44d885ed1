//! `local`: names that must never leave the host, answered here.
//!
//! | name                                                     | answer                          |
//! |----------------------------------------------------------|---------------------------------|
//! | `*.localhost.`, and `localhost.<anything>` (prefix on)   | A 127.0.0.1, AAAA ::1, else NODATA; counted |
//! | `localhost.`                                             | A 127.0.0.1, AAAA ::1, SOA, NS  |
//! | `0.`, `127.`, `255.in-addr.arpa.`                        | SOA, NS; other types NODATA     |
//! | `1.0.0.127.in-addr.arpa.`                                | PTR `localhost.`                |
//! | any other name in those four zones                       | NXDOMAIN                        |
//!
//! Negative answers carry the zone's SOA (`localhost. root.localhost.`);
//! every TTL is a week, as CoreDNS's. Only class IN is answered. Counted
//! answers are not memoized, so every one of them is counted.
pub mod setup;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::Ordering;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::rdata::SOA;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};

use crate::corefile::words::{on_off, Block};
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::local::setup::LocalConfig;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::{self, Answer};

const TTL: u32 = 604_800;
const ZONES: [&str; 4] = [
    "localhost.",
    "0.in-addr.arpa.",
    "127.in-addr.arpa.",
    "255.in-addr.arpa.",
];
const LOOPBACK_PTR: &str = "1.0.0.127.in-addr.arpa.";

/// The count behind `coredns_local_localhost_requests_total`.
pub fn localhost_requests() -> u64 {
    crate::metrics::LOCALHOST_REQUESTS.load(Ordering::Relaxed)
}

/// The `local` plugin of one server block.
pub struct LocalNames {
    /// `localhost_prefix on`: `localhost.example.com.` is local too.
    prefix: bool,
    zones: Vec<Name>,
    localhost: Name,
}

impl LocalNames {
    pub fn new(prefix: bool) -> LocalNames {
        let name = |s: &str| Name::from_ascii(s).unwrap_or_else(|_| Name::root());
        LocalNames {
            prefix,
            zones: ZONES.iter().map(|z| name(z)).collect(),
            localhost: name("localhost."),
        }
    }

    /// Answers a name of the table above; others pass on.
    pub fn answer(&self, qname: &Name, qtype: RecordType, qclass: DNSClass, out: &mut Answer) -> Verdict {
        if qclass != DNSClass::IN {
            return Verdict::Next;
        }
        let lower = qname.to_lowercase();
        let text = lower.to_ascii();
        let longer = text.len() > "localhost.".len();
        if longer && (text.ends_with(".localhost.") || (self.prefix && text.starts_with("localhost."))) {
            crate::metrics::LOCALHOST_REQUESTS.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(target: "local", "intercepting localhost query for {qname} {qtype}");
            if !loopback(qname, qtype, out) {
                out.authority.push(self.soa(qname));
            }
            out.tags.memoizable = false; // a replay would not be counted
            return Verdict::Answered;
        }
        let Some(zone) = self.zones.iter().find(|z| z.zone_of(&lower)) else {
            return Verdict::Next;
        };
        // The zone as the client spelled it (its trailing labels).
        let origin = Name::from_labels(qname.iter().skip(usize::from(qname.num_labels() - zone.num_labels())))
            .map(|mut n| {
                n.set_fqdn(true);
                n
            })
            .unwrap_or_else(|_| zone.clone());
        if &lower == zone {
            match qtype {
                RecordType::A | RecordType::AAAA if lower == self.localhost => {
                    loopback(qname, qtype, out);
                }
                RecordType::SOA => out.answers.push(self.soa(qname)),
                RecordType::NS => out.answers.push(reply::ns(qname, TTL, self.localhost.clone())),
                _ => out.authority.push(self.soa(qname)),
            }
        } else if text == LOOPBACK_PTR {
            match qtype {
                RecordType::PTR => out.answers.push(reply::ptr(qname, TTL, self.localhost.clone())),
                _ => out.authority.push(self.soa(&origin)),
            }
        } else {
            out.rcode = ResponseCode::NXDomain;
            out.authority.push(self.soa(&origin));
        }
        out.tags.memoizable = true;
        Verdict::Answered
    }

    fn soa(&self, origin: &Name) -> Record {
        let root = self
            .localhost
            .prepend_label("root")
            .unwrap_or_else(|_| self.localhost.clone());
        let soa = SOA::new(self.localhost.clone(), root, 1, 0, 0, 0, TTL);
        Record::from_rdata(origin.clone(), TTL, RData::SOA(soa))
    }
}

impl Setup for LocalConfig {
    fn name(&self) -> &'static str {
        "local"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(LocalNames::new(self.prefix))
    }

    fn print(&self, b: &mut Block) {
        b.directive("local".into(), &[format!("localhost_prefix {}", on_off(self.prefix))]);
    }
}

impl Answering for LocalNames {
    fn stage(&self) -> Stage {
        Stage::Early
    }

    fn plugin(&self) -> Plugin {
        Plugin::Local
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        LocalNames::answer(self, query.name(), query.query_type(), query.query_class(), out)
    }
}

/// 127.0.0.1 for A, ::1 for AAAA; false (nothing added) for other types.
fn loopback(qname: &Name, qtype: RecordType, out: &mut Answer) -> bool {
    let addr = match qtype {
        RecordType::A => Ipv4Addr::LOCALHOST.into(),
        RecordType::AAAA => Ipv6Addr::LOCALHOST.into(),
        _ => return false,
    };
    out.answers.extend(reply::address(qname, TTL, addr, qtype));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(handled, rcode, answers, authority)` for a question.
    fn ask(local: &LocalNames, name: &str, qtype: RecordType) -> (Verdict, ResponseCode, Vec<String>, usize) {
        let mut out = Answer::default();
        let got = local.answer(&Name::from_ascii(name).expect("name"), qtype, DNSClass::IN, &mut out);
        let answers = out.answers.iter().map(|r| r.data.to_string()).collect();
        (got, out.rcode, answers, out.authority.len())
    }

    #[test]
    fn the_table() {
        let on = LocalNames::new(true);
        let before = localhost_requests();
        assert_eq!(ask(&on, "localhost.", RecordType::A).2, ["127.0.0.1"]);
        assert_eq!(ask(&on, "LocalHost.", RecordType::AAAA).2, ["::1"]);
        assert_eq!(ask(&on, "localhost.", RecordType::NS).2, ["localhost."]);
        assert_eq!(ask(&on, "localhost.", RecordType::MX).3, 1);
        assert_eq!(ask(&on, "app.localhost.", RecordType::A).2, ["127.0.0.1"]);
        assert_eq!(ask(&on, "localhost.example.com.", RecordType::AAAA).2, ["::1"]);
        assert_eq!(ask(&on, "localhost.example.com.", RecordType::TXT).3, 1);
        assert_eq!(localhost_requests() - before, 3);
        assert_eq!(ask(&on, "1.0.0.127.in-addr.arpa.", RecordType::PTR).2, ["localhost."]);
        assert_eq!(ask(&on, "127.in-addr.arpa.", RecordType::A).3, 1);
        assert_eq!(ask(&on, "255.in-addr.arpa.", RecordType::SOA).2.len(), 1);
        let nx = ask(&on, "2.0.0.127.in-addr.arpa.", RecordType::PTR);
        assert_eq!((nx.1, nx.3), (ResponseCode::NXDomain, 1));
        assert_eq!(ask(&on, "example.com.", RecordType::A).0, Verdict::Next);
        assert_eq!(ask(&on, "1.0.0.10.in-addr.arpa.", RecordType::PTR).0, Verdict::Next);
        let off = LocalNames::new(false);
        assert_eq!(ask(&off, "localhost.example.com.", RecordType::A).0, Verdict::Next);
        assert_eq!(ask(&off, "app.localhost.", RecordType::A).2, ["127.0.0.1"]);
    }
}
