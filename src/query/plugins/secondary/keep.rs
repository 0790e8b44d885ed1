//! How one zone kept by transfer is kept: its first transfer retried
//! until it comes, then checked every SOA `refresh` (or at a NOTIFY) and
//! transferred again when its primary has a newer serial, expired after
//! `expire` without an answer. What the zone's keeper learns goes to its
//! [`Hooks`]: a zone that is not acceptable (a catalog zone that does not
//! parse) is a failed transfer, and every change of the slot is told.

use std::net::IpAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use hickory_proto::rr::Name;

use super::{ixfr, xfr};
use crate::zonefile::{newer, Zone};

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

/// A NOTIFY for `zone` from `from`: heeded (the zone is checked now) when
/// it came from one of `primaries`, else dropped, as CoreDNS drops it.
pub fn heed(primaries: &Primaries, zone: &Name, from: IpAddr) -> bool {
    let ours = primaries.from.iter().any(|a| a.ip() == from);
    if ours {
        tracing::info!(target: "secondary", "notify from {from} for {zone}: checking transfer");
        primaries.notified.notify_one();
    } else {
        tracing::info!(target: "secondary", "dropping notify from {from} for {zone}: not a primary of the zone");
    }
    ours
}

/// What a zone's keeper asks of and tells its owner.
#[derive(Clone)]
pub struct Hooks {
    /// `Err`: the zone transferred is not taken (as a failed transfer).
    pub accept: fn(&Zone) -> Result<(), String>,
    /// Called after the slot changed (a new zone, an expiry).
    pub changed: Arc<dyn Fn() + Send + Sync>,
}

impl Hooks {
    /// Any zone accepted; a change moves the memo's epoch.
    pub fn plain() -> Hooks {
        Hooks {
            accept: |_| Ok(()),
            changed: Arc::new(crate::query::plugins::chain::changed),
        }
    }
}

/// Keeps `origin` in `slot` for as long as the block serving it lives.
pub async fn keep(origin: Name, slot: Weak<ArcSwap<Option<Zone>>>, primaries: Arc<Primaries>, hooks: Hooks) {
    let Some(mut held) = first(&origin, &slot, &primaries, &hooks).await else {
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
            match check(&origin, held.as_ref().as_ref(), &primaries.from, hooks.accept).await {
                Ok(newer) => {
                    held = newer.map_or(held, |z| Arc::new(Some(z)));
                    // A newer zone, or the held one back after an expiry.
                    if !Arc::ptr_eq(&slot.swap(held.clone()), &held) {
                        (hooks.changed)();
                    }
                    break;
                }
                Err(e) if Instant::now() >= fresh_until => {
                    if slot.load().is_some() {
                        tracing::error!(target: "secondary", "zone {origin} expired (no primary answered for {}s): answering SERVFAIL: {e}", expire.as_secs());
                    }
                    slot.store(Arc::new(None));
                    (hooks.changed)();
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
async fn first(
    origin: &Name,
    slot: &Weak<ArcSwap<Option<Zone>>>,
    primaries: &Primaries,
    hooks: &Hooks,
) -> Option<Arc<Option<Zone>>> {
    let mut wait = FIRST_RETRY;
    loop {
        let live = slot.upgrade()?;
        match transfer(origin, &primaries.from, None, hooks.accept).await {
            Ok(zone) => {
                let zone = Arc::new(Some(zone));
                live.store(zone.clone());
                (hooks.changed)();
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
async fn check(
    origin: &Name,
    held: Option<&Zone>,
    from: &[std::net::SocketAddr],
    accept: fn(&Zone) -> Result<(), String>,
) -> Result<Option<Zone>, String> {
    let mut last = String::from("no primary");
    let serial = held.map_or(0, Zone::serial);
    for primary in from {
        match xfr::serial(*primary, origin).await {
            Ok(newest) if newer(newest, serial) => return transfer(origin, from, held, accept).await.map(Some),
            Ok(_) => return Ok(None),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// `origin` from the first primary that sends it: by IXFR from the zone
/// `held`, else (none held, or the IXFR failed) whole by AXFR.
async fn transfer(
    origin: &Name,
    from: &[std::net::SocketAddr],
    held: Option<&Zone>,
    accept: fn(&Zone) -> Result<(), String>,
) -> Result<Zone, String> {
    let mut last = String::from("no primary");
    for primary in from {
        if let Some(zone) = incremental(*primary, held).await {
            match accept(&zone) {
                Ok(()) => return Ok(zone),
                Err(e) => tracing::warn!(target: "secondary", "{origin} from {primary} by IXFR not taken: {e}"),
            }
        }
        match xfr::axfr(*primary, origin)
            .await
            .and_then(|(z, n)| accept(&z).map(|()| (z, n)))
        {
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
