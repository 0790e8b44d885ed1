//! `dnssec`: answers signed on the fly, as CoreDNS's plugin of that name.
//!
//! ```text
//!  DNSKEY at a zone's apex ─► the keys (3600), answered here, before the block's data
//!  any question with DO under a zone ─► answered as usual (file, kubernetes, forward, ...)
//!     └► signed once made: every set of the three sections (KSKs sign DNSKEY, ZSKs the rest,
//!        every key when they are not split); NXDOMAIN and NODATA: the SOA signed and an NSEC
//!        "black lie" for the name asked (NXDOMAIN becomes NOERROR); a delegation: its DS
//!        signed, or an NSEC for it
//! ```
//!
//! Two parts from one setup: the plugin of the chain that answers DNSKEY
//! ([`Apex`]), and the block's [`Signing`] plugin ([`Dnssec`]), which the
//! router and the forwarding task call on the finished answer. RRSIGs hold
//! 3600 as the original TTL, are valid from three hours ago for eight days,
//! and are cached (`sign.rs`); `coredns_dnssec_cache_*` count the cache.
//!
//! The same keys and signatures serve CoreDNS's `sign` directive, which
//! writes signed zone files for `file` to serve (`sign_setup.rs`, `zone.rs`,
//! `zone_text.rs`).

pub mod black_lies;
pub mod key;
pub mod print;
pub mod setup;
pub mod sign;
pub mod sign_setup;
#[cfg(test)]
mod tests;
pub mod zone;
pub mod zone_text;

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, Record, RecordType};

use self::black_lies::Denial;
use self::setup::DnssecConfig;
use self::sign::{Signer, Stats, Window, ORIG_TTL};
use crate::corefile::words::Block;
use crate::metrics::catalogue::{counter, gauge, Family};
use crate::metrics::exposed::Exposed;
use crate::metrics::Plugin;
use crate::query::plugins::after::Signing;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;
use crate::zonefile::dnssec::unknown;

/// CoreDNS's dnssec metrics, per `server`.
pub const FAMILIES: [Family; 3] = [
    gauge(
        "coredns_dnssec_cache_entries",
        "The number of elements in the dnssec cache.",
        &["server", "type"],
    ),
    counter(
        "coredns_dnssec_cache_hits_total",
        "The count of cache hits.",
        &["server"],
    ),
    counter(
        "coredns_dnssec_cache_misses_total",
        "The count of cache misses.",
        &["server"],
    ),
];

impl Setup for DnssecConfig {
    fn name(&self) -> &'static str {
        "dnssec"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Apex {
            zones: self.zones.clone(),
            keys: self.keys.clone(),
        })
    }

    fn signing(&self, server: &str) -> Option<Arc<dyn Signing>> {
        Some(Arc::new(Dnssec {
            zones: self.zones.clone(),
            signer: Signer::new(self.keys.clone(), self.capacity, server),
        }))
    }

    fn print(&self, b: &mut Block) {
        print::dnssec(b, self);
    }
}

/// The chain's part: DNSKEY questions for a zone's apex, answered with the
/// keys (signed later, when DO is set).
struct Apex {
    zones: Vec<Name>,
    keys: Arc<Vec<key::Key>>,
}

impl Answering for Apex {
    fn stage(&self) -> Stage {
        Stage::BeforeCluster
    }

    fn plugin(&self) -> Plugin {
        Plugin::None
    }

    fn passes_address(&self, _: &Name) -> bool {
        true
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        let qname = query.name();
        if query.query_type() != RecordType::DNSKEY || !self.zones.iter().any(|z| z == qname) {
            return Verdict::Next;
        }
        out.clear_records();
        let keys = self
            .keys
            .iter()
            .map(|k| unknown(qname.clone(), ORIG_TTL, RecordType::DNSKEY, k.rdata.clone()));
        out.answers.extend(keys);
        out.authoritative = true;
        out.tags.memoizable = true;
        Verdict::Answered
    }
}

/// The block's signing part.
#[derive(Debug)]
pub struct Dnssec {
    zones: Vec<Name>,
    signer: Signer,
}

impl Dnssec {
    /// The longest of the zones holding `name`.
    fn zone_of(&self, name: &Name) -> Option<&Name> {
        self.zones
            .iter()
            .filter(|z| z.zone_of(name))
            .max_by_key(|z| z.num_labels())
    }

    /// The RRSIGs over each set of `section` under one of the zones.
    fn sign_sets(&self, section: &[Record], at: Window) -> Vec<Record> {
        let mut sigs = Vec::new();
        for set in sets(section) {
            if let Some(zone) = self.zone_of(&set[0].name) {
                sigs.extend(self.signer.sign(&set, zone, set[0].ttl, at));
            }
        }
        sigs
    }

