//! The memo's storage: every entry's key and reply bytes in one ring of
//! bytes, and a map from the key's 64-bit fingerprint to where they lie
//! plus a small `Copy` record. No entry owns a heap allocation, so
//! dropping one, or all, frees nothing.
//!
//! New entries are written at the head of the ring; when the head reaches
//! the end it wraps to the start (a new lap) and overwrites the oldest
//! bytes. An index entry is alive while its bytes were not overwritten:
//! written in this lap, or in the previous one at or past the head. Dead
//! index entries are dropped when met, or swept when the map is full.

use crate::store::Map;

/// Where one entry's bytes lie, and its caller's record.
#[derive(Debug, Clone, Copy)]
struct Slot<M> {
    at: u32,
    lap: u32,
    key_len: u16,
    reply_len: u16,
    meta: M,
}

/// Byte ring plus index; `M` is what the caller keeps per entry.
pub(super) struct Arena<M> {
    index: Map<u64, Slot<M>>,
    bytes: Vec<u8>,
    /// Bytes before the ring wraps (it grows to this on first use).
    capacity: usize,
    head: usize,
    lap: u32,
}

impl<M: Copy> Arena<M> {
    pub(super) fn new(capacity: usize) -> Self {
        Arena {
            index: Map::default(),
            bytes: Vec::new(),
            capacity,
            head: 0,
            lap: 0,
        }
    }

    /// Index entries (some may be dead).
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    /// Forgets every entry (the bytes are reused as they are).
    pub(super) fn clear(&mut self) {
        self.index.clear();
        self.head = 0;
        self.lap = self.lap.wrapping_add(2);
    }

    fn alive(&self, slot: &Slot<M>) -> bool {
        slot.lap == self.lap || (slot.lap.wrapping_add(1) == self.lap && slot.at as usize >= self.head)
    }

    /// The entry of `key` (fingerprint `fp`): its record and reply bytes,
    /// both writable. A dead entry, or another key with the same
    /// fingerprint, is a miss.
    pub(super) fn get(&mut self, fp: u64, key: &[u8]) -> Option<(&mut M, &mut [u8])> {
        let slot = *self.index.get(&fp)?;
        let at = slot.at as usize;
        let (key_end, end) = (
            at + usize::from(slot.key_len),
            at + usize::from(slot.key_len) + usize::from(slot.reply_len),
        );
        if !self.alive(&slot) || self.bytes.get(at..key_end) != Some(key) {
            self.index.remove(&fp);
            return None;
        }
        let meta = &mut self.index.get_mut(&fp)?.meta;
        Some((meta, self.bytes.get_mut(key_end..end)?))
    }

    pub(super) fn remove(&mut self, fp: u64) {
        self.index.remove(&fp);
    }

    /// Stores `key` and `reply` under `fp`, replacing any entry there;
    /// `max_entries` bounds the index (dead entries go first, then all).
    pub(super) fn insert(&mut self, fp: u64, key: &[u8], reply: &[u8], meta: M, max_entries: usize) {
        let (Ok(key_len), Ok(reply_len)) = (u16::try_from(key.len()), u16::try_from(reply.len())) else {
            return;
        };
        let need = key.len() + reply.len();
        if need > self.capacity {
            return;
        }
        if self.index.len() >= max_entries {
            let (head, lap) = (self.head, self.lap);
            let alive = |s: &Slot<M>| s.lap == lap || (s.lap.wrapping_add(1) == lap && s.at as usize >= head);
            self.index.retain(|_, s| alive(s));
            if self.index.len() >= max_entries {
                self.clear();
            }
        }
        if self.head + need > self.capacity {
            self.head = 0;
            self.lap = self.lap.wrapping_add(1);
        }
        let at = self.head;
        if self.bytes.len() < at + need {
            self.bytes.resize(at + need, 0);
        }
        self.bytes[at..at + key.len()].copy_from_slice(key);
        self.bytes[at + key.len()..at + need].copy_from_slice(reply);
        self.head += need;
        let slot = Slot {
            at: at as u32,
            lap: self.lap,
            key_len,
            reply_len,
            meta,
        };
        self.index.insert(fp, slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_live_until_their_bytes_are_overwritten() {
        let mut a: Arena<u8> = Arena::new(100);
        a.insert(1, b"k1", &[1; 30], 1, 10); // 0..32
        a.insert(2, b"k2", &[2; 30], 2, 10); // 32..64
        a.insert(3, b"k3", &[3; 30], 3, 10); // 64..96
        assert_eq!(a.get(1, b"k1").map(|(m, r)| (*m, r.to_vec())), Some((1, vec![1; 30])));
        assert!(a.get(1, b"xx").is_none(), "same fingerprint, other key: a miss");
        a.insert(4, b"k4", &[4; 30], 4, 10); // wraps: 0..32, over k1
        assert!(a.get(1, b"k1").is_none(), "overwritten");
        assert!(a.get(2, b"k2").is_some() && a.get(3, b"k3").is_some());
        assert_eq!(a.get(4, b"k4").map(|(m, _)| *m), Some(4));
        a.insert(5, b"k5", &[5; 30], 5, 10); // 32..64, over k2
        assert!(a.get(2, b"k2").is_none(), "overwritten");
        assert!(a.get(3, b"k3").is_some());
        a.insert(6, b"k6", &[6; 30], 6, 10); // 64..96, over k3
        assert!(a.get(3, b"k3").is_none());
        assert_eq!(a.get(6, b"k6").map(|(_, r)| r[0]), Some(6));
    }

    #[test]
    fn a_full_index_sweeps_the_dead_then_empties() {
        let mut a: Arena<u8> = Arena::new(1000);
        for i in 0..4u8 {
            a.insert(u64::from(i), &[i], &[i; 9], i, 4);
        }
        assert_eq!(a.len(), 4);
        a.insert(9, b"n", &[9; 9], 9, 4);
        assert_eq!(a.len(), 1, "every entry alive: all dropped");
        assert!(a.get(9, b"n").is_some());
        assert!(a.get(0, &[0]).is_none());
        a.insert(10, &[0; 2000], &[], 0, 4);
        assert!(a.get(10, &[0; 2000]).is_none(), "larger than the ring: not kept");
    }
}
