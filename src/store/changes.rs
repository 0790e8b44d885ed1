//! What each publish changed, so that readers keeping answers derived
//! from older snapshots (the query path's memo) drop only those a change
//! touched instead of all of them.
//!
//! An answer declares what it read as [`Deps`]: a few [`Dep`] keys (a
//! namespace's existence, one Service's records, one address's PTR
//! targets, one pod address in a namespace) or "everything" (the default,
//! for any answer that does not say). The writer collects the keys each
//! change touches in [`Changed`]; at publish the store writes the new
//! generation into the [`ChangeTable`] slot of every such key, before the
//! generation itself becomes visible. An answer built at generation `g`
//! is still exact at a later one iff none of its keys' slots (nor the
//! "everything" slot) is newer than `g`. Keys are 32-bit hashes and share
//! slots: a collision only drops an answer that was still good.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Slots of the change table (8 bytes each: 128 KiB per store).
const SLOTS: usize = 16_384;

/// Keys one publish records before it counts as "everything changed" (a
/// relist or a first sync touches more than a memo could gain from).
const MAX_KEYS: usize = 4096;

/// Keys one answer holds before it depends on everything.
const MAX_DEPS: usize = 4;

/// One thing an answer depends on: a hash of what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dep(u32);

fn hash(value: impl std::hash::Hash) -> Dep {
    const SEED: u64 = 0x6d65_6d6f_6465_7073;
    let h = std::hash::BuildHasher::hash_one(&foldhash::fast::FixedState::with_seed(SEED), value);
    Dep((h ^ (h >> 32)) as u32)
}

impl Dep {
    /// Whether namespace `ns` exists (`<ns>.svc`, `<ns>.pod`, NXDOMAIN
    /// expansions).
    pub fn namespace(ns: &str) -> Dep {
        hash((0u8, ns))
    }

    /// Everything of one Service and its EndpointSlices (its names, ports,
    /// endpoints, hostnames).
    pub fn service(ns: &str, name: &str) -> Dep {
        hash((1u8, ns, name))
    }

    /// The PTR targets of one address.
    pub fn ptr(addr: IpAddr) -> Dep {
        hash((2u8, addr))
    }

    /// Whether a pod in `ns` has `addr` (`pods verified`).
    pub fn pod(ns: &str, addr: IpAddr) -> Dep {
        hash((3u8, ns, addr))
    }

    /// Everything of one ServiceImport and its clusters' slices (the
    /// names of a `multicluster` zone).
    pub fn import(ns: &str, name: &str) -> Dep {
        hash((4u8, ns, name))
    }

    /// Whether namespace `ns` holds an import (`<ns>.svc` of a
    /// `multicluster` zone).
    pub fn import_namespace(ns: &str) -> Dep {
        hash((5u8, ns))
    }

    fn slot(self) -> usize {
        self.0 as usize % SLOTS
    }
}

/// What one answer depends on: a few keys, or everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deps {
    keys: [Dep; MAX_DEPS],
    /// [`Deps::EVERYTHING`]'s `len` marks "everything".
    len: u8,
}

impl Default for Deps {
    fn default() -> Self {
        Deps::EVERYTHING
    }
}

impl Deps {
    /// Depends on the whole snapshot: any change drops the answer.
    pub const EVERYTHING: Deps = Deps {
        keys: [Dep(0); MAX_DEPS],
        len: u8::MAX,
    };

    /// Depends on nothing in the store (only on the configuration).
    pub const NONE: Deps = Deps {
        keys: [Dep(0); MAX_DEPS],
        len: 0,
    };

    pub fn is_everything(&self) -> bool {
        self.len == u8::MAX
    }

    /// Adds `dep` (more than a few make it "everything").
    pub fn add(&mut self, dep: Dep) {
        if self.is_everything() || self.keys().contains(&dep) {
            return;
        }
        match self.keys.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = dep;
                self.len += 1;
            }
            None => *self = Deps::EVERYTHING,
        }
    }

    /// Adds what `other` depends on.
    pub fn union(&mut self, other: &Deps) {
        if other.is_everything() {
            *self = Deps::EVERYTHING;
        }
        other.keys().iter().for_each(|d| self.add(*d));
    }

    /// The keys (none when "everything").
    pub fn keys(&self) -> &[Dep] {
        self.keys.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// Bytes of [`Deps::to_bytes`]: the keys, then the count.
    pub const BYTES: usize = 4 * MAX_DEPS + 1;

    /// The deps as bytes, for readers that keep them beside other bytes.
    pub fn to_bytes(&self) -> [u8; Deps::BYTES] {
        let mut b = [0; Deps::BYTES];
        for (at, key) in b.chunks_exact_mut(4).zip(self.keys) {
            at.copy_from_slice(&key.0.to_le_bytes());
        }
        b[Deps::BYTES - 1] = self.len;
        b
    }

    /// The deps [`Deps::to_bytes`] wrote (a count it never writes reads
    /// as "everything").
    pub fn from_bytes(b: &[u8; Deps::BYTES]) -> Deps {
        let len = b[Deps::BYTES - 1];
        if usize::from(len) > MAX_DEPS {
            return Deps::EVERYTHING;
        }
        let mut keys = [Dep(0); MAX_DEPS];
        for (key, at) in keys.iter_mut().zip(b.chunks_exact(4)) {
            *key = Dep(u32::from_le_bytes([at[0], at[1], at[2], at[3]]));
        }
        Deps { keys, len }
    }
}

