//! A persistent multimap keyed by IP address, packed for size: the reverse
//! (PTR) index holds one entry per cluster IP and per endpoint, the
//! biggest table of a large cluster.
//!
//! Entries live in [`SHARDS`] shards chosen by a hash of the address; a
//! shard is two sorted vectors (IPv4 keys as `u32`, IPv6 as bytes), so an
//! IPv4 entry of the reverse index costs 16 bytes with no per-entry node.
//! A copy of the index is O(1) (one `Arc`); the writer's first edit of a
//! shard after a publish copies that shard (a few hundred entries at
//! 100,000 Services) and the shard table, never the whole index.
//! (The persistent hash map used before spent 88 bytes per entry:
//! 53 MB against 19 MB at 100,000 Services × 5 endpoints.)

use std::net::IpAddr;
use std::sync::Arc;

/// Shards per index: at 600,000 entries a shard holds about 300, so the
/// copy an edit makes stays near 10 KB, and the table itself is 16 KB.
const SHARDS: usize = 2048;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Shard<V> {
    v4: Vec<(u32, V)>,
    v6: Vec<([u8; 16], V)>,
    /// Filled by [`AddrIndex::push`] and not yet sorted: only while the
    /// writer builds its first snapshot, never in a published one.
    unsorted: bool,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Shard {
            v4: Vec::new(),
            v6: Vec::new(),
            unsorted: false,
        }
    }
}

impl<V: Ord> Shard<V> {
    /// Sorts a shard filled in bulk and gives back the room its growth
    /// left (up to half of it: a build pushes without knowing the count).
    fn sort(&mut self) {
        self.v4.sort_unstable();
        self.v6.sort_unstable();
        self.v4.shrink_to_fit();
        self.v6.shrink_to_fit();
        self.unsorted = false;
    }
}

/// Address → values, a multiset per address (the same value may be held
/// twice and is removed once per removal). Values of one address are kept
/// in order, so answers are stable.
#[derive(Debug, Clone)]
pub struct AddrIndex<V> {
    shards: Arc<Vec<Arc<Shard<V>>>>,
}

impl<V> Default for AddrIndex<V> {
    fn default() -> Self {
        let empty = Arc::new(Shard::default());
        AddrIndex {
            shards: Arc::new(vec![empty; SHARDS]),
        }
    }
}

