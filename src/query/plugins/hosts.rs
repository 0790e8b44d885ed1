//! `hosts`: a hosts file and inline entries, answered as CoreDNS does.
//!
//! Only names under the plugin's zones are read. A `*.NAME` entry answers
//! for one more label below NAME (an exact entry wins); it has no PTR.
//! A and AAAA come from the file's entries, then the inline ones; PTR from
//! the addresses of both (unless `no_reverse`), for any reverse name, and a
//! PTR question without an entry goes on to the next plugin. Any other type
//! for a name in the data is an authoritative NODATA (with
//! `fallthrough_unsupported`, the next plugin where `fallthrough` applies).
//! A name without an entry goes on where `fallthrough` applies, and is
//! SERVFAIL otherwise: a hosts file has no SOA to deny it with.
//!
//! It is one of the chain's plugins before the cluster
//! ([`Stage::BeforeCluster`]), where CoreDNS's order puts it. Its file's reloads are
//! its [`Answering::changes`]: a cache hit replayed past `hosts` stands
//! only while the file has not reloaded since.

pub mod print;
pub mod setup;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::rdata::PTR;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::watched::watch_file;
use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::cluster::reverse;
use crate::query::plugins::hosts::setup::HostsConfig;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::{self, Answer};

/// One source of entries (the file, or the inline lines).
#[derive(Default)]
struct HostsData {
    /// `(name, is IPv4)` → addresses, in the order written.
    names: HashMap<(Name, bool), Vec<IpAddr>>,
    /// `*.BASE` entries by `(BASE, is IPv4)`.
    wild: HashMap<(Name, bool), Vec<IpAddr>>,
    /// Address → names, for PTR (empty with `no_reverse`).
    addrs: HashMap<IpAddr, Vec<Name>>,
}

impl HostsData {
    fn add(&mut self, cfg: &HostsConfig, ip: IpAddr, name: &Name) {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let mut name = name.to_lowercase();
        name.set_fqdn(true);
        if !cfg.zones.iter().any(|z| z.zone_of(&name)) {
            return;
        }
        if name.is_wildcard() {
            self.wild.entry((name.base_name(), ip.is_ipv4())).or_default().push(ip);
            return;
        }
        self.names.entry((name.clone(), ip.is_ipv4())).or_default().push(ip);
        if !cfg.no_reverse {
            self.addrs.entry(ip).or_default().push(name);
        }
    }

    fn parse(cfg: &HostsConfig, text: &str) -> HostsData {
        let mut data = HostsData::default();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line.split_whitespace();
            let Some(Ok(ip)) = words.next().map(|w| w.split('%').next().unwrap_or(w).parse::<IpAddr>()) else {
                continue;
            };
            for name in words.filter_map(|w| Name::from_ascii(w).ok()) {
                data.add(cfg, ip, &name);
            }
        }
        data
    }

    /// The addresses of one family for `name`: its own, else a wildcard's.
    fn lookup(&self, name: &Name, v4: bool) -> &[IpAddr] {
        let key = (name.clone(), v4);
        if let Some(ips) = self.names.get(&key) {
            return ips;
        }
        if name.num_labels() == 0 {
            return &[];
        }
        self.wild.get(&(name.base_name(), v4)).map_or(&[], Vec::as_slice)
    }
}

/// The `hosts` plugin.
pub struct Hosts {
    cfg: HostsConfig,
    file: Arc<ArcSwap<HostsData>>,
    inline: HostsData,
    /// Reloads of the file so far ([`Answering::changes`]).
    reloads: Arc<AtomicU64>,
}

fn load_file(cfg: &HostsConfig) -> HostsData {
    let Some(path) = &cfg.file else {
        return HostsData::default();
    };
    match std::fs::read_to_string(path) {
        Ok(text) => HostsData::parse(cfg, &text),
        Err(e) => {
            tracing::warn!(target: "hosts", "{}: {e}", path.display());
            HostsData::default()
        }
    }
}

impl Hosts {
    pub fn new(cfg: HostsConfig) -> Hosts {
        let file = Arc::new(ArcSwap::from_pointee(load_file(&cfg)));
        let mut inline = HostsData::default();
        for (ip, names) in &cfg.inline {
            for n in names {
                inline.add(&cfg, *ip, n);
            }
        }
        let reloads = Arc::new(AtomicU64::new(0));
        if let Some(path) = cfg.file.clone() {
            let (c, d, r) = (cfg.clone(), file.clone(), reloads.clone());
            watch_file(path, cfg.reload, move || {
                d.store(Arc::new(load_file(&c)));
                r.fetch_add(1, Ordering::Release);
            });
        }
        Hosts {
            cfg,
            file,
            inline,
            reloads,
        }
    }

    /// Answers `qname` `qtype` from the file's and the inline entries,
    /// the records owned by the name lower-cased as CoreDNS writes them
    /// (`state.Name()`); the question keeps the client's spelling.
    pub fn lookup(&self, qname: &Name, qtype: RecordType, out: &mut Answer) -> Verdict {
        let lower = qname.to_lowercase();
        if qtype != RecordType::PTR && !self.cfg.zones.iter().any(|z| z.zone_of(&lower)) {
            return Verdict::Next;
        }
        let file = self.file.load();
        let sources = [&**file, &self.inline];
        let ttl = self.cfg.ttl;
        let mut found = Vec::new();
        match qtype {
            RecordType::PTR => {
                let ip = reverse::parse(&lower);
                let names = sources.iter().filter_map(|d| ip.and_then(|ip| d.addrs.get(&ip)));
                found.extend(
                    names
                        .flatten()
                        .map(|n| Record::from_rdata(lower.clone(), ttl, RData::PTR(PTR(n.clone())))),
                );
                if found.is_empty() {
                    return Verdict::Next;
                }
            }
            RecordType::A | RecordType::AAAA => {
                let ips = sources.iter().flat_map(|d| d.lookup(&lower, qtype == RecordType::A));
                found.extend(ips.filter_map(|ip| reply::address(&lower, ttl, *ip, qtype)));
            }
            _ if self.cfg.fallthrough_unsupported && self.cfg.falls_through(&lower) => return Verdict::Next,
            _ => {}
        }
        let exists = || {
            sources
                .iter()
                .any(|d| !d.lookup(&lower, true).is_empty() || !d.lookup(&lower, false).is_empty())
        };
        if found.is_empty() && !exists() {
            if self.cfg.falls_through(&lower) {
                return Verdict::Next;
            }
            out.error(ResponseCode::ServFail);
            return Verdict::Answered;
        }
        out.answers.append(&mut found);
        out.authoritative = true;
        Verdict::Answered
    }
}

impl Setup for HostsConfig {
    fn name(&self) -> &'static str {
        "hosts"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Hosts::new(self.clone()))
    }

    fn print(&self, b: &mut Block) {
        print::hosts(b, self);
    }
}

impl Answering for Hosts {
    fn stage(&self) -> Stage {
        Stage::BeforeCluster
    }

    fn plugin(&self) -> Plugin {
        Plugin::Hosts
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        self.lookup(query.name(), query.query_type(), out)
    }

    /// The file's reloads, each counted after its data is in place.
    fn changes(&self) -> Option<&Arc<AtomicU64>> {
        Some(&self.reloads)
    }
}
