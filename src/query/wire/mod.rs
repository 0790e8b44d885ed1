//! Replies written straight into the output buffer, byte for byte what
//! hickory's encoder writes for the same [`Answer`], without its
//! per-name allocations (a `Vec` of label offsets per name, a copy of
//! every stored compression candidate, the OPT record's option list).
//!
//! Names are compressed exactly as hickory does it, so a reply is the same
//! whichever writer made it (the memo patches the question's spelling
//! into answers that point at it; truncation judges sizes compressed):
//! a name's labels are written whole, then each suffix, longest first, is
//! looked up among the stored candidates (exact bytes, first stored
//! wins) and replaced by a pointer at the first hit; each suffix missed
//! on the way is stored (at most [`CANDIDATES`], while below offset
//! 0x3FFF). RDATA names of CNAME, PTR, NS and SOA are compressed; an SRV
//! target is not (RFC 2782), but its suffixes are stored. After
//! [`COMPRESSED_NAMES`] compressed names, names are written whole.
//!
//! [`encode`] takes the record types the query path produces (A, AAAA,
//! CNAME, PTR, NS, SOA, SRV, TXT, HINFO); a reply holding any other type
//! returns `None` and [`super::finish`] encodes it with hickory.

use hickory_proto::rr::{Name, RData, Record};

use super::answer::Answer;
use super::finish::{Echo, OUR_PAYLOAD};

/// Stored compression candidates at most (hickory's limit).
const CANDIDATES: usize = 64;
/// Names compressed at most per message (hickory's limit).
const COMPRESSED_NAMES: usize = 120;

/// The buffer being written and its compression state.
struct Writer<'o> {
    out: &'o mut Vec<u8>,
    candidates: [u16; CANDIDATES],
    stored: usize,
    compressed: usize,
}

/// Why a message cannot be written here.
struct Unsupported;

/// Writes the reply into `out` (cleared first), at most `limit` bytes,
/// with the same sections, truncation and bytes as hickory's encoder (see
/// [`super::finish`]). Returns whether it was truncated; `None` when the
/// answer holds a record this writer does not know (`out` is then junk).
pub fn encode(out: &mut Vec<u8>, echo: &Echo<'_>, answer: &Answer, limit: usize) -> Option<bool> {
    out.clear();
    out.extend_from_slice(&[0; 12]);
    let mut w = Writer {
        out,
        candidates: [0; CANDIDATES],
        stored: 0,
        compressed: 0,
    };
    let mut counts = [0u16; 4];
    if let Some(q) = echo.query {
        w.name(q.name(), true).ok()?;
        w.u16(q.query_type().into());
        w.u16(q.query_class().into());
        counts[0] = 1;
    }
    let ede_len = answer.ede.as_ref().map_or(0, |(_, text)| 6 + text.len());
    let room = match echo.edns {
        Some(_) => limit.saturating_sub(super::finish::OPT_LEN + ede_len),
        None => limit,
    };
    let (answers, mut truncated) = w.section(&answer.answers, room).ok()?;
    counts[1] = answers;
    if !truncated {
        (counts[2], truncated) = w.section(&answer.authority, room).ok()?;
    }
    if !truncated {
        counts[3] = w.section(&answer.additional, room).ok()?.0;
    }
    if let Some(client) = echo.edns {
        w.opt(client.dnssec_ok, answer);
        counts[3] += 1;
    }
    if w.out.len() > usize::from(u16::MAX) {
        return None; // hickory's encoder fails here: let it decide
    }
    let truncated = truncated || answer.truncated;
    header(w.out, echo, answer, truncated, counts);
    Some(truncated)
}

/// The header: the echoed ID, opcode, RD and CD; the answer's flags and
/// rcode (its low bits: the high ones ride in OPT); the counts.
fn header(out: &mut [u8], echo: &Echo<'_>, answer: &Answer, truncated: bool, counts: [u16; 4]) {
    let meta = echo.meta;
    let bit = |on: bool, mask: u8| if on { mask } else { 0 };
    out[..2].copy_from_slice(&meta.id.to_be_bytes());
    out[2] = 0x80
        | ((u8::from(meta.op_code) & 0x0F) << 3)
        | bit(answer.authoritative, 0x04)
        | bit(truncated, 0x02)
        | bit(meta.recursion_desired, 0x01);
    out[3] = bit(answer.recursion_available, 0x80)
        | bit(answer.authentic_data, 0x20)
        | bit(meta.checking_disabled, 0x10)
        | answer.rcode.low();
    for (i, count) in counts.iter().enumerate() {
        out[4 + 2 * i..6 + 2 * i].copy_from_slice(&count.to_be_bytes());
    }
}

