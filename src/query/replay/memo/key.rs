//! The memo's key: the parts of a query its reply depends on, read off
//! the wire, and its fingerprint, both made in a few word-wide passes
//! (the name lower-cased eight bytes at a time, then hashed a word at a
//! time), with no per-byte loop.

use crate::metrics::Transport;
use crate::query::request::edns::udp_limit;
use crate::query::request::{self, Wire};

/// The parts of a query its reply depends on, parsed from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// Lower-cased question name (wire form), qtype, EDNS state and limit.
    pub(super) bytes: Vec<u8>,
    /// Length of the question name on the wire (it starts at offset 12).
    pub(super) name_len: usize,
    /// [`fingerprint`] of `bytes`.
    pub(super) fingerprint: u64,
}

/// Bytes of a key after its name: type, limit, EDNS state.
const REST: usize = 5;

impl Key {
    /// The key of a plain query ([`request::parse`]) with EDNS version 0;
    /// `None` sends the packet down the full path.
    pub fn parse(packet: &[u8], transport: Transport, into: &mut Vec<u8>) -> Option<Key> {
        Key::of(packet, &request::parse(packet)?, transport, into)
    }

    /// The key of `packet`, already parsed as `wire`: the name is
    /// lower-cased and fingerprinted a word at a time as it is copied.
    pub fn of(packet: &[u8], wire: &Wire, transport: Transport, into: &mut Vec<u8>) -> Option<Key> {
        let name = wire.name(packet);
        if wire.version != 0 || name.len() > 255 {
            return None;
        }
        into.clear();
        into.reserve(name.len() + 8 + REST);
        let mut print = Print::new(name.len());
        let mut words = name.chunks_exact(8);
        for word in &mut words {
            let word = lower(word.try_into().map_or(0, u64::from_le_bytes));
            print.add(word);
            into.extend_from_slice(&word.to_le_bytes());
        }
        if let Some(word) = last_word(name, words.remainder().len()) {
            let word = lower(word);
            print.add(word);
            into.extend_from_slice(&word.to_le_bytes());
            into.truncate(name.len());
        }
        let limit = match transport {
            Transport::Udp => udp_limit(wire.edns) as u16,
            Transport::Tcp => u16::MAX,
        };
        let [t0, t1] = wire.qtype.to_be_bytes();
        let [l0, l1] = limit.to_be_bytes();
        let edns = match wire.edns {
            None => 0,
            Some(e) => 1 + u8::from(e.dnssec_ok),
        };
        let rest = [t0, t1, l0, l1, edns];
        into.extend_from_slice(&rest);
        print.add(u64::from_le_bytes([t0, t1, l0, l1, edns, 0, 0, 0]));
        Some(Key {
            fingerprint: print.finish(),
            bytes: std::mem::take(into),
            name_len: wire.name_len,
        })
    }

    /// The key as bytes (lower-cased name, type, limit, EDNS state).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The lower-cased name, and the rest (type, limit, EDNS state): the
    /// memo keeps only the rest, the name being its reply's question's.
    pub(super) fn split(&self) -> (&[u8], &[u8]) {
        self.bytes.split_at(self.name_len.min(self.bytes.len()))
    }

    /// Patches a reply copied into `out` for `packet` (whose key this is):
    /// its ID, RD and CD bits and the question name's spelling.
    pub fn echo(&self, packet: &[u8], out: &mut [u8]) -> Option<()> {
        let name = 12..12 + self.name_len;
        out.get_mut(name.clone())?.copy_from_slice(packet.get(name)?);
        out.get_mut(..2)?.copy_from_slice(packet.get(..2)?);
        out[2] = (out[2] & !0x01) | (packet[2] & 0x01);
        out[3] = (out[3] & !0x10) | (packet[3] & 0x10);
        Some(())
    }

    /// Gives the key's buffer back for the next parse.
    pub fn recycle(self, into: &mut Vec<u8>) {
        *into = self.bytes;
    }
}

/// The last `tail` bytes of `name` (fewer than eight) as a little-endian
/// word, zero-padded; `None` when `tail` is 0. From a name of eight bytes
/// or more, one load of its last eight, shifted.
fn last_word(name: &[u8], tail: usize) -> Option<u64> {
    if tail == 0 {
        return None;
    }
    let last = name.len().checked_sub(8).and_then(|at| name.get(at..));
    Some(match last.and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        Some(w) => u64::from_le_bytes(w) >> (64 - 8 * tail),
        None => name.iter().rev().fold(0, |w, b| w << 8 | u64::from(*b)),
    })
}

