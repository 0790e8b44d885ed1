//! Answers from local data: `hosts` (a hosts file plus inline entries)
//! and `file` (an RFC 1035 zone file, parsed by hickory-proto's zone
//! parser). Both reload their file when it changes; a file that fails to
//! load keeps the previous data and logs `FILE: error`.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::rdata::PTR;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::answer::{self, Answer};
use crate::config::local::{FileConfig, HostsConfig};

/// Whether a plugin answered or passes the query on.
#[derive(Debug, PartialEq, Eq)]
pub enum Local {
    Answered,
    Next,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Polls `path` every `every` and calls `load` when its mtime changes.
fn watch_file(path: std::path::PathBuf, every: Duration, mut load: impl FnMut() + Send + 'static) {
    if every.is_zero() {
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    rt.spawn(async move {
        let mut seen = modified(&path);
        loop {
            tokio::time::sleep(every).await;
            let now = modified(&path);
            if now != seen {
                seen = now;
                load();
            }
        }
    });
}

#[derive(Default)]
struct HostsData {
    names: HashMap<Name, Vec<IpAddr>>,
    addrs: HashMap<IpAddr, Vec<Name>>,
}

/// The `hosts` plugin.
pub struct Hosts {
    cfg: HostsConfig,
    data: Arc<ArcSwap<HostsData>>,
    /// Reloads of the file so far (see [`Hosts::reloads`]).
    reloads: Arc<AtomicU64>,
}

fn parse_hosts(text: &str, into: &mut HostsData) {
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(Ok(ip)) = words.next().map(|w| w.split('%').next().unwrap_or(w).parse::<IpAddr>()) else {
            continue;
        };
        for w in words {
            if let Ok(mut n) = Name::from_ascii(w) {
                n.set_fqdn(true);
                add_host(into, ip, n.to_lowercase());
            }
        }
    }
}

fn add_host(data: &mut HostsData, ip: IpAddr, name: Name) {
    data.names.entry(name.clone()).or_default().push(ip);
    data.addrs.entry(ip).or_default().push(name);
}

fn load_hosts(cfg: &HostsConfig) -> HostsData {
    let mut data = HostsData::default();
    for (ip, names) in &cfg.inline {
        for n in names {
            add_host(&mut data, *ip, n.to_lowercase());
        }
    }
    if let Some(path) = &cfg.file {
        match std::fs::read_to_string(path) {
            Ok(text) => parse_hosts(&text, &mut data),
            Err(e) => tracing::warn!(target: "hosts", "{}: {e}", path.display()),
        }
    }
    data
}

impl Hosts {
    pub fn new(cfg: HostsConfig) -> Hosts {
        let data = Arc::new(ArcSwap::from_pointee(load_hosts(&cfg)));
        let reloads = Arc::new(AtomicU64::new(0));
        if let Some(path) = cfg.file.clone() {
            let (c, d, r) = (cfg.clone(), data.clone(), reloads.clone());
            watch_file(path, cfg.reload, move || {
                d.store(Arc::new(load_hosts(&c)));
                r.fetch_add(1, Ordering::Release);
            });
        }
        Hosts { cfg, data, reloads }
    }

    /// Counts the file's reloads, each after its data is in place: what
    /// was decided past `hosts` (a learned cache hit) holds while the
    /// count read before deciding has not moved.
    pub fn reloads(&self) -> &Arc<AtomicU64> {
        &self.reloads
    }

    pub fn answer(&self, qname: &Name, qtype: RecordType, out: &mut Answer) -> Local {
        let data = self.data.load();
        let lower = qname.to_lowercase();
        if !self.cfg.no_reverse {
            if let Some(ip) = super::cluster::reverse::parse(&lower) {
                if let Some(names) = data.addrs.get(&ip) {
                    if qtype == RecordType::PTR || qtype == RecordType::ANY {
                        for n in names.iter().filter(|n| self.cfg.zones.iter().any(|z| z.zone_of(n))) {
                            out.answers.push(Record::from_rdata(
                                qname.clone(),
                                self.cfg.ttl,
                                RData::PTR(PTR(n.clone())),
                            ));
                        }
                    }
                    out.authoritative = true;
                    return Local::Answered;
                }
                return self.miss(qname, out);
            }
        }
        if !self.cfg.zones.iter().any(|z| z.zone_of(&lower)) {
            return Local::Next;
        }
        match data.names.get(&lower) {
            Some(ips) => {
                out.answers.extend(
                    ips.iter()
                        .filter_map(|ip| answer::address(qname, self.cfg.ttl, *ip, qtype)),
                );
                out.authoritative = true;
                Local::Answered
            }
            None => self.miss(qname, out),
        }
    }

