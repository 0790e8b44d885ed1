//! Answers from local data: `hosts` (a hosts file plus inline entries,
//! in `local/hosts.rs`) and `file` (an RFC 1035 zone file, loaded and
//! looked up by [`crate::zone`]). Both reload their file when it changes; a file that fails to
//! load keeps the previous data and logs `FILE: error`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use super::reply::Answer;
use crate::config::local::FileConfig;
use crate::zone::{Outcome, Zone};

mod hosts;
pub use hosts::Hosts;

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

/// The `file` plugin for one zone file.
pub struct ZoneFile {
    cfg: FileConfig,
    data: Arc<ArcSwap<Option<Zone>>>,
}

impl ZoneFile {
    pub fn new(cfg: FileConfig) -> ZoneFile {
        let origin = cfg.zones.first().cloned().unwrap_or_else(Name::root);
        let load = {
            let (path, origin) = (cfg.path.clone(), origin.clone());
            move || match crate::zone::parse_file(&path, &origin) {
                Ok(z) => {
                    tracing::info!(target: "file", "{}: loaded zone {}", path.display(), z.origin());
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

    /// The zone's answer ([`crate::zone::lookup`]) written into `out`; a
    /// CNAME chain leaving the zone has its target chased by the router.
    pub fn answer(&self, qname: &Name, qtype: RecordType, out: &mut Answer) -> Local {
        let guard = self.data.load();
        let Some(zone) = guard.as_ref() else {
            out.error(ResponseCode::ServFail);
            return Local::Answered;
        };
        if !zone.origin().zone_of(qname) {
            return Local::Next;
        }
        let found = zone.lookup(qname, qtype);
        out.rcode = match found.outcome {
            Outcome::NameError => ResponseCode::NXDomain,
            Outcome::NameTooLong => ResponseCode::YXDomain,
            Outcome::ServerFailure if found.answer.is_empty() => {
                out.error(ResponseCode::ServFail);
                return Local::Answered;
            }
            Outcome::ServerFailure => ResponseCode::ServFail,
            _ => ResponseCode::NoError,
        };
        // A referral alone is not authoritative (an alias before it is).
        out.authoritative = found.outcome != Outcome::Delegation || !found.answer.is_empty();
        out.answers.extend(found.answer);
        out.authority.extend(found.authority);
        out.additional.extend(found.additional);
        out.outside = found.outside;
        Local::Answered
    }
}