/// The eight bytes of `word` with ASCII upper-case letters lower-cased
/// (as [`u8::to_ascii_lowercase`] does each): a byte is `A`..=`Z` when its
/// low seven bits plus `0x80 - b'A'` carry into its top bit, plus
/// `0x80 - b'Z' - 1` do not, and its own top bit is clear. No sum carries
/// into the next byte (seven bits plus less than `0x80`).
fn lower(word: u64) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const TOP: u64 = 0x8080_8080_8080_8080;
    let low = word & LOW7;
    let from_a = low + 0x3F3F_3F3F_3F3F_3F3F; // 0x80 - b'A'
    let past_z = low + 0x2525_2525_2525_2525; // 0x80 - b'Z' - 1
    let upper = from_a & !past_z & !word & TOP;
    word | upper >> 2 // 0x80 >> 2 = 0x20, the case bit
}

/// A key's 64-bit fingerprint, never 0 (the memo's table marks empty
/// slots with it): the words of its lower-cased name (the last one
/// zero-padded), then of the rest, folded by multiplication, seeded with
/// the name's length. Not keyed against collision attacks; a collision
/// costs a miss, never a wrong reply (the memo compares the key and the
/// name).
struct Print(u64);

const K: u64 = 0x9E37_79B9_7F4A_7C15;

fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ (p >> 64) as u64
}

impl Print {
    fn new(name_len: usize) -> Print {
        Print(fold(name_len as u64 ^ 0x243F_6A88_85A3_08D3, K))
    }

    fn add(&mut self, word: u64) {
        self.0 = fold(self.0 ^ word, K);
    }

    fn finish(self) -> u64 {
        fold(self.0, 0x1319_8A2E_0370_7344) | 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_is_to_ascii_lowercase_for_every_byte_in_every_lane() {
        for b in 0..=255u8 {
            for lane in 0..8 {
                let mut word = [b'Q', 0x9A, b'z', b'@', b'[', 0xC1, b'A', b'`'];
                word[lane] = b;
                let want = word.map(|c| c.to_ascii_lowercase());
                assert_eq!(lower(u64::from_le_bytes(word)).to_le_bytes(), want, "{word:?}");
            }
        }
    }

    /// The fingerprint of a key's bytes, a byte at a time.
    fn fingerprint(bytes: &[u8], name_len: usize) -> u64 {
        let (name, rest) = bytes.split_at(name_len);
        let mut print = Print::new(name_len);
        for word in name.chunks(8).chain(std::iter::once(rest)) {
            print.add(word.iter().rev().fold(0, |w, b| w << 8 | u64::from(*b)));
        }
        print.finish()
    }

    fn key(name: &str, qtype: hickory_proto::rr::RecordType) -> (Vec<u8>, Key) {
        let mut m = hickory_proto::op::Message::query();
        let name = hickory_proto::rr::Name::from_ascii(name).expect("name");
        m.add_query(hickory_proto::op::Query::query(name, qtype));
        let packet = m.to_vec().expect("encode");
        let key = Key::parse(&packet, Transport::Udp, &mut Vec::new()).expect("plain");
        (packet, key)
    }

    #[test]
    fn fingerprints_are_a_byte_walk_s_and_tell_apart_lengths_and_tails() {
        let names = [
            "a.",
            "Ab.",
            "abcdef.",
            "abcdefg.",
            "abcdefgh.",
            "ABCDEFGH.",
            "a.b.",
            "a.b.c.",
            "x.abcdef.",
        ];
        let mut prints = Vec::new();
        for name in names {
            let (_, key) = key(name, hickory_proto::rr::RecordType::A);
            assert_eq!(key.fingerprint, fingerprint(key.bytes(), key.name_len), "{name}");
            assert_eq!(key.fingerprint & 1, 1, "never 0");
            prints.push(key.fingerprint);
        }
        assert_eq!(prints[4], prints[5], "case ignored");
        prints.remove(5);
        for (i, a) in prints.iter().enumerate() {
            assert!(prints[i + 1..].iter().all(|b| a != b));
        }
    }

    #[test]
    fn keys_are_the_lower_cased_name_then_the_rest() {
        for spelled in [
            "Web-0.SHOP.svc.Cluster.local.",
            "A.",
            "abcdefG.",
            "abcdefgH.",
            "x.ABCDEFGHIJKLMNO.",
        ] {
            let (packet, key) = key(spelled, hickory_proto::rr::RecordType::AAAA);
            let (name, rest) = key.split();
            assert_eq!(name, &packet[12..12 + key.name_len].to_ascii_lowercase()[..]);
            assert_eq!(rest, [0, 28, 2, 0, 0]);
        }
    }
}