    /// The NSEC black lie for `query` in `zone` and its RRSIGs.
    fn denial(&self, query: &Query, zone: &Name, denial: Denial, ttl: u32, at: Window) -> Vec<Record> {
        let nsec = black_lies::nsec(query.name(), query.query_type(), zone, denial, ttl);
        let mut out = self.signer.sign(std::slice::from_ref(&nsec), zone, ttl, at);
        out.push(nsec);
        out
    }
}

impl Signing for Dnssec {
    fn signs(&self, qname: &Name) -> bool {
        self.zone_of(qname).is_some()
    }

    /// CoreDNS's `Sign`, by the answer's kind (CoreDNS's `response.Typify`).
    fn sign(&self, query: &Query, out: &mut Answer) {
        let Some(zone) = self.zone_of(query.name()) else { return };
        let at = Window::now();
        out.tags.memoizable = false; // signatures age: never replayed from the memo
        match kind(out) {
            Kind::Delegation => {
                let ttl = out.authority[0].ttl;
                let ds: Vec<Record> = out
                    .authority
                    .iter()
                    .filter(|r| r.record_type() == RecordType::DS)
                    .cloned()
                    .collect();
                let extra = match ds.is_empty() {
                    true => self.denial(query, zone, Denial::Delegation, ttl, at),
                    false => self.signer.sign(&ds, zone, ttl, at),
                };
                out.authority.extend(extra);
            }
            Kind::Denial(denial) => {
                let soa_only = out.authority.len() == 1 && out.authority[0].record_type() == RecordType::SOA;
                if !soa_only {
                    return;
                }
                let ttl = out.authority[0].ttl;
                let sigs = self.signer.sign(&out.authority, zone, ttl, at);
                out.authority.extend(sigs);
                out.authority.extend(self.denial(query, zone, denial, ttl, at));
                out.rcode = ResponseCode::NoError; // the black lie: the name exists
                if query.query_type() == RecordType::NSEC {
                    // the NSEC asked for, and its RRSIG, as the answer (CoreDNS's last two)
                    let from = out.authority.len().saturating_sub(2);
                    out.answers = out.authority.split_off(from);
                    out.authority.clear();
                }
            }
            Kind::Other => {
                let answer = self.sign_sets(&out.answers, at);
                out.answers.extend(answer);
                let authority = self.sign_sets(&out.authority, at);
                out.authority.extend(authority);
                let additional = self.sign_sets(&out.additional, at);
                out.additional.extend(additional);
            }
        }
    }

    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        Some(self.signer.stats.clone())
    }
}

impl Exposed for Stats {
    fn families(&self) -> &'static [Family] {
        &FAMILIES
    }

    fn series(&self, i: usize, s: &mut String) {
        let (name, server) = (FAMILIES[i].name, &self.server);
        let _ = match i {
            0 => writeln!(
                s,
                "{name}{{server=\"{server}\",type=\"signature\"}} {}",
                self.entries.load(Ordering::Relaxed)
            ),
            1 => writeln!(s, "{name}{{server=\"{server}\"}} {}", self.hits.load(Ordering::Relaxed)),
            _ => writeln!(
                s,
                "{name}{{server=\"{server}\"}} {}",
                self.misses.load(Ordering::Relaxed)
            ),
        };
    }
}

/// What an answer is, as CoreDNS's `response.Typify` tells it (for signing).
enum Kind {
    Delegation,
    Denial(Denial),
    Other,
}

fn kind(out: &Answer) -> Kind {
    let has = |t: RecordType| out.authority.iter().any(|r| r.record_type() == t);
    match out.rcode {
        ResponseCode::NoError if !out.answers.is_empty() => Kind::Other,
        ResponseCode::NoError if has(RecordType::SOA) => Kind::Denial(Denial::NoData),
        ResponseCode::NXDomain if has(RecordType::SOA) => Kind::Denial(Denial::NameError),
        ResponseCode::NoError if has(RecordType::NS) => Kind::Delegation,
        _ => Kind::Other,
    }
}

/// The record sets of `section` (one owner, any case, and one type) in the
/// order they first appear; RRSIG and OPT records are not signed.
fn sets(section: &[Record]) -> Vec<Vec<Record>> {
    let mut out: Vec<Vec<Record>> = Vec::new();
    for r in section {
        if matches!(r.record_type(), RecordType::RRSIG | RecordType::OPT) {
            continue;
        }
        // names compare ignoring case
        match out
            .iter_mut()
            .find(|s| s[0].record_type() == r.record_type() && s[0].name == r.name)
        {
            Some(set) => set.push(r.clone()),
            None => out.push(vec![r.clone()]),
        }
    }
    out
}