impl Writer<'_> {
    fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    /// Whole records while each ends within `room` (judged compressed); a
    /// record that does not fit is cut off. `(count, truncated)`.
    fn section(&mut self, records: &[Record], room: usize) -> Result<(u16, bool), Unsupported> {
        for (count, record) in records.iter().enumerate() {
            let start = self.out.len();
            self.record(record)?;
            if self.out.len() > room || self.out.len() > usize::from(u16::MAX) {
                self.out.truncate(start);
                return Ok((u16::try_from(count).unwrap_or(u16::MAX), true));
            }
        }
        Ok((u16::try_from(records.len()).unwrap_or(u16::MAX), false))
    }

    fn record(&mut self, record: &Record) -> Result<(), Unsupported> {
        self.name(&record.name, true)?;
        self.u16(record.record_type().into());
        self.u16(record.dns_class.into());
        self.u32(record.ttl);
        let at = self.out.len();
        self.u16(0);
        match &record.data {
            RData::A(a) => self.out.extend_from_slice(&a.0.octets()),
            RData::AAAA(a) => self.out.extend_from_slice(&a.0.octets()),
            RData::CNAME(n) => self.name(&n.0, true)?,
            RData::PTR(n) => self.name(&n.0, true)?,
            RData::NS(n) => self.name(&n.0, true)?,
            RData::SOA(soa) => {
                self.name(&soa.mname, true)?;
                self.name(&soa.rname, true)?;
                self.u32(soa.serial);
                for v in [soa.refresh, soa.retry, soa.expire] {
                    self.out.extend_from_slice(&v.to_be_bytes());
                }
                self.u32(soa.minimum);
            }
            RData::SRV(srv) => {
                for v in [srv.priority, srv.weight, srv.port] {
                    self.u16(v);
                }
                self.name(&srv.target, false)?;
            }
            RData::TXT(txt) => {
                for s in txt.txt_data.iter() {
                    self.string(s)?;
                }
            }
            RData::HINFO(h) => {
                self.string(&h.cpu)?;
                self.string(&h.os)?;
            }
            _ => return Err(Unsupported),
        }
        let len = u16::try_from(self.out.len() - at - 2).map_err(|_| Unsupported)?;
        self.out[at..at + 2].copy_from_slice(&len.to_be_bytes());
        Ok(())
    }

    /// A character-string: its length, then its bytes.
    fn string(&mut self, s: &[u8]) -> Result<(), Unsupported> {
        self.out.push(u8::try_from(s.len()).map_err(|_| Unsupported)?);
        self.out.extend_from_slice(s);
        Ok(())
    }

    /// Writes `name`, compressed when `compress` (see the module doc).
    fn name(&mut self, name: &Name, compress: bool) -> Result<(), Unsupported> {
        let begin = self.out.len();
        let compress = compress && self.compressed < COMPRESSED_NAMES;
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

    /// Our OPT record: payload 1232, version 0, the client's DO bit, the
    /// rcode's high bits, and the extended error when there is one.
    fn opt(&mut self, dnssec_ok: bool, answer: &Answer) {
        self.out.push(0);
        self.u16(41);
        self.u16(OUR_PAYLOAD);
        let flags = if dnssec_ok { 0x8000 } else { 0 };
        self.u32((u32::from(answer.rcode.high()) << 24) | flags);
        match &answer.ede {
            None => self.u16(0),
            Some((code, text)) => {
                let len = text.len() + 2;
                self.u16((len + 4) as u16);
                self.u16(15); // RFC 8914
                self.u16(len as u16);
                self.u16(*code);
                self.out.extend_from_slice(text.as_bytes());
            }
        }
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

#[cfg(test)]
mod tests;
