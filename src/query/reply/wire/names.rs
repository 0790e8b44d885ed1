//! Names written with hickory's compression (see the parent module's
//! doc): each suffix looked up among the stored candidates.

use hickory_proto::rr::Name;

/// Stored compression candidates at most (hickory's limit).
pub(super) const CANDIDATES: usize = 64;
/// Names compressed at most per message (hickory's limit).
pub(super) const COMPRESSED_NAMES: usize = 120;

/// The buffer being written and its compression state.
pub(super) struct Writer<'o, 'q> {
    pub(super) out: &'o mut Vec<u8>,
    pub(super) candidates: [u16; CANDIDATES],
    pub(super) stored: usize,
    pub(super) compressed: usize,
    /// The question's name (not the root), written at offset 12: a record
    /// owned by this very name is a pointer to it, as a lookup would find.
    pub(super) question: Option<&'q Name>,
}

/// Why a message cannot be written here.
pub struct Unsupported;

impl Writer<'_, '_> {
    /// Writes `name`, compressed when `compress` (see the module doc).
    pub(super) fn name(&mut self, name: &Name, compress: bool) -> Result<(), Unsupported> {
        let begin = self.out.len();
        let compress = compress && self.compressed < COMPRESSED_NAMES;
        if compress && self.question.is_some_and(|q| std::ptr::eq(q, name)) {
            // Stored first, at 12: the lookup below would find it first.
            self.compressed += 1;
            self.u16(0xC000 | 12);
            return Ok(());
        }
        for label in name.iter() {
            if label.len() > 63 {
                return Err(Unsupported);
            }
            self.string(label)?;
        }
        let end = self.out.len();
        if compress {
            self.compressed += 1;
        }
        let mut start = begin;
        while start < end {
            if compress {
                if let Some(at) = self.lookup(start, end) {
                    self.out.truncate(start);
                    self.u16(0xC000 | at);
                    return Ok(());
                }
            }
            if end < 0x3FFF && self.stored < CANDIDATES {
                self.candidates[self.stored] = start as u16;
                self.stored += 1;
            }
            start += usize::from(self.out[start]) + 1; // the next label
        }
        self.out.push(0);
        if self.out.len() - begin > 255 {
            return Err(Unsupported);
        }
        Ok(())
    }

    /// The first stored candidate whose labels are exactly those written
    /// at `start..end`.
    fn lookup(&self, start: usize, end: usize) -> Option<u16> {
        let search = &self.out[start..end];
        self.candidates[..self.stored]
            .iter()
            .copied()
            .find(|&at| same_labels(self.out, usize::from(at), search))
    }
}

/// Whether the name at `at` in `buf` (pointers followed) has exactly the
/// labels `search` holds (uncompressed, without the root).
fn same_labels(buf: &[u8], mut at: usize, search: &[u8]) -> bool {
    let mut i = 0;
    let mut hops = 0;
    loop {
        let Some(&len) = buf.get(at) else { return false };
        if len & 0xC0 == 0xC0 {
            hops += 1;
            let Some(&low) = buf.get(at + 1) else { return false };
            if hops > 64 {
                return false;
            }
            at = usize::from(u16::from_be_bytes([len & 0x3F, low]));
            continue;
        }
        if len == 0 {
            return i == search.len();
        }
        let label = usize::from(len) + 1;
        if buf.get(at..at + label) != search.get(i..i + label) {
            return false;
        }
        (i, at) = (i + label, at + label);
    }
}
