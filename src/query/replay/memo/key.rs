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

    /// The key of `packet`, already parsed as `wire`.
    pub fn of(packet: &[u8], wire: &Wire, transport: Transport, into: &mut Vec<u8>) -> Option<Key> {
        if wire.version != 0 {
            return None;
        }
        let name = wire.name(packet);
        into.clear();
        into.reserve(name.len() + REST);
        let mut words = name.chunks_exact(8);
        for word in &mut words {
            into.extend_from_slice(&lower(word_of(word)).to_le_bytes());
        }
        let tail = words.remainder();
        into.extend_from_slice(&lower(word_of(tail)).to_le_bytes()[..tail.len()]);
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
        into.extend_from_slice(&[t0, t1, l0, l1, edns]);
        Some(Key {
            fingerprint: fingerprint(into),
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

/// Up to eight bytes as a little-endian word, zero-padded.
fn word_of(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
    u64::from_le_bytes(word)
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
/// slots with it): its words folded by multiplication, seeded with its
/// length. Not keyed against collision attacks; a collision costs a
/// miss, never a wrong reply (the memo compares the key and the name).
pub(super) fn fingerprint(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let fold = |a: u64, b: u64| {
        let p = u128::from(a) * u128::from(b);
        (p as u64) ^ (p >> 64) as u64
    };
    let mut h = fold(bytes.len() as u64 ^ 0x243F_6A88_85A3_08D3, K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        h = fold(h ^ word_of(word), K);
    }
    h = fold(h ^ word_of(words.remainder()), 0x1319_8A2E_0370_7344 ^ K);
    fold(h, K) | 1
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

    #[test]
    fn fingerprints_tell_apart_lengths_and_tails() {
        let prints = [
            &b""[..],
            b"\0",
            b"\0\0",
            b"a",
            b"a\0",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
        ]
        .map(fingerprint);
        for (i, a) in prints.iter().enumerate() {
            assert_eq!(a & 1, 1, "never 0");
            for b in &prints[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn keys_are_the_lower_cased_name_then_the_rest() {
        let mut m = hickory_proto::op::Message::query();
        let name = hickory_proto::rr::Name::from_ascii("Web-0.SHOP.svc.Cluster.local.").expect("name");
        m.add_query(hickory_proto::op::Query::query(
            name,
            hickory_proto::rr::RecordType::AAAA,
        ));
        let packet = m.to_vec().expect("encode");
        let key = Key::parse(&packet, Transport::Udp, &mut Vec::new()).expect("plain");
        let (name, rest) = key.split();
        assert_eq!(name, &packet[12..12 + key.name_len].to_ascii_lowercase()[..]);
        assert_eq!(rest, [0, 28, 2, 0, 0]);
        assert_eq!(key.fingerprint, fingerprint(key.bytes()));
    }
}
