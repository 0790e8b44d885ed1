//! Which entry a full cache shard gives up for a new one.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::time::Instant;

/// Entries of the full kind looked at to choose one to evict.
const EVICTION_SAMPLE: usize = 8;

/// The entry of the kind to evict from a full shard: the first expired
/// one among the first [`EVICTION_SAMPLE`] of that kind in the map's
/// order (the order of their hashes), else the one of them that expires
/// first. Looking at a few rather than every entry keeps a miss's cost
/// flat when the cache is full, as it is under a stream of unique names;
/// CoreDNS evicts an arbitrary entry. `end` is when an entry of the kind
/// expires (`None`: another kind).
pub(super) fn victim<K: Clone, E, S: BuildHasher>(
    shard: &HashMap<K, E, S>,
    end: impl Fn(&E) -> Option<Instant>,
) -> Option<K> {
    let now = Instant::now();
    let mut best: Option<(&K, Instant)> = None;
    for (k, end) in shard
        .iter()
        .filter_map(|(k, e)| Some((k, end(e)?)))
        .take(EVICTION_SAMPLE)
    {
        if end <= now {
            return Some(k.clone());
        }
        if best.is_none_or(|(_, b)| end < b) {
            best = Some((k, end));
        }
    }
    best.map(|(k, _)| k.clone())
}
