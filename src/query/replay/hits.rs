//! Cache hits replayed as bytes, per worker: no decode, no route, no
//! `Record` clone, no encode.
//!
//! The first time a worker answers a question from the `cache` (the full
//! path: decode, route, [`crate::query::forward::cache::Cache::fill`], `finish`), it keeps
//! the reply it wrote, the offsets of its TTLs, and the shared cache entry it
//! came from, under the memo's key of the question (name without case,
//! type, EDNS state and size limit) and the CD bit (the cache keys on it).
//! The next identical question is answered by copying those bytes and
//! patching the ID, the RD and CD bits, the question's spelling and every
//! TTL (the time the entry has left, from the batch's clock; `keepttl`
//! leaves them), shuffling the addresses for `loadbalance`, and counting
//! the hit (and starting a prefetch) exactly as the full path would.
//!
//! A replay is only as good as the route it skips, so a question is kept
//! only where the route to the cache is fixed by the config alone: a block
//! with no `rewrite`, `template`, for a name
//! outside its `kubernetes` zones and those the chain's plugins serve or
//! answer from the store (those change with the store or a reload), not
//! one a plugin after the answer takes, not ANY or the
//! loop probe's HINFO. Behind a plugin whose data changes at run time
//! (reloaded from disk), a question is kept only if that data passes it
//! on, and is replayed only while it has not changed since. Everything is dropped on a config reload. An entry
//! dies with its cache entry: when it expires (the full path then serves
//! it stale or forwards it) or leaves the shared cache (replaced by a
//! refresh, evicted). A block's guard is no reason to skip it: the caller
//! replays only to a client the guard admits for the question as asked
//! (`Router::admits`), which with no `rewrite` is the name it judges.
//! Which routes are fixed the router says (`Router::hit_route`): this file
//! knows the cache and the bytes, not the blocks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::Query;
use hickory_proto::rr::RecordType;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::query::forward::cache::{Cache, Entry, Stamp};
use crate::query::forward::Forwarding;
use crate::query::replay::memo::Key;
use crate::query::reply::Answer;
use crate::query::reply::Summary;
use crate::query::request::walk::{Records, Section};
use crate::store::Map;

/// Entries per worker before the whole table is emptied.
pub const MAX_ENTRIES: usize = 10_000;

/// One replayable cache hit.
struct Hit {
    reply: Box<[u8]>,
    /// Where each TTL field of `reply` starts (OPT's is not a TTL).
    ttls: Box<[u16]>,
    /// `loadbalance`: where each address's TTL starts (then its RDATA
    /// length and RDATA of `rdata_len` bytes); empty: nothing to shuffle.
    shuffle: Box<[u16]>,
    rdata_len: u16,
    forwarding: Arc<Forwarding>,
    entry: Arc<Entry>,
    /// `entry`'s times and kind, and the cache's retirements when `entry`
    /// was last known to be in it: a replay reads only these.
    stamp: Stamp,
    seen: u64,
    /// The change counts of the plugins the question passed whose data
    /// changes at run time, each with its count when learned.
    changes: Box<[(Arc<AtomicU64>, u64)]>,
    outcome: Summary,
}

/// A question's route to the cache, fixed by the config alone (see the
/// module doc), as the router finds it: the forwarding whose cache
/// answers, the change counts of the plugins it passed whose data changes
/// at run time with their counts now (empty: none has such a plugin), its
/// `loadbalance`.
pub struct HitRoute<'r> {
    pub forwarding: &'r Arc<Forwarding>,
    pub changes: Vec<(Arc<AtomicU64>, u64)>,
    pub loadbalance: Option<&'r crate::query::reply::loadbalance::setup::LoadbalanceConfig>,
}

/// One worker's replayable cache hits.
#[derive(Default)]
pub struct Hits {
    /// The router the entries were learned under (its epoch and address).
    router: (u64, usize),
    /// Indexed by the query's CD bit.
    entries: [Map<Box<[u8]>, Hit>; 2],
}

