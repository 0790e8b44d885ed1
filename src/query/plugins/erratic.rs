//! `erratic` (CoreDNS's plugin for testing clients): every A question it
//! gets is answered `QNAME 0 IN A 192.0.2.53` (RFC 5737), every AAAA
//! `QNAME 0 IN AAAA 2001:db8::53` (RFC 3849), authoritative; any other
//! type SERVFAIL. Counting the queries that reach it from 0, query N is
//! dropped (no reply) when `drop` divides N, answered DURATION late when
//! `delay` does, and has TC set (its answer kept) when `truncate` does.
//! It is one of the chain's last plugins, where CoreDNS's order puts it:
//! after `forward` (the directive table gives its place).
//!
//! A late reply never holds the worker: it is made at once and handed to
//! a task that sends it when the delay is over (`Tags::delay`,
//! `defer::later`). `/ready` fails until `/ready` is asked while erratic
//! has seen 3 or 4 queries, as CoreDNS's `Ready` (its test aid).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{RData, Record, RecordType};

use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Readiness, Setup, Stage};
use crate::query::plugins::verdict::Verdict;
use crate::query::plugins::zone_source::ZoneSource;
use crate::query::reply::Answer;

pub mod options;
pub mod print;
pub mod setup;
mod xfr;

pub use options::ErraticConfig;

/// The address of every A answer (RFC 5737's documentation range).
pub const V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 53);
/// The address of every AAAA answer (RFC 3849's documentation prefix).
pub const V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x53);

/// A block's `erratic`, counting the queries it gets.
#[derive(Debug)]
pub struct Erratic {
    pub cfg: ErraticConfig,
    counts: Arc<Counts>,
    /// Where late replies wait (`None` outside a runtime: tests, fuzzer).
    runtime: Option<tokio::runtime::Handle>,
}

/// The queries erratic got, shared with `/ready`.
#[derive(Debug, Default)]
struct Counts {
    queries: AtomicU64,
    /// `/ready` saw it ready once ([`Readiness::ready`]).
    seen_ready: AtomicBool,
}

impl Erratic {
    /// Must be called inside the runtime late replies wait in.
    pub fn new(cfg: ErraticConfig) -> Erratic {
        Erratic {
            cfg,
            counts: Arc::default(),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Answers `query` into `out`; false when this one is dropped.
    fn reply(&self, query: &Query, out: &mut Answer) -> bool {
        let n = self.counts.queries.fetch_add(1, Ordering::Relaxed);
        let every = |k: u64| k > 0 && n.is_multiple_of(k);
        out.clear_records();
        let data = match query.query_type() {
            RecordType::A => RData::A(A(V4)),
            RecordType::AAAA => RData::AAAA(AAAA(V6)),
            _ => {
                out.error(ResponseCode::ServFail);
                return self.late(every(self.cfg.delay), every(self.cfg.drop), out);
            }
        };
        let copies = if self.cfg.large && query.query_type() == RecordType::A {
            30
        } else {
            1
        };
        let rr = Record::from_rdata(query.name().clone(), 0, data);
        out.answers.extend(std::iter::repeat_n(rr, copies));
        out.authoritative = true;
        out.truncated = every(self.cfg.truncate);
        self.late(every(self.cfg.delay), every(self.cfg.drop), out)
    }

    /// Notes the delay on `out` when `delay`; false when `drop`.
    fn late(&self, delay: bool, drop: bool, out: &mut Answer) -> bool {
        if delay && !drop {
            out.tags.delay = self.runtime.clone().map(|rt| (self.cfg.duration, rt));
        }
        !drop
    }
}

impl Setup for ErraticConfig {
    fn name(&self) -> &'static str {
        "erratic"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Erratic::new(*self))
    }

    fn print(&self, b: &mut Block) {
        print::erratic(b, self);
    }
}

impl Answering for Erratic {
    fn stage(&self) -> Stage {
        Stage::Last
    }

    fn plugin(&self) -> Plugin {
        Plugin::None
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        if self.reply(query, out) {
            Verdict::Answered
        } else {
            Verdict::Drop
        }
    }

    /// A made-up zone for any AXFR that reaches it ([`xfr`]).
    fn zone_sources(&self) -> Vec<Arc<dyn ZoneSource>> {
        vec![Arc::new(xfr::ErraticZones::new(hickory_proto::rr::Name::root()))]
    }

    fn readiness(&self) -> Option<Arc<dyn Readiness>> {
        Some(self.counts.clone())
    }
}

impl Readiness for Counts {
    fn name(&self) -> &'static str {
        "erratic"
    }

    /// CoreDNS's `Ready` (true while 3 or 4 queries have been seen) as its
    /// `ready` plugin reports it by default: once seen ready, ready for good.
    fn ready(&self) -> bool {
        if (3..5).contains(&self.queries.load(Ordering::Relaxed)) {
            self.seen_ready.store(true, Ordering::Relaxed);
        }
        self.seen_ready.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::Name;

    fn ask(e: &Erratic, qtype: RecordType) -> (bool, Answer) {
        let mut out = Answer::default();
        let query = Query::query(Name::from_ascii("example.org.").expect("name"), qtype);
        (e.reply(&query, &mut out), out)
    }

    /// CoreDNS's TestErraticDrop and TestErraticTruncate.
    #[test]
    fn one_in_n_is_dropped_or_truncated() {
        let e = Erratic::new(ErraticConfig::default());
        let (sent, _) = ask(&e, RecordType::A);
        assert!(!sent, "query 0 dropped");
        let (sent, out) = ask(&e, RecordType::A);
        assert!(sent && out.authoritative && out.answers.len() == 1);
        assert!(!ask(&e, RecordType::AAAA).0, "query 2 dropped");
        let (sent, out) = ask(&e, RecordType::HINFO);
        assert!(sent && out.rcode == ResponseCode::ServFail && out.answers.is_empty());
        let e = Erratic::new(ErraticConfig {
            drop: 0,
            truncate: 2,
            ..ErraticConfig::default()
        });
        assert!(ask(&e, RecordType::A).1.truncated);
        assert!(!ask(&e, RecordType::A).1.truncated);
        assert!(ask(&e, RecordType::A).1.truncated);
        let ready = e.readiness().expect("a ready source");
        assert!(ready.ready(), "ready at 3 queries"); // CoreDNS's Ready: [3, 5)
        ask(&e, RecordType::A);
        assert!(ask(&e, RecordType::A).0 && ready.ready(), "seen ready: stays so");
        let unseen = Erratic::new(ErraticConfig::default());
        (0..5).for_each(|_| drop(ask(&unseen, RecordType::A)));
        assert!(!unseen.counts.ready(), "5 queries, never seen ready");
    }
}
