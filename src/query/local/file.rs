//! The `file` plugin: one zone file loaded for each of its origins
//! ([`crate::zone`] parses and looks up), looked at every `reload` and
//! replaced when its SOA serial changed (with `reload_by_mtime`, whenever
//! the file changed). A zone that does not load answers SERVFAIL; a reload
//! that fails keeps the zone it had. With `fallthrough`, a name the zone
//! does not have goes on to the next plugin, as in CoreDNS.

use std::sync::Arc;

use arc_swap::ArcSwap;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use super::{watch_file, Local};
use crate::config::local::FileConfig;
use crate::query::reply::Answer;
use crate::zone::{Outcome, Zone};

/// The zone loaded for one origin (`None`: it never loaded).
type Loaded = Arc<ArcSwap<Option<Zone>>>;

/// The `file` plugin for one zone file.
pub struct ZoneFile {
    cfg: FileConfig,
    /// One per origin of `cfg.zones`, in its order.
    zones: Vec<Loaded>,
}

impl ZoneFile {
    pub fn new(cfg: FileConfig) -> ZoneFile {
        let zones = cfg.zones.iter().map(|origin| load(&cfg, origin)).collect();
        ZoneFile { cfg, zones }
    }

    pub fn serves(&self, qname: &Name) -> bool {
        self.cfg.zones.iter().any(|z| z.zone_of(qname))
    }

    /// The zone's answer written into `out`; a CNAME chain leaving the
    /// zone has its target chased by the router.
    pub fn answer(&self, qname: &Name, qtype: RecordType, out: &mut Answer) -> Local {
        let Some(slot) = self.zone_for(qname) else {
            return Local::Next;
        };
        let guard = slot.load();
        let Some(zone) = guard.as_ref() else {
            out.error(ResponseCode::ServFail);
            return Local::Answered;
        };
        let found = zone.lookup(qname, qtype);
        let nothing = found.answer.is_empty() && matches!(found.outcome, Outcome::NameError | Outcome::Success);
        if nothing && self.cfg.falls_through(qname) {
            return Local::Next;
        }
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

    /// The zone of the longest origin holding `qname`.
    fn zone_for(&self, qname: &Name) -> Option<&Loaded> {
        self.cfg
            .zones
            .iter()
            .zip(&self.zones)
            .filter(|(origin, _)| origin.zone_of(qname))
            .max_by_key(|(origin, _)| origin.num_labels())
            .map(|(_, zone)| zone)
    }
}

/// Loads the file for `origin` now, and again when it changes.
fn load(cfg: &FileConfig, origin: &Name) -> Loaded {
    let read = {
        let (path, origin) = (cfg.path.clone(), origin.clone());
        move || match crate::zone::parse_file(&path, &origin) {
            Ok(z) => Some(z),
            Err(e) => {
                tracing::error!(target: "file", "{}: {e}", path.display());
                None
            }
        }
    };
    let first = read();
    if let Some(z) = &first {
        tracing::info!(target: "file", "{}: loaded zone {}", cfg.path.display(), z.origin());
    }
    let loaded = Arc::new(ArcSwap::from_pointee(first));
    let (slot, by_mtime, path) = (loaded.clone(), cfg.reload_by_mtime, cfg.path.clone());
    watch_file(cfg.path.clone(), cfg.reload, move || {
        let Some(z) = read() else {
            return;
        };
        let serial = slot.load().as_ref().as_ref().map(Zone::serial);
        if by_mtime || serial != Some(z.serial()) {
            tracing::info!(target: "file", "{}: reloaded zone {} (serial {})", path.display(), z.origin(), z.serial());
            slot.store(Arc::new(Some(z)));
        }
    });
    loaded
}
