//! The single slot holding the current snapshot: readers load it without
//! a lock, the writer publishes a new one with what it changed, and a
//! generation tells readers' memos when they are stale.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::{ArcSwap, Guard};

use super::changes::{self, Changed, Deps};
use super::snapshot::Snapshot;

/// The single slot holding the current snapshot.
pub struct Store {
    current: ArcSwap<Snapshot>,
    /// Bumped on every publish, so readers can tell their memos are stale.
    generation: AtomicU64,
    /// What each publish changed (see [`changes`]).
    changes: changes::ChangeTable,
    /// The current snapshot's SOA serial, for replayed negative answers.
    serial: AtomicU32,
    /// Serialises publishers (there is one writer; tests publish too).
    publishing: Mutex<()>,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            current: ArcSwap::from_pointee(Snapshot::unsynced()),
            generation: AtomicU64::new(0),
            changes: changes::ChangeTable::default(),
            serial: AtomicU32::new(0),
            publishing: Mutex::new(()),
        }
    }
}

impl Store {
    /// The current snapshot; lock-free, for one query.
    pub fn load(&self) -> Guard<Arc<Snapshot>> {
        self.current.load()
    }

    /// Replaces the current snapshot atomically; every answer derived
    /// from an older one is stale.
    pub fn publish(&self, snapshot: Snapshot) {
        let mut all = Changed::default();
        all.everything();
        self.publish_changes(snapshot, &all);
    }

    /// Replaces the current snapshot atomically; answers derived from an
    /// older one stay exact unless they depend on something in `changed`.
    /// The change table and serial are written before the generation is
    /// bumped (Release), so a reader that sees the new generation sees them.
    pub fn publish_changes(&self, snapshot: Snapshot, changed: &Changed) {
        let _one = self
            .publishing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let next = self.generation.load(Ordering::Relaxed) + 1;
        self.changes.record(next, changed);
        self.serial.store(snapshot.serial, Ordering::Release);
        self.current.store(Arc::new(snapshot));
        self.generation.store(next, Ordering::Release);
    }

    /// How many snapshots have been published.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Whether an answer built from generation `generation` (or a newer
    /// snapshot) and depending on `deps` is still exact at the generation
    /// the caller read last.
    pub fn unchanged_since(&self, generation: u64, deps: &Deps) -> bool {
        self.changes.unchanged_since(generation, deps)
    }

    /// The SOA serial of the latest published snapshot.
    pub fn serial(&self) -> u32 {
        self.serial.load(Ordering::Acquire)
    }

    /// Whether the first full sync has happened.
    pub fn synced(&self) -> bool {
        self.current.load().synced
    }
}
