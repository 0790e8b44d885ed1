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

mod ixfr;
pub mod print;
pub mod setup;
mod xfr;

use std::net::IpAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use hickory_proto::rr::Name;

use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::changed;
use crate::query::plugins::file::line::Line;
use crate::query::plugins::file::zone::{Loaded, Notified, ZoneFile};
use crate::zonefile::{newer, Zone};
use setup::SecondaryConfig;

/// The first retries of a zone never transferred wait this, doubling...
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// ... up to this.
const MAX_RETRY: Duration = Duration::from_secs(10);
/// The jitter added to a refresh and to a retry (CoreDNS's).
const REFRESH_JITTER: Duration = Duration::from_secs(5);
const RETRY_JITTER: Duration = Duration::from_secs(2);

/// Where a zone filled by transfers comes from: the primaries whose
/// NOTIFY is heeded (as CoreDNS, by IP), and the wake-up a NOTIFY rings.
#[derive(Debug, Default)]
pub struct Primaries {
    pub from: Vec<std::net::SocketAddr>,
    pub notified: tokio::sync::Notify,
}

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
        let primaries = self.primaries.get(i)?;
        let ours = primaries.from.iter().any(|a| a.ip() == from);
        if ours {
            tracing::info!(target: "secondary", "notify from {from} for {zone}: checking transfer");
            primaries.notified.notify_one();
        } else {
            tracing::info!(target: "secondary", "dropping notify from {from} for {zone}: not a primary of the zone");
        }
        Some(ours)
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
            rt.spawn(keep(origin.clone(), Arc::downgrade(&slot), from.clone()));
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

/// Keeps `origin` in `slot` for as long as the block serving it lives.
async fn keep(origin: Name, slot: Weak<ArcSwap<Option<Zone>>>, primaries: Arc<Primaries>) {
    let Some(mut held) = first(&origin, &slot, &primaries).await else {
        return;
    };
    loop {
        let (refresh, retry, expire) = timers(&held);
        let fresh_until = Instant::now() + expire;
        woken(&primaries, refresh + jitter(REFRESH_JITTER)).await;
        loop {
            let Some(slot) = slot.upgrade() else {
                return;
            };
            match check(&origin, held.as_ref().as_ref(), &primaries.from).await {
                Ok(newer) => {
                    held = newer.map_or(held, |z| Arc::new(Some(z)));
                    // A newer zone, or the held one back after an expiry.
                    if !Arc::ptr_eq(&slot.swap(held.clone()), &held) {
                        changed();
                    }
                    break;
                }
                Err(e) if Instant::now() >= fresh_until => {
                    if slot.load().is_some() {
                        tracing::error!(target: "secondary", "zone {origin} expired (no primary answered for {}s): answering SERVFAIL: {e}", expire.as_secs());
                    }
                    slot.store(Arc::new(None));
                    changed();
                }
                Err(e) => {
                    tracing::warn!(target: "secondary", "failed refresh check of {origin}: {e}; retrying in {}s", retry.as_secs())
                }
            }
            woken(&primaries, retry + jitter(RETRY_JITTER)).await;
        }
    }
}

/// The first transfer of `origin`, retried until it succeeds; `None` when
/// the block is gone first.
async fn first(origin: &Name, slot: &Weak<ArcSwap<Option<Zone>>>, primaries: &Primaries) -> Option<Arc<Option<Zone>>> {
    let mut wait = FIRST_RETRY;
    loop {
        let live = slot.upgrade()?;
        match transfer(origin, &primaries.from, None).await {
            Ok(zone) => {
                let zone = Arc::new(Some(zone));
                live.store(zone.clone());
                changed();
                return Some(zone);
            }
            Err(e) => {
                tracing::warn!(target: "secondary", "all '{origin}' primaries failed to transfer, retrying in {}ms: {e}", wait.as_millis())
            }
        }
        drop(live);
        woken(primaries, wait).await;
        wait = (wait * 2).min(MAX_RETRY);
    }
}

/// Waits `wait`, or less when a primary's NOTIFY comes.
async fn woken(primaries: &Primaries, wait: Duration) {
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        () = primaries.notified.notified() => {}
    }
}

/// The zone's SOA refresh, retry and expire, each at least 1 s.
fn timers(zone: &Option<Zone>) -> (Duration, Duration, Duration) {
    let secs = |s: i32| Duration::from_secs(u64::try_from(s).unwrap_or(0).max(1));
    match zone.as_ref().map(|z| &z.soa().data) {
        Some(hickory_proto::rr::RData::SOA(soa)) => (secs(soa.refresh), secs(soa.retry), secs(soa.expire)),
        _ => (
            Duration::from_secs(3600),
            Duration::from_secs(600),
            Duration::from_secs(604_800),
        ),
    }
}

/// Asks the primaries in turn for the serial; a newer one than `held`'s
/// is transferred (`Some`). `Err`: no primary answered, or the transfer
/// failed.
async fn check(origin: &Name, held: Option<&Zone>, from: &[std::net::SocketAddr]) -> Result<Option<Zone>, String> {
    let mut last = String::from("no primary");
    let serial = held.map_or(0, Zone::serial);
    for primary in from {
        match xfr::serial(*primary, origin).await {
            Ok(newest) if newer(newest, serial) => return transfer(origin, from, held).await.map(Some),
            Ok(_) => return Ok(None),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// `origin` from the first primary that sends it: by IXFR from the zone
/// `held`, else (none held, or the IXFR failed) whole by AXFR.
async fn transfer(origin: &Name, from: &[std::net::SocketAddr], held: Option<&Zone>) -> Result<Zone, String> {
    let mut last = String::from("no primary");
    for primary in from {
        if let Some(zone) = incremental(*primary, held).await {
            return Ok(zone);
        }
        match xfr::axfr(*primary, origin).await {
            Ok((zone, records)) => {
                tracing::info!(target: "secondary", "transferred: {origin} from {primary} ({records} records, serial {})", zone.serial());
                return Ok(zone);
            }
            Err(e) => {
                tracing::warn!(target: "secondary", "failed to transfer {origin} from {primary}: {e}");
                last = e;
            }
        }
    }
    Err(last)
}

/// `held` brought up to date by IXFR from `primary`; `None` when no zone
/// is held, or the IXFR failed or brought nothing newer (the caller's
/// AXFR then settles it).
async fn incremental(primary: std::net::SocketAddr, held: Option<&Zone>) -> Option<Zone> {
    let held = held?;
    let origin = held.origin();
    match ixfr::ixfr(primary, held).await {
        Ok(Some((zone, diffs))) => {
            let how = if diffs == 0 {
                "sent whole".to_string()
            } else {
                format!("{diffs} changes")
            };
            tracing::info!(target: "secondary", "transferred: {origin} from {primary} by IXFR ({how}, serial {})", zone.serial());
            Some(zone)
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(target: "secondary", "IXFR of {origin} from {primary} failed, transferring it whole: {e}");
            None
        }
    }
}

/// A random duration in `[0, max)`.
fn jitter(max: Duration) -> Duration {
    Duration::from_millis(fastrand::u64(0..max.as_millis().max(1) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(port: u16) -> SecondaryConfig {
        SecondaryConfig {
            zones: vec![Name::from_ascii("example.org.").expect("name")],
            from: vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))],
            fallthrough: None,
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