    fn miss(&self, qname: &Name, out: &mut Answer) -> Local {
        match &self.cfg.fallthrough {
            Some(zones) if zones.is_empty() || zones.iter().any(|z| z.zone_of(qname)) => Local::Next,
            _ if self.cfg.fallthrough.is_none() && self.cfg.zones.iter().any(|z| z.zone_of(qname)) => {
                out.error(ResponseCode::NXDomain);
                Local::Answered
            }
            _ => Local::Next,
        }
    }
}

/// One loaded zone: records by (owner, type) and every name that exists
/// (owners and the empty non-terminals above them).
struct ZoneData {
    origin: Name,
    records: HashMap<(Name, RecordType), Vec<Record>>,
    names: HashSet<Name>,
    soa: Option<Record>,
}

fn load_zone(path: &Path, origin: &Name) -> Result<ZoneData, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let parser = hickory_proto::serialize::txt::Parser::new(text, Some(path.to_path_buf()), Some(origin.clone()));
    let (origin, sets) = parser.parse().map_err(|e| e.to_string())?;
    let mut data = ZoneData {
        origin: origin.to_lowercase(),
        records: HashMap::new(),
        names: HashSet::new(),
        soa: None,
    };
    for (key, set) in sets {
        let owner = Name::from(key.name).to_lowercase();
        let records: Vec<Record> = set.records_without_rrsigs().cloned().collect();
        if key.record_type == RecordType::SOA {
            data.soa = records.first().cloned();
        }
        let mut n = owner.clone();
        while data.origin.zone_of(&n) && data.names.insert(n.clone()) && n != data.origin {
            n = n.base_name();
        }
        data.records.insert((owner, key.record_type), records);
    }
    if data.soa.is_none() {
        return Err(format!("zone {} has no SOA record", data.origin));
    }
    Ok(data)
}

/// The `file` plugin for one zone file.
pub struct ZoneFile {
    cfg: FileConfig,
    data: Arc<ArcSwap<Option<ZoneData>>>,
}

impl ZoneFile {
    pub fn new(cfg: FileConfig) -> ZoneFile {
        let origin = cfg.zones.first().cloned().unwrap_or_else(Name::root);
        let load = {
            let (path, origin) = (cfg.path.clone(), origin.clone());
            move || match load_zone(&path, &origin) {
                Ok(z) => {
                    tracing::info!(target: "file", "{}: loaded zone {}", path.display(), z.origin);
                    Some(z)
                }
                Err(e) => {
                    tracing::error!(target: "file", "{}: {e}", path.display());
                    None
                }
            }
        };
        let data = Arc::new(ArcSwap::from_pointee(load()));
        let d = data.clone();
        watch_file(cfg.path.clone(), cfg.reload, move || {
            if let Some(z) = load() {
                d.store(Arc::new(Some(z)));
            }
        });
        ZoneFile { cfg, data }
    }

    pub fn serves(&self, qname: &Name) -> bool {
        self.cfg.zones.iter().any(|z| z.zone_of(qname))
    }

    pub fn answer(&self, qname: &Name, qtype: RecordType, out: &mut Answer) -> Local {
        let guard = self.data.load();
        let Some(zone) = guard.as_ref() else {
            out.error(ResponseCode::ServFail);
            return Local::Answered;
        };
        let mut name = qname.to_lowercase();
        if !zone.origin.zone_of(&name) {
            return Local::Next;
        }
        // A delegation below the apex: refer.
        let mut cut = name.clone();
        while cut != zone.origin && cut.num_labels() > zone.origin.num_labels() {
            if let Some(ns) = zone.records.get(&(cut.clone(), RecordType::NS)) {
                out.authority.extend(ns.iter().cloned());
                return Local::Answered;
            }
            cut = cut.base_name();
        }
        out.authoritative = true;
        for _ in 0..8 {
            if let Some(rs) = zone.records.get(&(name.clone(), qtype)) {
                out.answers.extend(rs.iter().cloned());
                return Local::Answered;
            }
            match zone.records.get(&(name.clone(), RecordType::CNAME)) {
                Some(c) if qtype != RecordType::CNAME => {
                    out.answers.extend(c.iter().cloned());
                    let Some(RData::CNAME(target)) = c.first().map(|r| &r.data) else {
                        break;
                    };
                    name = target.0.to_lowercase();
                    if !zone.origin.zone_of(&name) {
                        return Local::Answered; // the client resolves outside names
                    }
                }
                _ => break,
            }
        }
        if !zone.names.contains(&name) {
            out.rcode = ResponseCode::NXDomain; // also at the end of a CNAME chain
        }
        out.authority.extend(zone.soa.iter().cloned());
        Local::Answered
    }
}
