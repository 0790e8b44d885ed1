//! One zone directive line's zones as the block's zone plugin
//! ([`super::Zones`]) holds them: a zone file loaded for each of its
//! origins ([`crate::zonefile`] parses and looks up), looked at every
//! `reload` and replaced when its SOA serial changed (with
//! `reload_by_mtime`, whenever the file changed); or zones filled from
//! elsewhere ([`ZoneFile::fed`], [`ZoneFile::found`]). A zone that does not
//! load answers SERVFAIL; a reload that fails keeps the zone it had. With
//! `fallthrough`, a name the zone does not have goes on to the next plugin,
//! as in CoreDNS.

use std::net::IpAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use crate::metrics::Plugin;
use crate::query::plugins::chain::changed;
use crate::query::plugins::file::setup::FileConfig;
use crate::query::plugins::verdict::Verdict;
use crate::query::plugins::watched::watch_file;
use crate::query::reply::Answer;
use crate::zonefile::{Outcome, Zone};

/// The zone loaded for one origin (`None`: it never loaded); `transfer`
/// reads the same one.
pub type Loaded = Arc<ArcSwap<Option<Zone>>>;

/// The zones of one zone directive line: a zone file's, or zones filled
/// by someone else ([`ZoneFile::fed`], [`ZoneFile::found`]).
pub struct ZoneFile {
    cfg: FileConfig,
    /// One per origin of `cfg.zones`, in its order.
    zones: Vec<Loaded>,
    /// The plugin named as the answer's writer.
    pub plugin: Plugin,
    /// What a NOTIFY for one of the zones asks (zones kept by transfer).
    notified: Option<Arc<dyn Notified>>,
    /// Zones found at run time (a directory's), each origin with its
    /// zone, changing with what is found. `cfg.zones` then only bounds
    /// what is served.
    found: Option<Found>,
}

/// The zones found at run time, swapped whole when they change.
pub type Found = Arc<ArcSwap<FoundZones>>;
/// Each origin found, with its zone.
pub type FoundZones = Vec<(Name, Arc<Option<Zone>>)>;

/// What answers a NOTIFY (RFC 1996) for zones kept by transfer, in the
/// home of the plugin that keeps them.
pub trait Notified: Send + Sync {
    /// `None`: none of these zones is named `zone`; else whether `from`
    /// is one of the zone's primaries (then the zone is checked now).
    fn notify(&self, zone: &Name, from: IpAddr) -> Option<bool>;
}

impl ZoneFile {
    pub fn new(cfg: FileConfig) -> ZoneFile {
        let zones = cfg.zones.iter().map(|origin| load(&cfg, origin)).collect();
        ZoneFile {
            cfg,
            zones,
            plugin: Plugin::File,
            notified: None,
            found: None,
        }
    }

    /// Zones found at run time: those of `found` under `cfg.zones`,
    /// answered as `plugin`.
    pub fn found(cfg: FileConfig, found: Found, plugin: Plugin) -> ZoneFile {
        ZoneFile {
            cfg,
            zones: Vec::new(),
            plugin,
            notified: None,
            found: Some(found),
        }
    }

    /// Zones filled by someone else (transfers), one slot per origin of
    /// `cfg.zones`, whose NOTIFY `notified` answers.
    pub fn fed(cfg: FileConfig, zones: Vec<Loaded>, notified: Arc<dyn Notified>, plugin: Plugin) -> ZoneFile {
        ZoneFile {
            cfg,
            zones,
            plugin,
            notified: Some(notified),
            found: None,
        }
    }

    /// The same zones, with `notified` answering a NOTIFY for them (zones
    /// found by transfer: a catalog's members).
    pub fn notified(mut self, notified: Arc<dyn Notified>) -> ZoneFile {
        self.notified = Some(notified);
        self
    }

    /// A NOTIFY for `zone` from `from`: `None` when no zone kept by
    /// transfer here has that origin; else whether it came from one of
    /// the zone's primaries.
    pub fn notify(&self, zone: &Name, from: IpAddr) -> Option<bool> {
        self.notified.as_ref()?.notify(zone, from)
    }

    /// Each origin with the zone loaded for it (what `transfer` sends).
    pub fn origins(&self) -> impl Iterator<Item = (&Name, &Loaded)> {
        self.cfg.zones.iter().zip(&self.zones)
    }

    /// The zones found at run time, with the zones they are found under.
    pub fn found_under(&self) -> Option<(&[Name], &Found)> {
        Some((&self.cfg.zones, self.found.as_ref()?))
    }

    /// Whether `qname` is under zones found at run time with no zone
    /// found for it.
    pub fn unfound(&self, qname: &Name) -> bool {
        self.found
            .as_ref()
            .is_some_and(|f| self.serves(qname) && found_for(&f.load(), qname).is_none())
    }

    pub fn serves(&self, qname: &Name) -> bool {
        self.depth(qname).is_some()
    }

    /// The labels of the longest origin holding `qname`, if one does (of
    /// zones found at run time, the longest found one under them).
    pub fn depth(&self, qname: &Name) -> Option<u8> {
        let bound = self
            .cfg
            .zones
            .iter()
            .filter(|z| z.zone_of(qname))
            .map(Name::num_labels)
            .max()?;
        let found = self.found.as_ref().and_then(|f| {
            let found = f.load();
            found
                .iter()
                .filter(|(o, _)| o.zone_of(qname))
                .map(|(o, _)| o.num_labels())
                .max()
        });
        Some(found.map_or(bound, |f| f.max(bound)))
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
            return Verdict::Next; // found at run time: no zone for the name
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
