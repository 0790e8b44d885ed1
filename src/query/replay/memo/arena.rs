//! The memo's storage: every entry as one record in a ring of bytes, and
//! a map from the key's 64-bit fingerprint to where the record lies. No
//! entry owns a heap allocation, so dropping one, or all, frees nothing.
//!
//! A record is, in this order: the key's and the reply's lengths (2 bytes
//! each), the caller's `H` bytes read on every hit (its `Meta`), the key,
//! the reply, and the caller's `T` bytes read rarely (its `Deps`). A hit
//! thus reads one contiguous run of the ring after one small index slot
//! (8-byte fingerprint, 8-byte place, [`super::table`]), instead of a
//! bucket holding the whole record and then the ring's bytes elsewhere.
//!
//! New records are written at the head of the ring; when the head reaches
//! the end it wraps to the start (a new lap) and overwrites the oldest
//! bytes. An index entry is alive while its bytes were not overwritten:
//! written in this lap, or in the previous one at or past the head. Dead
//! index entries are dropped when met, or swept when the map is full.

use super::table::Table;

/// Where a record lies: its offset (low 32 bits) and the lap it was
/// written in (high 32 bits).
#[derive(Debug, Clone, Copy)]
struct Place(u64);

impl Place {
    fn new(at: usize, lap: u32) -> Place {
        Place(at as u64 | u64::from(lap) << 32)
    }

    fn at(self) -> usize {
        self.0 as u32 as usize
    }

