//! `etcd`: SkyDNS records that external-dns (or anyone) writes into etcd
//! under a prefix, served as CoreDNS's etcd plugin serves them. Where
//! CoreDNS reads etcd on every query, clusterdns mirrors the prefix in
//! memory ([`mirror`]: a list, then a watch), so answers cost no round
//! trip, a change is served as soon as etcd reports it, and answering
//! goes on from the last known records while etcd is down.
//!
//! Start reading at [`Etcd::answer`]: the zone match, then a table by
//! question type, as CoreDNS's `handler.go`:
//!
//! ```text
//! A AAAA TXT  lookup::follow   (a name-valued host is a CNAME, chased)
//! SRV MX NS   targets          (addresses of in-zone targets as extras)
//! CNAME PTR   lookup           (the name's own key only)
//! SOA         the made-up SOA  (ns.dns.ZONE hostmaster.ZONE)
//! other       NOERROR or NXDOMAIN as an A lookup finds the name
//! ```
//!
//! No key: NXDOMAIN with the SOA (or the next plugin with `fallthrough`);
//! nothing of the type: NOERROR with the SOA; a value that is not a
//! record: SERVFAIL. Until the first list, SERVFAIL.

mod client;
mod lookup;
mod mirror;
pub mod print;
mod service;
pub mod setup;
mod targets;
mod wire;

use std::sync::{Arc, Mutex, Weak};

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, Record, RecordType};

use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Readiness, Setup, Stage};
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;
use lookup::{lower, Lookup, Miss};
use mirror::Mirror;
use setup::EtcdConfig;

/// A block's `etcd`, answering from its mirror.
pub struct Etcd {
    cfg: EtcdConfig,
    /// `cfg.prefix()`, and the zones as lookups compare them.
    prefix: String,
    zones: Vec<(Name, String)>,
    mirror: Arc<Mirror>,
}

/// The mirrors of running `etcd` directives, by directive.
static RUNNING: Mutex<Vec<(EtcdConfig, Weak<Mirror>)>> = Mutex::new(Vec::new());

/// What `/ready` asks: the first list is in.
struct Synced(Arc<Mirror>);

impl Etcd {
    /// The plugin, its mirror kept by a task (when a runtime runs: not
    /// under `check`) for as long as a plugin holds it: a reload that keeps
    /// the directive as it was takes the running mirror over (answering
    /// on, no new list).
    pub fn new(cfg: EtcdConfig) -> Etcd {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return Etcd::with(cfg, Arc::default());
        };
        let Ok(mut running) = RUNNING.lock() else {
            return Etcd::with(cfg, Arc::default());
        };
        running.retain(|(_, m)| m.strong_count() > 0);
        if let Some(mirror) = running.iter().filter(|(c, _)| *c == cfg).find_map(|(_, m)| m.upgrade()) {
            return Etcd::with(cfg, mirror);
        }
        let mirror = Arc::new(Mirror::default());
        rt.spawn(mirror::keep(cfg.clone(), Arc::downgrade(&mirror)));
        running.push((cfg.clone(), Arc::downgrade(&mirror)));
        Etcd::with(cfg, mirror)
    }

    fn with(cfg: EtcdConfig, mirror: Arc<Mirror>) -> Etcd {
        let zones = cfg.zones.iter().map(|z| (z.clone(), lower(z))).collect();
        Etcd {
            prefix: cfg.prefix(),
            zones,
            cfg,
            mirror,
        }
    }

    /// The longest of the zones `qname` is in.
    fn zone(&self, qname: &Name) -> Option<&str> {
        let zones = self.zones.iter().filter(|(z, _)| z.zone_of(qname));
        zones.max_by_key(|(z, _)| z.num_labels()).map(|(_, l)| l.as_str())
    }

    /// The answer to `query` in `zone` from `records`.
    fn reply(&self, zone: &str, query: &Query, out: &mut Answer) -> Verdict {
        let (records, leases) = (self.mirror.records(), self.mirror.leases());
        let look = Lookup {
            records: &records,
            leases: &leases,
            bounds: (self.cfg.min_lease_ttl, self.cfg.max_lease_ttl),
            prefix: &self.prefix,
            zone,
        };
        let (qname, qtype) = (query.name(), query.query_type());
        let mut outside = None;
        let found = match qtype {
            RecordType::A | RecordType::AAAA | RecordType::TXT => {
                look.follow(qname, qtype, &[], &mut outside).map(none)
            }
            RecordType::CNAME => look.cname(qname).map(none),
            RecordType::PTR => look.ptr(qname).map(none),
            RecordType::MX => look.mx(qname),
            RecordType::SRV => look.srv(qname),
            RecordType::SOA => Ok((look.soa().into_iter().collect(), Vec::new())),
            RecordType::NS if lower(qname) == zone => look.ns(qname),
            _ => look
                .follow(qname, RecordType::A, &[], &mut None)
                .map(|_| (Vec::new(), Vec::new())),
        };
        out.clear_records();
        out.authoritative = true;
        match found {
            Err(Miss::NotFound) if self.cfg.falls_through(qname) => return Verdict::Next,
            Err(Miss::NotFound) => out.rcode = ResponseCode::NXDomain,
            Err(Miss::Failed(why)) => {
                tracing::warn!(target: "etcd", "{qname} {qtype}: {why}");
                out.rcode = ResponseCode::ServFail;
            }
            Ok((answers, _)) if answers.is_empty() => {}
            Ok((answers, extra)) => {
                out.answers = answers;
                out.additional = extra;
                return outside.map_or(Verdict::Answered, Verdict::Chase);
            }
        }
        out.authority.extend(look.soa());
        Verdict::Answered
    }
}

/// Answer records with no additional ones.
fn none(answers: Vec<Record>) -> (Vec<Record>, Vec<Record>) {
    (answers, Vec::new())
}

impl Setup for EtcdConfig {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn build(&self) -> Box<dyn Answering> {
        Box::new(Etcd::new(self.clone()))
    }

    fn print(&self, b: &mut Block) {
        print::etcd(b, self);
    }
}

impl Answering for Etcd {
    fn stage(&self) -> Stage {
        Stage::Data
    }

    fn plugin(&self) -> Plugin {
        Plugin::Etcd
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        let Some(zone) = self.zone(query.name()) else {
            return Verdict::Next;
        };
        if !self.mirror.synced() {
            out.clear_records();
            out.error(ResponseCode::ServFail);
            return Verdict::Answered;
        }
        self.reply(zone, query, out)
    }

    /// A name of its zones may appear at any time (with `fallthrough`).
    fn may_answer_later(&self, query: &Query) -> bool {
        self.zone(query.name()).is_some()
    }

    fn readiness(&self) -> Option<Arc<dyn Readiness>> {
        Some(Arc::new(Synced(self.mirror.clone())))
    }
}

impl Readiness for Synced {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn ready(&self) -> bool {
        self.0.synced()
    }
}

#[cfg(test)]
mod tests;