impl Hits {
    /// Writes the reply to `packet` (with memo key `key`) into `out` from a
    /// learned cache hit, counting it as a hit; `None` when there is none
    /// (the full path answers, and may [`Hits::learn`] it).
    pub fn replay(
        &mut self,
        router: (u64, usize),
        key: &Key,
        packet: &[u8],
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Option<Summary> {
        if self.router != router {
            self.entries.iter_mut().for_each(Map::clear);
            self.router = router;
            return None;
        }
        let map = &mut self.entries[usize::from(cd(packet)?)];
        let hit = map.get_mut(key.bytes())?;
        if hit
            .changes
            .iter()
            .any(|(now, seen)| now.load(Ordering::Acquire) != *seen)
        {
            map.remove(key.bytes());
            return None;
        }
        let cache = hit.forwarding.cache.as_ref()?;
        let Some(prefetch) = cache.replayed(&hit.entry, hit.stamp, &mut hit.seen, now) else {
            map.remove(key.bytes());
            return None;
        };
        out.clear();
        out.extend_from_slice(&hit.reply);
        key.echo(packet, out)?;
        if !cache.cfg.keepttl {
            patch_ttls(out, &hit.ttls, hit.stamp.left(now))?;
        }
        shuffle(out, &hit.shuffle, usize::from(hit.rdata_len));
        if prefetch {
            let cd = cd(packet)?;
            let query = question(packet)?;
            hit.forwarding
                .refresh(query, hit.outcome.dnssec_ok, cd, Some(hit.entry.clone()));
        }
        Some(hit.outcome)
    }

    /// Keeps `reply`, just written by the full path from the cache
    /// (`answer.plugin` is `Cache`) for `packet`, if its route may be
    /// skipped next time (`route` says so for the question, the router's
    /// knowledge) and the cache entry it came from is still live.
    #[allow(clippy::too_many_arguments)]
    pub fn learn<'r>(
        &mut self,
        route: impl FnOnce(&Query) -> Option<HitRoute<'r>>,
        key: &Key,
        packet: &[u8],
        answer: &Answer,
        reply: &[u8],
        outcome: Summary,
        now: Instant,
    ) -> Option<()> {
        let (query, cd) = (question(packet)?, cd(packet)?);
        let HitRoute {
            forwarding,
            changes,
            loadbalance,
        } = route(&query)?;
        let cache = forwarding.cache.as_ref()?;
        // Read before the entry: a retirement after this is seen next time.
        let seen = cache.retirements();
        let entry = cache
            .peek(&Cache::key(&query, outcome.dnssec_ok, cd))
            .filter(|e| !e.authentic())?;
        let walked = walk(reply)?;
        // The reply must be this entry's (not one it replaced meanwhile).
        let left = i64::from(entry.stamp().left(now));
        let ttl_at = |at: u16| reply.get(usize::from(at)..usize::from(at) + 4).map(be32);
        let same = walked
            .ttls
            .iter()
            .all(|at| ttl_at(*at).is_some_and(|t| (i64::from(t) - left).abs() <= 1));
        if !cache.cfg.keepttl && !same {
            return None;
        }
        let (shuffle, rdata_len) = if let Some(lb) = loadbalance {
            if !lb.plain() {
                return None; // `prefer` and `weighted` reorder records: the full path does it
            }
            shuffle_slots(answer, &walked)?
        } else {
            (Vec::new(), 0)
        };
        let map = &mut self.entries[usize::from(cd)];
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        let hit = Hit {
            reply: reply.into(),
            ttls: walked.ttls.into(),
            shuffle: shuffle.into(),
            rdata_len,
            forwarding: forwarding.clone(),
            stamp: entry.stamp(),
            seen,
            changes: changes.into(),
            entry,
            outcome,
        };
        map.insert(key.bytes().into(), hit);
        Some(())
    }
}

/// Sets every TTL at `ttls` to `left`.
fn patch_ttls(out: &mut [u8], ttls: &[u16], left: u32) -> Option<()> {
    for at in ttls.iter().map(|t| usize::from(*t)) {
        out.get_mut(at..at + 4)?.copy_from_slice(&left.to_be_bytes());
    }
    Some(())
}

/// The request's CD bit.
fn cd(packet: &[u8]) -> Option<bool> {
    Some(packet.get(3)? & 0x10 != 0)
}

/// The request's question (rare paths only: learning, prefetch).
fn question(packet: &[u8]) -> Option<Query> {
    Query::read(&mut BinDecoder::new(packet.get(12..)?)).ok()
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// What [`walk`] finds in a reply.
#[derive(Debug, Default, PartialEq, Eq)]
struct Walked {
    ttls: Vec<u16>,
    /// Answer-section A and AAAA records: (TTL offset, type).
    addresses: Vec<(u16, RecordType)>,
}

/// Walks a reply's records: where every TTL is (OPT's TTL field holds
/// EDNS flags, not a TTL) and the answer section's addresses. `None` for a
/// reply that does not parse to its end.
fn walk(reply: &[u8]) -> Option<Walked> {
    let mut records = Records::of(reply)?;
    let mut walked = Walked::default();
    for rr in records.by_ref() {
        let (rtype, ttl) = (RecordType::from(rr.rtype), u16::try_from(rr.fixed + 4).ok()?);
        if rtype != RecordType::OPT {
            walked.ttls.push(ttl);
        }
        if rr.section == Section::Answer && matches!(rtype, RecordType::A | RecordType::AAAA) {
            walked.addresses.push((ttl, rtype));
        }
    }
    (records.end() == Some(reply.len())).then_some(walked)
}

/// `loadbalance`'s shuffle as byte swaps: the answer's addresses trade
/// their (TTL, RDATA), which is the same as trading whole records when
/// they share one owner and one type. `None` when they do not (the
/// question is then never replayed).
fn shuffle_slots(answer: &Answer, walked: &Walked) -> Option<(Vec<u16>, u16)> {
    let addresses: Vec<_> = answer
        .answers
        .iter()
        .filter(|r| matches!(r.record_type(), RecordType::A | RecordType::AAAA))
        .collect();
    if addresses.len() < 2 {
        return Some((Vec::new(), 0));
    }
    let first = addresses[0];
    let alike = addresses
        .iter()
        .all(|r| r.name == first.name && r.record_type() == first.record_type());
    if !alike || walked.addresses.len() != addresses.len() {
        return None;
    }
    let rdata_len = if first.record_type() == RecordType::A { 4 } else { 16 };
    Some((walked.addresses.iter().map(|(at, _)| *at).collect(), rdata_len))
}

/// Fisher-Yates over the slots: each trades its 4-byte TTL, 2-byte length
/// and `rdata_len` bytes of RDATA.
fn shuffle(out: &mut [u8], slots: &[u16], rdata_len: usize) {
    let span = 6 + rdata_len;
    crate::query::reply::shuffle(slots.len(), |k, j| {
        let (a, b) = (usize::from(slots[k]), usize::from(slots[j]));
        if a == b || a.max(b) + span > out.len() {
            return;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let (head, tail) = out.split_at_mut(hi);
        head[lo..lo + span].swap_with_slice(&mut tail[..span]);
    });
}

#[cfg(test)]
mod tests;
