//! The `cache` plugin: upstream answers kept for their TTL, shared by all
//! workers.
//!
//! Only forwarded answers are cached: cluster names are answered from the
//! live index (already memoized per worker until the next change), so they
//! are never served stale from here. An entry keeps the upstream message
//! with its original TTLs; a hit rewrites every TTL to the time left (CoreDNS's
//! behaviour) unless `keepttl`. Negative answers live for the SOA's
//! negative TTL (RFC 2308: the lesser of its TTL and MINIMUM). The key is
//! the case-folded name, type, and the DO and CD bits, and the class when
//! it is not IN (a CHAOS question forwarded is kept apart from the IN one).

mod keep;
pub mod print;
pub mod setup;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, Query, ResponseCode};

use crate::query::forward::cache::setup::{CacheConfig, StaleMode};
use crate::query::reply::Answer;

mod stats;
mod victim;
pub use stats::{CacheStats, Stat};
use victim::victim;

const SHARDS: usize = 16;

/// One cached answer.
#[derive(Debug)]
pub struct Entry {
    msg: Message,
    stored: Instant,
    ttl: u32,
    denial: bool,
    hits: AtomicU32,
    prefetching: AtomicBool,
    /// When a refresh of this entry last failed (`serve_stale`'s recheck).
    failed: Mutex<Option<Instant>>,
    /// Left the map (replaced, evicted, expired): replays of it stop.
    retired: AtomicBool,
    /// `serve_stale_policy prefer_positive`: the answer this entry (one
    /// that does not answer) replaced, served instead while within
    /// `serve_stale`'s window.
    positive: Option<Arc<Entry>>,
}

/// What a replay needs of an [`Entry`] to count and age it, copied out
/// so a worker's learned hit need not read the shared entry per query
/// (with many names, that read is a cache miss each time).
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    stored: Instant,
    ttl: u32,
    denial: bool,
}

impl Stamp {
    fn live(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.stored) < Duration::from_secs(u64::from(self.ttl))
    }

    /// Whole seconds left at `now`: the TTL a hit reports.
    pub fn left(&self, now: Instant) -> u32 {
        let age = now.saturating_duration_since(self.stored).as_secs();
        u32::try_from(u64::from(self.ttl).saturating_sub(age)).unwrap_or(0)
    }
}

impl Entry {
    /// The upstream vouched for the data (AD): the reply then differs by
    /// the client's AD and DO bits, so it is not replayed as bytes.
    pub fn authentic(&self) -> bool {
        self.msg.metadata.authentic_data
    }

    pub fn stamp(&self) -> Stamp {
        Stamp {
            stored: self.stored,
            ttl: self.ttl,
            denial: self.denial,
        }
    }
}

/// What a lookup found.
pub enum Lookup {
    /// A live entry; `prefetch` asks the caller to refresh it now.
    Fresh {
        entry: Arc<Entry>,
        prefetch: bool,
    },
    /// Expired but within `serve_stale`.
    Stale(Arc<Entry>, StaleMode),
    Miss,
}

/// A cache key: case-folded wire name, type, DO and CD (and a class not IN).
pub type Key = Box<[u8]>;

/// The cache's and the flights' maps of keys: foldhash, seeded at random
/// per map as the store's maps are (SipHash was ~250 instructions a key,
/// and a miss hashes its key six times).
pub type KeyMap<V> = std::collections::HashMap<Key, V, foldhash::fast::RandomState>;

pub struct Cache {
    pub cfg: CacheConfig,
    shards: Vec<Mutex<KeyMap<Arc<Entry>>>>,
    /// Entries held: `[success, denial]`.
    counts: [AtomicUsize; 2],
    /// Entries retired so far: a replay that saw this number last time
    /// knows its entry is still in the map without reading it.
    retirements: AtomicU64,
    pub stats: CacheStats,
}

impl Cache {
    pub fn new(cfg: CacheConfig) -> Cache {
        Cache {
            cfg,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            counts: Default::default(),
            retirements: AtomicU64::new(0),
            stats: CacheStats::default(),
        }
    }

    pub fn key(query: &Query, dnssec_ok: bool, checking_disabled: bool) -> Key {
        let mut key = Vec::with_capacity(query.name().iter().map(|l| l.len() + 1).sum::<usize>() + 4);
        crate::query::request::name_key(query.name(), &mut key);
        key.extend_from_slice(&u16::from(query.query_type()).to_be_bytes());
        key.push(u8::from(dnssec_ok) | u8::from(checking_disabled) << 1);
        if query.query_class() != hickory_proto::rr::DNSClass::IN {
            key.extend_from_slice(&u16::from(query.query_class()).to_be_bytes());
        }
        key.into_boxed_slice()
    }