/// The keys the writer changed since its last publish.
#[derive(Debug, Default)]
pub struct Changed {
    keys: Vec<Dep>,
    everything: bool,
}

impl Changed {
    pub fn add(&mut self, dep: Dep) {
        if self.everything {
            return;
        }
        if self.keys.len() >= MAX_KEYS {
            self.everything();
        } else {
            self.keys.push(dep);
        }
    }

    /// Marks the whole snapshot as changed.
    pub fn everything(&mut self) {
        self.everything = true;
        self.keys = Vec::new();
    }

    pub fn is_empty(&self) -> bool {
        !self.everything && self.keys.is_empty()
    }
}

/// For every slot, the generation at which a key in it last changed.
pub struct ChangeTable {
    slots: Box<[AtomicU64]>,
    everything: AtomicU64,
}

impl Default for ChangeTable {
    fn default() -> Self {
        ChangeTable {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            everything: AtomicU64::new(0),
        }
    }
}

impl ChangeTable {
    /// Records that `changed` happened at `generation`; the caller makes
    /// `generation` visible (with Release) only afterwards.
    pub fn record(&self, generation: u64, changed: &Changed) {
        if changed.everything {
            self.everything.store(generation, Ordering::Release);
        }
        for dep in &changed.keys {
            self.slots[dep.slot()].store(generation, Ordering::Release);
        }
    }

    /// Whether nothing `deps` names changed after `generation`, as far as
    /// the generations already seen by the caller (read with Acquire
    /// before this call) go: a change after them may show too, which only
    /// makes the answer stale early.
    pub fn unchanged_since(&self, generation: u64, deps: &Deps) -> bool {
        let at = |slot: &AtomicU64| slot.load(Ordering::Acquire) <= generation;
        !deps.is_everything() && at(&self.everything) && deps.keys().iter().all(|d| at(&self.slots[d.slot()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(keys: &[Dep]) -> Changed {
        let mut c = Changed::default();
        keys.iter().for_each(|k| c.add(*k));
        c
    }

    #[test]
    fn an_answer_stays_valid_until_one_of_its_keys_changes() {
        let table = ChangeTable::default();
        let (a, b) = (Dep::service("shop", "a"), Dep::service("shop", "b"));
        let mut deps = Deps::NONE;
        deps.add(a);
        deps.add(Dep::namespace("shop"));
        table.record(1, &changed(&[b]));
        assert!(table.unchanged_since(0, &deps), "b's change leaves a's answer");
        table.record(2, &changed(&[a]));
        assert!(!table.unchanged_since(1, &deps), "a changed at 2");
        assert!(table.unchanged_since(2, &deps), "an answer built at 2 saw it");
        assert!(!table.unchanged_since(5, &Deps::EVERYTHING), "everything is never kept");
        let mut all = Changed::default();
        all.everything();
        table.record(3, &all);
        assert!(!table.unchanged_since(2, &deps), "a bulk change drops every answer");
        assert!(table.unchanged_since(3, &Deps::NONE));
    }

    #[test]
    fn deps_dedupe_and_overflow_to_everything() {
        let mut deps = Deps::NONE;
        deps.add(Dep::namespace("a"));
        deps.add(Dep::namespace("a"));
        assert_eq!(deps.keys().len(), 1);
        for i in 0..MAX_DEPS {
            deps.add(Dep::service("a", &i.to_string()));
        }
        assert!(deps.is_everything());
        assert!(deps.keys().is_empty());
        assert_ne!(Dep::service("a", "b"), Dep::service("b", "a"));
        assert_ne!(
            Dep::ptr("10.0.0.1".parse().expect("ip")),
            Dep::ptr("10.0.0.2".parse().expect("ip"))
        );
    }

    #[test]
    fn a_huge_publish_counts_as_everything() {
        let mut c = Changed::default();
        for i in 0..=MAX_KEYS {
            c.add(Dep::service("ns", &i.to_string()));
        }
        assert!(c.everything && c.keys.is_empty());
    }

    #[test]
    fn deps_round_trip_through_bytes() {
        let mut two = Deps::NONE;
        two.add(Dep::namespace("a"));
        two.add(Dep::service("a", "b"));
        for d in [Deps::NONE, Deps::EVERYTHING, two] {
            assert_eq!(Deps::from_bytes(&d.to_bytes()), d);
        }
        let mut bad = two.to_bytes();
        bad[Deps::BYTES - 1] = 7;
        assert!(Deps::from_bytes(&bad).is_everything());
    }
}