fn shard_of(addr: IpAddr) -> usize {
    let folded = match addr {
        IpAddr::V4(v4) => u64::from(v4.to_bits()),
        IpAddr::V6(v6) => {
            let bits = v6.to_bits();
            (bits as u64) ^ ((bits >> 64) as u64)
        }
    };
    // Fibonacci hashing: consecutive pod IPs land in different shards.
    (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % SHARDS
}

/// The range of entries with key `key` in a vector sorted by key.
fn range<K: Ord, V>(entries: &[(K, V)], key: &K) -> std::ops::Range<usize> {
    let start = entries.partition_point(|(k, _)| k < key);
    let end = start + entries[start..].partition_point(|(k, _)| k == key);
    start..end
}

/// Inserts keeping (key, value) order; grows by an eighth instead of
/// doubling, since a shard copied by the writer starts exactly full.
fn insert<K: Ord + Copy, V: Ord>(entries: &mut Vec<(K, V)>, key: K, value: V) {
    let at = entries.partition_point(|(k, v)| (k, v) < (&key, &value));
    if entries.len() == entries.capacity() {
        entries.reserve_exact(entries.len() / 8 + 1);
    }
    entries.insert(at, (key, value));
}

fn remove<K: Ord, V: PartialEq>(entries: &mut Vec<(K, V)>, key: &K, value: &V) {
    let r = range(entries, key);
    if let Some(i) = entries[r.clone()].iter().position(|(_, v)| v == value) {
        entries.remove(r.start + i);
    }
}

impl<V: Clone + Ord> AddrIndex<V> {
    /// The values held for `addr`, in order.
    pub fn get(&self, addr: IpAddr) -> impl Iterator<Item = &V> {
        let shard = &self.shards[shard_of(addr)];
        let (v4, v6) = match addr {
            IpAddr::V4(a) => (range(&shard.v4, &a.to_bits()), 0..0),
            IpAddr::V6(a) => (0..0, range(&shard.v6, &a.octets())),
        };
        shard.v4[v4]
            .iter()
            .map(|(_, v)| v)
            .chain(shard.v6[v6].iter().map(|(_, v)| v))
    }

    fn shard_mut(&mut self, addr: IpAddr) -> &mut Shard<V> {
        Arc::make_mut(&mut Arc::make_mut(&mut self.shards)[shard_of(addr)])
    }

    /// Adds one `value` for `addr`.
    pub fn insert(&mut self, addr: IpAddr, value: V) {
        let shard = self.shard_mut(addr);
        match addr {
            IpAddr::V4(a) => insert(&mut shard.v4, a.to_bits(), value),
            IpAddr::V6(a) => insert(&mut shard.v6, a.octets(), value),
        }
    }

    /// Adds one `value` for `addr` without keeping the shard sorted: for
    /// building a first snapshot in bulk (a sorted insert moves half a
    /// shard each time). [`AddrIndex::sort`] must follow before any lookup.
    pub fn push(&mut self, addr: IpAddr, value: V) {
        let shard = self.shard_mut(addr);
        match addr {
            IpAddr::V4(a) => shard.v4.push((a.to_bits(), value)),
            IpAddr::V6(a) => shard.v6.push((a.octets(), value)),
        }
        shard.unsorted = true;
    }

    /// Sorts the shards [`AddrIndex::push`] filled.
    pub fn sort(&mut self) {
        for i in 0..SHARDS {
            if self.shards[i].unsorted {
                Arc::make_mut(&mut Arc::make_mut(&mut self.shards)[i]).sort();
            }
        }
    }

    /// Removes one `value` of `addr`, if held.
    pub fn remove(&mut self, addr: IpAddr, value: &V) {
        if self.shards[shard_of(addr)].unsorted {
            self.shard_mut(addr).sort();
        }
        if !self.get(addr).any(|v| v == value) {
            return; // no copy of the shard for nothing
        }
        let shard = self.shard_mut(addr);
        match addr {
            IpAddr::V4(a) => remove(&mut shard.v4, &a.to_bits(), value),
            IpAddr::V6(a) => remove(&mut shard.v6, &a.octets(), value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("valid ip")
    }

    #[test]
    fn multiset_per_address_in_order() {
        let mut idx = AddrIndex::default();
        idx.insert(ip("10.0.0.1"), "b");
        idx.insert(ip("10.0.0.1"), "a");
        idx.insert(ip("10.0.0.1"), "b");
        idx.insert(ip("fd00::1"), "c");
        idx.insert(ip("10.0.0.2"), "d");
        assert_eq!(idx.get(ip("10.0.0.1")).copied().collect::<Vec<_>>(), ["a", "b", "b"]);
        assert_eq!(idx.get(ip("fd00::1")).copied().collect::<Vec<_>>(), ["c"]);
        idx.remove(ip("10.0.0.1"), &"b");
        idx.remove(ip("10.0.0.1"), &"zzz");
        assert_eq!(idx.get(ip("10.0.0.1")).copied().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(idx.get(ip("10.0.0.3")).count(), 0);
    }

    #[test]
    fn copies_are_independent() {
        let mut idx = AddrIndex::default();
        for i in 0..10_000u32 {
            idx.insert(IpAddr::V4(i.into()), i);
        }
        let before = idx.clone();
        idx.remove(IpAddr::V4(7u32.into()), &7);
        idx.insert(ip("::7"), 7);
        assert_eq!(before.get(IpAddr::V4(7u32.into())).count(), 1);
        assert_eq!(idx.get(IpAddr::V4(7u32.into())).count(), 0);
        assert_eq!(before.get(ip("::7")).count(), 0);
        assert_eq!(idx.get(ip("::7")).count(), 1);
        // Only the edited shards were copied.
        let shared = (0..SHARDS)
            .filter(|i| Arc::ptr_eq(&before.shards[*i], &idx.shards[*i]))
            .count();
        assert!(shared >= SHARDS - 2, "{shared}");
    }

    #[test]
    fn pushed_in_bulk_then_sorted_equals_inserted() {
        let (mut bulk, mut sorted) = (AddrIndex::default(), AddrIndex::default());
        for i in (0..5_000u32).rev() {
            let (addr, value) = (IpAddr::V4((i % 700).into()), i % 3);
            bulk.push(addr, value);
            sorted.insert(addr, value);
        }
        bulk.remove(IpAddr::V4(5u32.into()), &2);
        sorted.remove(IpAddr::V4(5u32.into()), &2);
        bulk.sort();
        for i in 0..700u32 {
            let addr = IpAddr::V4(i.into());
            assert!(bulk.get(addr).eq(sorted.get(addr)), "{addr}");
        }
    }
}
