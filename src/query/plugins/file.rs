//! The `file` plugin: one zone file loaded for each of its origins
//! ([`crate::zonefile`] parses and looks up), looked at every `reload` and
//! replaced when its SOA serial changed (with `reload_by_mtime`, whenever
//! the file changed). A zone that does not load answers SERVFAIL; a reload
//! that fails keeps the zone it had. With `fallthrough`, a name the zone
//! does not have goes on to the next plugin, as in CoreDNS.

pub mod print;
pub mod setup;

use std::sync::Arc;

use arc_swap::ArcSwap;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use super::watched::watch_file;
use crate::metrics::Plugin;
use crate::query::plugins::file::setup::FileConfig;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;
use crate::zonefile::{Outcome, Zone};

/// The zone loaded for one origin (`None`: it never loaded); `transfer`
/// reads the same one.
pub type Loaded = Arc<ArcSwap<Option<Zone>>>;

/// The `file` plugin for one zone file (or `secondary`'s zones, filled by
/// transfers: [`ZoneFile::fed`]).
pub struct ZoneFile {
    cfg: FileConfig,
    /// One per origin of `cfg.zones`, in its order.
    zones: Vec<Loaded>,
    /// The plugin named as the answer's writer (`file`, `secondary`).
    pub plugin: Plugin,
    /// A transferred zone's primaries, one per origin (none for a file).
    primaries: Vec<Arc<Primaries>>,
    /// `auto`'s zones, found in a directory and changing with it: each
    /// origin with its zone. `cfg.zones` then only bounds what is served.
    found: Option<Found>,
}

/// The zones `auto` loaded, swapped whole when its directory changes.
pub type Found = Arc<ArcSwap<FoundZones>>;
/// Each origin `auto` found, with its zone.
pub type FoundZones = Vec<(Name, Arc<Option<Zone>>)>;

/// Where a zone filled by transfers comes from: the primaries whose
/// NOTIFY is heeded (as CoreDNS, by IP), and the wake-up a NOTIFY rings.
#[derive(Debug, Default)]
pub struct Primaries {
    pub from: Vec<std::net::SocketAddr>,
    pub notified: tokio::sync::Notify,
}

/// Changes to the zones `file`, `secondary` and `auto` serve (a file
/// reloaded, a transfer or an expiry, a new set of zones found): each
/// moves the memo's epoch (`Router::memo_view`), so their answers are
/// memoized and every memo entry is dropped when one changes.
static CHANGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts a change of zone data; call it after the new data is in place.
pub fn changed() {
    CHANGES.fetch_add(1, std::sync::atomic::Ordering::Release);
}

/// The changes counted so far.
pub fn changes() -> u64 {
    CHANGES.load(std::sync::atomic::Ordering::Acquire)
}

impl ZoneFile {
    pub fn new(cfg: FileConfig) -> ZoneFile {
        let zones = cfg.zones.iter().map(|origin| load(&cfg, origin)).collect();
        ZoneFile {
            cfg,
            zones,
            plugin: Plugin::File,
            primaries: Vec::new(),
            found: None,
        }
    }

    /// `auto`'s zones: those of `found` under `cfg.zones`.
    pub fn found(cfg: FileConfig, found: Found) -> ZoneFile {
        ZoneFile {
            cfg,
            zones: Vec::new(),
            plugin: Plugin::Auto,
            primaries: Vec::new(),
            found: Some(found),
        }
    }

    /// Zones filled by someone else (`secondary`'s transfers), one slot
    /// and one [`Primaries`] per origin of `cfg.zones`.
    pub fn fed(cfg: FileConfig, zones: Vec<Loaded>, primaries: Vec<Arc<Primaries>>, plugin: Plugin) -> ZoneFile {
        ZoneFile {
            cfg,
            zones,
            plugin,
            primaries,
            found: None,
        }
    }

    /// A NOTIFY for `qname` from `from`: `None` when no transferred zone
    /// of this plugin has that origin; else whether it came from one of
    /// the zone's primaries (then the zone checks its primary now).
    pub fn notify(&self, qname: &Name, from: std::net::IpAddr) -> Option<bool> {
        let i = self.cfg.zones.iter().position(|z| z == qname)?;
        let primaries = self.primaries.get(i)?;
        let ours = primaries.from.iter().any(|a| a.ip() == from);
        if ours {
            tracing::info!(target: "secondary", "notify from {from} for {qname}: checking transfer");
            primaries.notified.notify_one();
        } else {
            tracing::info!(target: "secondary", "dropping notify from {from} for {qname}: not a primary of the zone");
        }
        Some(ours)
    }

    /// Each origin with the zone loaded for it (what `transfer` sends).
    pub fn origins(&self) -> impl Iterator<Item = (&Name, &Loaded)> {
        self.cfg.zones.iter().zip(&self.zones)
    }

    /// Whether `qname` is under `auto`'s zones with no zone found for it.
    pub fn unfound(&self, qname: &Name) -> bool {
        self.found
            .as_ref()
            .is_some_and(|f| self.serves(qname) && found_for(&f.load(), qname).is_none())
    }

    pub fn serves(&self, qname: &Name) -> bool {
        self.depth(qname).is_some()
    }

    /// The labels of the longest origin holding `qname`, if one does.
    pub fn depth(&self, qname: &Name) -> Option<u8> {
        self.cfg
            .zones
            .iter()
            .filter(|z| z.zone_of(qname))
            .map(Name::num_labels)
            .max()
    }