    fn lap(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// The lengths' bytes at the start of a record.
const LENS: usize = 4;

/// One live record's parts, writable where a hit may update them.
pub(super) struct Entry<'a, const H: usize, const T: usize> {
    pub head: &'a mut [u8; H],
    pub reply: &'a mut [u8],
    pub tail: &'a [u8; T],
}

/// Byte ring plus index; every record carries `H` bytes before its key
/// and `T` after its reply, the caller's.
pub(super) struct Arena<const H: usize, const T: usize> {
    index: Table,
    /// Entries the index holds at most (dead entries go first, then all).
    max: usize,
    bytes: Vec<u8>,
    /// Bytes before the ring wraps (it grows to this on first use).
    capacity: usize,
    head: usize,
    lap: u32,
}

impl<const H: usize, const T: usize> Arena<H, T> {
    /// A ring of `capacity` bytes indexing at most `max` entries.
    pub(super) fn new(capacity: usize, max: usize) -> Self {
        Arena {
            index: Table::new(max),
            max,
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

    fn alive(place: Place, head: usize, lap: u32) -> bool {
        place.lap() == lap || (place.lap().wrapping_add(1) == lap && place.at() >= head)
    }

    /// The entry of `key` (fingerprint `fp`). A dead entry, or another key
    /// with the same fingerprint, is a miss.
    pub(super) fn get(&mut self, fp: u64, key: &[u8]) -> Option<Entry<'_, H, T>> {
        let place = Place(self.index.get(fp)?);
        let found = Self::alive(place, self.head, self.lap)
            .then(|| Self::split(self.bytes.get_mut(place.at()..)?, key.len()))
            .flatten()
            .filter(|(_, k, ..)| *k == key);
        let Some((head, _, reply, tail)) = found else {
            self.index.remove(fp);
            return None;
        };
        Some(Entry { head, reply, tail })
    }

    /// The record starting `rec`'s bytes, if its key is `key_len` long:
    /// head, key, reply, tail.
    #[allow(clippy::type_complexity)]
    fn split(rec: &mut [u8], key_len: usize) -> Option<(&mut [u8; H], &[u8], &mut [u8], &[u8; T])> {
        let lens = rec.get(..LENS)?;
        if usize::from(u16::from_le_bytes([lens[0], lens[1]])) != key_len {
            return None;
        }
        let reply_len = usize::from(u16::from_le_bytes([lens[2], lens[3]]));
        let rest = rec.get_mut(LENS..LENS + H + key_len + reply_len + T)?;
        let (head, rest) = rest.split_at_mut(H);
        let (key, rest) = rest.split_at_mut(key_len);
        let (reply, tail) = rest.split_at_mut(reply_len);
        Some((head.try_into().ok()?, key, reply, (&*tail).try_into().ok()?))
    }

    pub(super) fn remove(&mut self, fp: u64) {
        self.index.remove(fp);
    }

    /// Stores a record of `head`, `key`, `reply` and `tail` under `fp`,
    /// replacing any entry there (dead entries go first when the index is
    /// full, then all).
    pub(super) fn insert(&mut self, fp: u64, (head, tail): (&[u8; H], &[u8; T]), key: &[u8], reply: &[u8]) {
        let (Ok(key_len), Ok(reply_len)) = (u16::try_from(key.len()), u16::try_from(reply.len())) else {
            return;
        };
        let need = LENS + H + key.len() + reply.len() + T;
        if need > self.capacity {
            return;
        }
        if self.index.len() >= self.max {
            let (head, lap) = (self.head, self.lap);
            self.index.retain(|p| Self::alive(Place(p), head, lap));
            if self.index.len() >= self.max {
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
        let parts: [&[u8]; 5] = [&key_len.to_le_bytes(), &reply_len.to_le_bytes(), head, key, reply];
        let mut to = at;
        for part in parts.into_iter().chain([&tail[..]]) {
            self.bytes[to..to + part.len()].copy_from_slice(part);
            to += part.len();
        }
        self.head += need;
        self.index.insert(fp, Place::new(at, self.lap).0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(a: &mut Arena<1, 1>, fp: u64, key: &[u8], reply: &[u8]) {
        a.insert(fp, (&[fp as u8], &[!(fp as u8)]), key, reply);
    }

    fn got(a: &mut Arena<1, 1>, fp: u64, key: &[u8]) -> Option<(u8, Vec<u8>, u8)> {
        a.get(fp, key).map(|e| (e.head[0], e.reply.to_vec(), e.tail[0]))
    }

    #[test]
    fn entries_live_until_their_bytes_are_overwritten() {
        let mut a: Arena<1, 1> = Arena::new(120, 10); // records of 4 + 1 + 2 + 26 + 1 = 34
        put(&mut a, 1, b"k1", &[1; 26]); // 0..34
        put(&mut a, 2, b"k2", &[2; 26]); // 34..68
        put(&mut a, 3, b"k3", &[3; 26]); // 68..102
        assert_eq!(got(&mut a, 1, b"k1"), Some((1, vec![1; 26], !1)));
        assert!(got(&mut a, 1, b"xx").is_none(), "same fingerprint, other key: a miss");
        put(&mut a, 4, b"k4", &[4; 26]); // wraps: 0..34, over k1
        assert!(got(&mut a, 1, b"k1").is_none(), "overwritten");
        assert!(got(&mut a, 2, b"k2").is_some() && got(&mut a, 3, b"k3").is_some());
        assert_eq!(got(&mut a, 4, b"k4").map(|e| e.0), Some(4));
        put(&mut a, 5, b"k5", &[5; 26]); // 34..68, over k2
        assert!(got(&mut a, 2, b"k2").is_none(), "overwritten");
        assert!(got(&mut a, 3, b"k3").is_some());
        put(&mut a, 6, b"k6", &[6; 26]); // 68..102, over k3
        assert!(got(&mut a, 3, b"k3").is_none());
        assert_eq!(got(&mut a, 6, b"k6").map(|e| e.1[0]), Some(6));
    }

    #[test]
    fn a_full_index_sweeps_the_dead_then_empties() {
        let mut a: Arena<1, 1> = Arena::new(1000, 4);
        for i in 0..4u8 {
            put(&mut a, u64::from(i) + 1, &[i], &[i; 9]);
        }
        assert_eq!(a.len(), 4);
        put(&mut a, 9, b"n", &[9; 9]);
        assert_eq!(a.len(), 1, "every entry alive: all dropped");
        assert!(got(&mut a, 9, b"n").is_some());
        assert!(got(&mut a, 1, &[0]).is_none());
        put(&mut a, 10, &[0; 2000], &[]);
        assert!(got(&mut a, 10, &[0; 2000]).is_none(), "larger than the ring: not kept");
    }

    #[test]
    fn writes_to_a_hit_stay_in_its_record() {
        let mut a: Arena<1, 1> = Arena::new(1000, 10);
        put(&mut a, 1, b"k1", &[1; 4]);
        put(&mut a, 2, b"k2", &[2; 4]);
        let e = a.get(1, b"k1").expect("hit");
        (e.head[0], e.reply[3]) = (7, 8);
        assert_eq!(got(&mut a, 1, b"k1"), Some((7, vec![1, 1, 1, 8], !1)));
        assert_eq!(got(&mut a, 2, b"k2"), Some((2, vec![2; 4], !2)));
        assert!(got(&mut a, 2, b"k22").is_none(), "a key of another length: a miss");
    }
}
