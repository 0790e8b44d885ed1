//! The `secondary` plugin: zones taken in by AXFR from a primary and
//! served as `file` serves a zone file (CoreDNS's secondary embeds its
//! file plugin the same way): each line is a [`Line`] of the block's zone
//! plugin, and [`start`] gives it a [`ZoneFile`] whose zones a task per
//! origin keeps ([`keep`]).
//!
//! - Until the first transfer succeeds the zone answers SERVFAIL (never
//!   NXDOMAIN for a name that may exist); the transfer is retried after
//!   250 ms, doubling up to every 10 s, as CoreDNS retries it.
//! - Then the zone's SOA drives it: every `refresh` (plus up to 5 s of
//!   jitter) the primaries' serial is asked over TCP and a newer one
//!   (RFC 1982) is transferred, by IXFR from the serial held (RFC 1995;
//!   CoreDNS asks AXFR only), whole by AXFR when the IXFR fails; a check that fails is tried again every
//!   `retry` (plus up to 2 s), and when no check has succeeded for
//!   `expire` the zone expires: SERVFAIL until a primary answers again.
//! - A NOTIFY for the zone from one of its primaries' addresses is
//!   answered at once and makes the check happen now
//!   ([`Kept::notify`]); one from anyone else is dropped, as CoreDNS
//!   drops it.
//! - `transfer` sends the zone on like a `file` zone (its origins are
//!   the line's [`Line::transferred`]), with NOTIFY to its `to` addresses on
//!   a new serial.
//! - With `catalog` the zones are RFC 9432 catalog zones (`catalog.rs`):
//!   each member zone they list is kept the same way, from the same
//!   primaries, added and removed as the catalog changes.

mod catalog;
mod ixfr;
mod keep;
mod members;
pub mod print;
pub mod setup;
mod xfr;

use std::net::IpAddr;
use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;
use hickory_proto::rr::Name;

use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::file::line::Line;
use crate::query::plugins::file::zone::{Loaded, Notified, ZoneFile};
use crate::zonefile::Zone;
use keep::{heed, keep, Hooks, Primaries};
use setup::SecondaryConfig;

/// The origins of one `secondary` line with their primaries: what a
/// NOTIFY for one of them asks.
struct Kept {
    origins: Vec<Name>,
    primaries: Vec<Arc<Primaries>>,
}

impl Notified for Kept {
    /// A NOTIFY for `zone` from `from`: `None` when no zone of this line
    /// has that origin; else whether it came from one of the zone's
    /// primaries (then the zone checks its primary now).
    fn notify(&self, zone: &Name, from: IpAddr) -> Option<bool> {
        let i = self.origins.iter().position(|z| z == zone)?;
        Some(heed(self.primaries.get(i)?, zone, from))
    }
}

impl Line for SecondaryConfig {
    fn directive(&self) -> &'static str {
        "secondary"
    }

    /// After `file`'s and a directory's zones, as in the table.
    fn rank(&self) -> u8 {
        2
    }

    fn print(&self, b: &mut Block) {
        print::secondary(b, self);
    }

    fn start(&self) -> ZoneFile {
        start(self)
    }

    fn transferred(&self) -> &[Name] {
        &self.zones
    }
}

/// The zones of running `secondary` directives, by directive: a reload
/// that keeps a directive as it was takes its zones over (served on
/// without a new first transfer, kept by the same tasks).
type Running = Vec<(SecondaryConfig, Slots, Vec<Arc<Primaries>>)>;
/// What [`RUNNING`] holds of a directive's zones: not their life.
type Slots = Vec<Weak<ArcSwap<Option<Zone>>>>;
static RUNNING: std::sync::Mutex<Running> = std::sync::Mutex::new(Vec::new());

/// The zones of one `secondary` directive, empty until transferred, each
/// kept by a task of its own (when a runtime runs: not under `check`); a
/// running block's zones when it has the same directive.
pub fn start(cfg: &SecondaryConfig) -> ZoneFile {
    if cfg.catalog.is_some() {
        return catalog::start(cfg);
    }
    let Ok(mut running) = RUNNING.lock() else {
        return fresh(cfg).0;
    };
    running.retain(|(_, slots, _)| slots.iter().all(|s| s.strong_count() > 0));
    for (same, slots, primaries) in running.iter().filter(|(c, ..)| c == cfg) {
        let live: Option<Vec<Loaded>> = slots.iter().map(Weak::upgrade).collect();
        if let Some(live) = live {
            return fed(same, live, primaries.clone());
        }
    }
    let (file, slots, primaries) = fresh(cfg);
    running.push((cfg.clone(), slots, primaries));
    file
}

/// New zones for `cfg`, with what [`RUNNING`] keeps of them.
fn fresh(cfg: &SecondaryConfig) -> (ZoneFile, Slots, Vec<Arc<Primaries>>) {
    let (mut slots, mut primaries) = (Vec::new(), Vec::new());
    for origin in &cfg.zones {
        let slot: Loaded = Arc::new(ArcSwap::from_pointee(None));
        let from = Arc::new(Primaries {
            from: cfg.from.clone(),
            notified: tokio::sync::Notify::new(),
        });
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(keep(
                origin.clone(),
                Arc::downgrade(&slot),
                from.clone(),
                Hooks::plain(),
            ));
        }
        slots.push(slot);
        primaries.push(from);
    }
    let weak = slots.iter().map(Arc::downgrade).collect();
    let kept = primaries.clone();
    (fed(cfg, slots, primaries), weak, kept)
}

/// The block's zones of `cfg`, in `slots`, kept from `primaries`.
fn fed(cfg: &SecondaryConfig, slots: Vec<Loaded>, primaries: Vec<Arc<Primaries>>) -> ZoneFile {
    let kept = Kept {
        origins: cfg.zones.clone(),
        primaries,
    };
    ZoneFile::fed(cfg.as_file(), slots, Arc::new(kept), Plugin::Secondary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(port: u16) -> SecondaryConfig {
        SecondaryConfig {
            zones: vec![Name::from_ascii("example.org.").expect("name")],
            from: vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))],
            fallthrough: None,
            catalog: None,
        }
    }

    fn slot(file: &ZoneFile) -> Loaded {
        file.origins().next().map(|(_, l)| l.clone()).expect("one origin")
    }

    #[tokio::test]
    async fn a_reload_with_the_same_directive_keeps_the_zones() {
        let first = start(&cfg(1));
        let again = start(&cfg(1));
        assert!(Arc::ptr_eq(&slot(&first), &slot(&again)), "taken over");
        let other = start(&cfg(2));
        assert!(!Arc::ptr_eq(&slot(&first), &slot(&other)), "another primary: new zones");
        let kept = Arc::downgrade(&slot(&first));
        drop((first, again));
        assert!(kept.upgrade().is_none(), "gone with the last block holding it");
        let after = start(&cfg(1));
        assert!(slot(&after).load().is_none(), "new zones, not yet transferred");
    }
}