    /// The zone's answer written into `out` (with a signed zone's DNSSEC
    /// records when `dnssec_ok`); a CNAME chain leaving the zone is
    /// [`Verdict::Chase`]: the router looks its target up.
    pub fn answer(&self, qname: &Name, qtype: RecordType, dnssec_ok: bool, out: &mut Answer) -> Verdict {
        let loaded = match &self.found {
            Some(found) if self.serves(qname) => found_for(&found.load(), qname),
            Some(_) => None,
            None => self.zone_for(qname).map(|slot| slot.load_full()),
        };
        let Some(loaded) = loaded else {
            return Verdict::Next; // `auto`: no zone found for the name
        };
        let Some(zone) = loaded.as_ref() else {
            out.error(ResponseCode::ServFail);
            return Verdict::Answered;
        };
        if matches!(qtype, RecordType::AXFR | RecordType::IXFR) {
            out.error(ResponseCode::Refused); // as CoreDNS's file without `transfer`
            return Verdict::Answered;
        }
        let mut found = zone.lookup(qname, qtype);
        if dnssec_ok {
            zone.add_dnssec(qname, &mut found);
        }
        let nothing = found.answer.is_empty() && matches!(found.outcome, Outcome::NameError | Outcome::Success);
        if nothing && self.cfg.falls_through(qname) {
            return Verdict::Next;
        }
        out.rcode = match found.outcome {
            Outcome::NameError => ResponseCode::NXDomain,
            Outcome::NameTooLong => ResponseCode::YXDomain,
            Outcome::ServerFailure if found.answer.is_empty() => {
                out.error(ResponseCode::ServFail);
                return Verdict::Answered;
            }
            Outcome::ServerFailure => ResponseCode::ServFail,
            _ => ResponseCode::NoError,
        };
        // A referral alone is not authoritative (an alias before it is).
        out.authoritative = found.outcome != Outcome::Delegation || !found.answer.is_empty();
        out.answers.extend(found.answer);
        out.authority.extend(found.authority);
        out.additional.extend(found.additional);
        found.outside.map_or(Verdict::Answered, Verdict::Chase)
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

/// The zone of `found` with the longest origin holding `qname`.
fn found_for(found: &[(Name, Arc<Option<Zone>>)], qname: &Name) -> Option<Arc<Option<Zone>>> {
    found
        .iter()
        .filter(|(origin, _)| origin.zone_of(qname))
        .max_by_key(|(origin, _)| origin.num_labels())
        .map(|(_, zone)| zone.clone())
}

/// Loads the file for `origin` now, and again when it changes.
fn load(cfg: &FileConfig, origin: &Name) -> Loaded {
    let read = {
        let (path, origin) = (cfg.path.clone(), origin.clone());
        move || match crate::zonefile::parse_file(&path, &origin) {
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
            changed();
        }
    });
    loaded
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const ZONE: &str =
        "$ORIGIN example.org.\n@ 60 IN SOA ns hostmaster SERIAL 7200 3600 1209600 60\nwww 60 IN A ADDRESS\n";

    fn write(path: &std::path::Path, serial: u32, address: &str) {
        let text = ZONE.replace("SERIAL", &serial.to_string()).replace("ADDRESS", address);
        std::fs::write(path, text).expect("write zone");
    }

    fn address(file: &ZoneFile) -> String {
        let mut out = Answer::default();
        let www = Name::from_ascii("www.example.org.").expect("name");
        file.answer(&www, RecordType::A, false, &mut out);
        out.answers.first().map(|r| r.data.to_string()).unwrap_or_default()
    }

    /// Waits (at most 5 s) until `file` answers `want`.
    async fn until(file: &ZoneFile, want: &str) -> bool {
        for _ in 0..100 {
            if address(file) == want {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    fn zone_file(name: &str, by_mtime: bool) -> (std::path::PathBuf, ZoneFile) {
        let dir = std::env::temp_dir().join(format!("clusterdns-file-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("db");
        write(&path, 1, "192.0.2.1");
        let cfg = FileConfig {
            path: path.clone(),
            zones: vec![Name::from_ascii("example.org.").expect("name")],
            reload: Duration::from_millis(20),
            reload_by_mtime: by_mtime,
            fallthrough: None,
        };
        (path, ZoneFile::new(cfg))
    }

    #[tokio::test]
    async fn a_zone_is_reloaded_for_a_new_serial_only() {
        let (path, file) = zone_file("serial", false);
        assert_eq!(address(&file), "192.0.2.1");
        write(&path, 1, "192.0.2.2"); // same serial: kept, as CoreDNS keeps it
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(address(&file), "192.0.2.1");
        write(&path, 2, "192.0.2.3");
        assert!(until(&file, "192.0.2.3").await, "a new serial reloads");
    }

    #[tokio::test]
    async fn a_transfer_is_refused_and_names_are_answered() {
        let (_, file) = zone_file("axfr", false);
        let apex = Name::from_ascii("example.org.").expect("name");
        for (qtype, rcode) in [
            (RecordType::AXFR, ResponseCode::Refused),
            (RecordType::IXFR, ResponseCode::Refused),
            (RecordType::SOA, ResponseCode::NoError),
        ] {
            let mut out = Answer::default();
            assert_eq!(file.answer(&apex, qtype, false, &mut out), Verdict::Answered);
            assert_eq!(out.rcode, rcode, "{qtype}");
        }
        let mut out = Answer::default();
        let other = Name::from_ascii("example.com.").expect("name");
        assert_eq!(file.answer(&other, RecordType::A, false, &mut out), Verdict::Next);
    }

    #[tokio::test]
    async fn reload_by_mtime_reloads_whatever_the_serial() {
        let (path, file) = zone_file("mtime", true);
        write(&path, 1, "192.0.2.2");
        assert!(until(&file, "192.0.2.2").await, "a changed file reloads");
    }
}
