//! Answers from local data: `hosts` (a hosts file plus inline entries,
//! in `local/hosts.rs`) and `file` (an RFC 1035 zone file, parsed by
//! hickory-proto's zone parser). Both reload their file when it changes; a file that fails to
//! load keeps the previous data and logs `FILE: error`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::reply::Answer;
use crate::config::local::FileConfig;
use crate::query::plugins::verdict::Verdict;

mod hosts;
pub use hosts::Hosts;

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

    pub fn answer(&self, qname: &Name, qtype: RecordType, out: &mut Answer) -> Verdict {
        let guard = self.data.load();
        let Some(zone) = guard.as_ref() else {
            out.error(ResponseCode::ServFail);
            return Verdict::Answered;
        };
        let mut name = qname.to_lowercase();
        if !zone.origin.zone_of(&name) {
            return Verdict::Next;
        }
        // A delegation below the apex: refer.
        let mut cut = name.clone();
        while cut != zone.origin && cut.num_labels() > zone.origin.num_labels() {
            if let Some(ns) = zone.records.get(&(cut.clone(), RecordType::NS)) {
                out.authority.extend(ns.iter().cloned());
                return Verdict::Answered;
            }
            cut = cut.base_name();
        }
        out.authoritative = true;
        for _ in 0..8 {
            if let Some(rs) = zone.records.get(&(name.clone(), qtype)) {
                out.answers.extend(rs.iter().cloned());
                return Verdict::Answered;
            }
            match zone.records.get(&(name.clone(), RecordType::CNAME)) {
                Some(c) if qtype != RecordType::CNAME => {
                    out.answers.extend(c.iter().cloned());
                    let Some(RData::CNAME(target)) = c.first().map(|r| &r.data) else {
                        break;
                    };
                    name = target.0.to_lowercase();
                    if !zone.origin.zone_of(&name) {
                        return Verdict::Answered; // the client resolves outside names
                    }
                }
                _ => break,
            }
        }
        if !zone.names.contains(&name) {
            out.rcode = ResponseCode::NXDomain; // also at the end of a CNAME chain
        }
        out.authority.extend(zone.soa.iter().cloned());
        Verdict::Answered
    }
}