    fn shard(&self, key: &[u8]) -> &Mutex<KeyMap<Arc<Entry>>> {
        let h = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        });
        &self.shards[(h % SHARDS as u64) as usize]
    }

    /// Entries held: `(success, denial)`.
    pub fn len(&self) -> (usize, usize) {
        (
            self.counts[0].load(Ordering::Relaxed),
            self.counts[1].load(Ordering::Relaxed),
        )
    }

    /// The live entry under `key`, without counting a hit or a miss.
    pub fn peek(&self, key: &[u8]) -> Option<Arc<Entry>> {
        let entry = self.shard(key).lock().ok()?.get(key).cloned()?;
        let kept = self.preferred(entry.clone()); // or the answer it replaced
        let live = kept.stored.elapsed() < Duration::from_secs(u64::from(kept.ttl));
        (live || !Arc::ptr_eq(&kept, &entry)).then_some(kept)
    }

    /// `entry`, or the answer it replaced while `serve_stale` may serve it.
    fn preferred(&self, entry: Arc<Entry>) -> Arc<Entry> {
        match (&entry.positive, self.cfg.serve_stale) {
            (Some(p), Some((window, _))) if p.stored.elapsed() < Duration::from_secs(u64::from(p.ttl)) + window => {
                p.clone()
            }
            _ => entry,
        }
    }

    /// The answer a new entry for `key` keeps (`prefer_positive`): none
    /// when `msg` answers, else the entry it replaces if that one does, or
    /// the answer that one kept.
    fn retained(&self, key: &[u8], msg: &Message) -> Option<Arc<Entry>> {
        let answers = |m: &Message| m.metadata.response_code == ResponseCode::NoError && !m.answers.is_empty();
        if !self.cfg.prefer_positive || answers(msg) {
            return None;
        }
        let old = self.shard(key).lock().ok()?.get(key).cloned()?;
        if answers(&old.msg) {
            return Some(old);
        }
        old.positive.clone()
    }

    /// The entry of `key` past its TTL by less than `within` (nothing
    /// counted): one `serve_stale` may still serve it.
    pub fn expired(&self, key: &[u8], within: Duration) -> Option<Arc<Entry>> {
        let e = self.shard(key).lock().ok()?.get(key).cloned()?;
        let late = e.stored.elapsed().checked_sub(Duration::from_secs(u64::from(e.ttl)));
        late.is_some_and(|late| late < within).then_some(e)
    }

    pub fn get(&self, key: &[u8]) -> Lookup {
        self.stats.add(Stat::Requests);
        let found = self.shard(key).lock().ok().and_then(|m| m.get(key).cloned());
        let Some(entry) = found else {
            self.stats.add(Stat::Misses);
            return Lookup::Miss;
        };
        let entry = self.preferred(entry);
        let now = Instant::now();
        if let Some(prefetch) = self.hit(&entry, entry.stamp(), now) {
            return Lookup::Fresh { entry, prefetch };
        }
        let age = now.saturating_duration_since(entry.stored);
        if let Some((window, mode)) = self.cfg.serve_stale {
            if age < Duration::from_secs(u64::from(entry.ttl)) + window {
                return Lookup::Stale(entry, mode);
            }
        }
        self.remove(key, &entry);
        self.stats.add(Stat::Misses);
        Lookup::Miss
    }

    /// A hit replayed from a worker's [`super::hits`]: counted as a request
    /// and a hit exactly like [`Cache::get`]'s, with its prefetch decision;
    /// `None` (nothing counted) when `entry` has expired or left the cache.
    /// `seen` is the caller's count of retirements when it last found
    /// `entry` in the map: the entry is read only when that has moved on.
    pub fn replayed(&self, entry: &Entry, stamp: Stamp, seen: &mut u64, now: Instant) -> Option<bool> {
        let retirements = self.retirements.load(Ordering::Acquire);
        if retirements != *seen {
            if entry.retired.load(Ordering::Relaxed) {
                return None;
            }
            *seen = retirements;
        }
        if !stamp.live(now) {
            return None;
        }
        self.stats.add(Stat::Requests);
        self.hit(entry, stamp, now)
    }

    /// Retirements so far (see [`Cache::replayed`]).
    pub fn retirements(&self) -> u64 {
        self.retirements.load(Ordering::Acquire)
    }

    /// Marks `entry`, just taken out of the map, as retired.
    fn retire(&self, entry: &Entry) {
        entry.retired.store(true, Ordering::Relaxed);
        self.retirements.fetch_add(1, Ordering::Release);
    }

    /// Counts a hit on a live `entry` (`None` if it has expired) and says
    /// whether it should be prefetched now.
    fn hit(&self, entry: &Entry, stamp: Stamp, now: Instant) -> Option<bool> {
        if !stamp.live(now) {
            return None;
        }
        self.stats.add(if stamp.denial {
            Stat::HitsDenial
        } else {
            Stat::HitsSuccess
        });
        let Some((amount, window, percent)) = self.cfg.prefetch else {
            return Some(false);
        };
        let hits = entry.hits.fetch_add(1, Ordering::Relaxed) + 1;
        let age = now.saturating_duration_since(entry.stored);
        // As CoreDNS: the whole seconds left against the percentage of the
        // TTL rounded up (a 5 s entry at 10% is refreshed with 1 s left).
        let left = u64::from(entry.ttl).saturating_sub(age.as_secs());
        let prefetch = hits >= amount
            && age <= window
            && left <= (u64::from(percent) * u64::from(entry.ttl)).div_ceil(100)
            && !entry.prefetching.swap(true, Ordering::Relaxed);
        if prefetch {
            self.stats.add(Stat::Prefetch);
        }
        Some(prefetch)
    }

    fn remove(&self, key: &[u8], entry: &Arc<Entry>) {
        if let Ok(mut m) = self.shard(key).lock() {
            if m.get(key).is_some_and(|e| Arc::ptr_eq(e, entry)) {
                m.remove(key);
                self.retire(entry);
                self.counts[usize::from(entry.denial)].fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Stores an upstream answer for `query` if it is cacheable.
    pub fn put(&self, key: Key, query: &Query, msg: &Message) {
        let Some((ttl, denial)) = keep::lifetime(&self.cfg, query, msg) else {
            return;
        };
        let bounds = if denial { self.cfg.denial } else { self.cfg.success };
        if bounds.capacity == 0 {
            return;
        }
        let entry = Arc::new(Entry {
            msg: msg.clone(),
            stored: Instant::now(),
            ttl,
            denial,
            hits: AtomicU32::new(0),
            prefetching: AtomicBool::new(false),
            failed: Mutex::new(None),
            retired: AtomicBool::new(false),
            positive: self.retained(&key, msg),
        });
        let kind = usize::from(denial);
        let Ok(mut m) = self.shard(&key).lock() else { return };
        if self.counts[kind].load(Ordering::Relaxed) >= bounds.capacity && !m.contains_key(&key) {
            let victim = victim(&m, |e| {
                (e.denial == denial).then(|| e.stored + Duration::from_secs(u64::from(e.ttl)))
            });
            match victim {
                Some(v) => {
                    if let Some(gone) = m.remove(&v) {
                        self.retire(&gone);
                    }
                    self.counts[kind].fetch_sub(1, Ordering::Relaxed);
                    self.stats.add(Stat::Evictions);
                }
                None => return, // this shard holds none of that kind: skip caching
            }
        }
        if let Some(old) = m.insert(key, entry) {
            self.retire(&old);
            self.counts[usize::from(old.denial)].fetch_sub(1, Ordering::Relaxed);
        }
        self.counts[kind].fetch_add(1, Ordering::Relaxed);
    }

    /// A cache hit: [`Cache::fill`], with AA set as CoreDNS sets it on
    /// every cached reply (some stub resolvers drop non-authoritative ones).
    pub fn fill_hit(&self, entry: &Entry, out: &mut Answer) {
        self.fill(entry, out);
        out.authoritative = true;
    }

    /// Fills `out` from `entry`: every TTL becomes the time left (the
    /// `serve_stale` response TTL when stale), or stays as stored with
    /// `keepttl`.
    pub fn fill(&self, entry: &Entry, out: &mut Answer) {
        out.relay(&entry.msg);
        let now = Instant::now();
        let stale = !entry.stamp().live(now);
        if self.cfg.keepttl && !stale {
            return;
        }
        let left = if stale {
            self.cfg.stale_ttl
        } else {
            entry.stamp().left(now)
        };
        out.set_ttls(left);
    }

    /// A refresh of `entry` finished: it may prefetch again; a failure
    /// starts `serve_stale`'s recheck period.
    pub fn refreshed(entry: &Entry, failed: bool) {
        if failed {
            Cache::failed(entry);
        }
        entry.prefetching.store(false, Ordering::Relaxed);
    }

    /// The upstreams failed to refresh `entry` now.
    pub fn failed(entry: &Entry) {
        if let Ok(mut at) = entry.failed.lock() {
            *at = Some(Instant::now());
        }
    }

    /// Whether a stale `entry` is served without asking upstream now: a
    /// refresh of it is in flight, or one failed within the recheck period.
    pub fn holds_stale(&self, entry: &Entry) -> bool {
        let recent = entry
            .failed
            .lock()
            .ok()
            .and_then(|at| *at)
            .is_some_and(|at| at.elapsed() < self.cfg.stale_recheck);
        recent || entry.prefetching.load(Ordering::Relaxed)
    }

    /// Claims the one refresh of a stale `entry` (false: one is in flight,
    /// or the recheck period after a failure holds).
    pub fn claim_refresh(&self, entry: &Entry) -> bool {
        !self.holds_stale(entry) && !entry.prefetching.swap(true, Ordering::Relaxed)
    }
}
