//! The arena's index: fingerprint → place, as one power-of-two array of
//! 16-byte slots (fingerprint and place side by side) probed linearly,
//! so a lookup reads one cache line where a map with separate control
//! bytes reads two. A fingerprint of 0 marks an empty slot (the memo's
//! fingerprints are odd; a 0 given here is stored as 1). Removal shifts
//! the probe run back over the hole, so no tombstones build up and every
//! lookup ends at the first empty slot.

/// Fingerprint → place, at most `capacity` entries (the caller bounds it).
pub(super) struct Table {
    /// `[fingerprint, place]`; allocated zeroed (empty) on first insert.
    slots: Box<[[u64; 2]]>,
    len: usize,
    /// Slots once allocated: a power of two above the capacity / 0.7.
    size: usize,
}

impl Table {
    /// A table for up to `capacity` entries (allocated on first insert).
    pub(super) fn new(capacity: usize) -> Table {
        Table {
            slots: Box::new([]),
            len: 0,
            size: (capacity.max(1) * 10 / 7 + 1).next_power_of_two(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Where `fp`'s probe starts. Fingerprints are hashes already: their
    /// low bits, with a higher run mixed in (the memo's low bit is fixed).
    fn home(&self, fp: u64) -> usize {
        (fp ^ (fp >> 29)) as usize & (self.slots.len() - 1)
    }

    /// The slot holding `fp`, if any.
    fn find(&self, fp: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(fp);
        loop {
            match self.slots[i][0] {
                0 => return None,
                f if f == fp => return Some(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    pub(super) fn get(&self, fp: u64) -> Option<u64> {
        let fp = fp.max(1);
        self.find(fp).map(|i| self.slots[i][1])
    }

    /// Sets `fp`'s place; the caller keeps `len` below the capacity given.
    pub(super) fn insert(&mut self, fp: u64, place: u64) {
        let fp = fp.max(1);
        if self.slots.is_empty() {
            self.slots = vec![[0; 2]; self.size].into_boxed_slice();
        }
        if self.len + 1 >= self.slots.len() {
            return; // full: only a caller past its bound gets here
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(fp);
        while self.slots[i][0] != 0 && self.slots[i][0] != fp {
            i = (i + 1) & mask;
        }
        self.len += usize::from(self.slots[i][0] == 0);
        self.slots[i] = [fp, place];
    }

    pub(super) fn remove(&mut self, fp: u64) {
        if let Some(i) = self.find(fp.max(1)) {
            self.remove_at(i);
        }
    }

    /// Empties slot `hole`, moving back each later entry of its probe run
    /// that may sit there (one whose home is not after the hole).
    fn remove_at(&mut self, mut hole: usize) {
        let mask = self.slots.len() - 1;
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let fp = self.slots[next][0];
            if fp == 0 {
                break;
            }
            let home = self.home(fp);
            // `next` may move to `hole` when `hole` lies on its probe
            // path: from its home, the hole comes no later than `next`.
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.slots[hole] = self.slots[next];
                hole = next;
            }
        }
        self.slots[hole] = [0; 2];
        self.len -= 1;
    }

    /// Forgets every entry (keeping the slots).
    pub(super) fn clear(&mut self) {
        self.slots.fill([0; 2]);
        self.len = 0;
    }

    /// Keeps only the entries whose place `keep` accepts.
    pub(super) fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let kept: Vec<[u64; 2]> = self.slots.iter().copied().filter(|s| s[0] != 0 && keep(s[1])).collect();
        self.clear();
        kept.into_iter().for_each(|[fp, place]| self.insert(fp, place));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Same answers as a `HashMap` through a long run of inserts,
    /// overwrites and removals, with fingerprints crowded into a few
    /// homes (long probe runs that wrap around the end).
    #[test]
    fn behaves_as_a_map_under_collisions_and_wraparound() {
        let mut table = Table::new(40);
        let mut map = HashMap::new();
        let size = table.size as u64;
        let mut x = 0x1234_5678_u64;
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // homes near the end of the array, so runs wrap to its start
            let fp = (size - 1 - x % 3) | (x % 5) << 40;
            match x % 7 {
                0..=2 if map.len() + 1 < 40 || map.contains_key(&fp) => {
                    table.insert(fp, step);
                    map.insert(fp, step);
                }
                3 | 4 => {
                    table.remove(fp);
                    map.remove(&fp);
                }
                _ => {}
            }
            assert_eq!(table.get(fp), map.get(&fp).copied(), "step {step}");
            assert_eq!(table.len(), map.len());
        }
        for (fp, place) in &map {
            assert_eq!(table.get(*fp), Some(*place));
        }
    }

    #[test]
    fn full_retained_and_cleared() {
        let mut table = Table::new(4);
        assert_eq!(table.get(1), None, "empty before the first insert");
        for fp in 1..=20 {
            table.insert(fp, fp * 10);
        }
        assert_eq!(table.len(), table.size - 1, "never fills its last slot");
        assert_eq!(table.get(3), Some(30));
        table.retain(|place| place % 20 == 0);
        assert_eq!(table.len(), (table.size - 1) / 2);
        assert_eq!((table.get(3), table.get(4)), (None, Some(40)));
        table.clear();
        assert_eq!((table.len(), table.get(4)), (0, None));
        table.insert(0, 7);
        assert_eq!(table.get(0), Some(7), "0 is stored as 1");
    }
}
