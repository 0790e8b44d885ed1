//! The memo's key: the parts of a query its reply depends on, read off
//! the wire, and its fingerprint, hashed once as the key is made.

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

impl Key {
    /// The key of a plain query ([`request::parse`]) with EDNS version 0;
    /// `None` sends the packet down the full path.
    pub fn parse(packet: &[u8], transport: Transport, into: &mut Vec<u8>) -> Option<Key> {
        Key::of(packet, &request::parse(packet)?, transport, into)
    }

    /// The key of `packet`, already parsed as `wire`, with its
    /// [`fingerprint`].
    pub fn of(packet: &[u8], wire: &Wire, transport: Transport, into: &mut Vec<u8>) -> Option<Key> {
        if wire.version != 0 {
            return None;
        }
        into.clear();
        // copied whole, then lower-cased in place: one pass each that the
        // compiler vectorizes (a byte-by-byte `extend` of a mapped iterator
        // checks the capacity per byte)
        into.extend_from_slice(wire.name(packet));
        into.make_ascii_lowercase();
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

/// A key's 64-bit fingerprint, never 0 (the memo's table marks empty
/// slots with it). Not keyed against collision attacks; a collision
/// costs a miss, never a wrong reply (the memo compares the key and the
/// name).
/// The bytes are written to the hasher alone: no length prefix first
/// (`hash_one` of a slice writes one; foldhash mixes the length in as it
/// writes).
pub(super) fn fingerprint(key: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = foldhash::fast::FixedState::default().build_hasher();
    hasher.write(key);
    hasher.finish() | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_lower_cased_name_then_the_rest() {
        for spelled in [
            "Web-0.SHOP.svc.Cluster.local.",
            "A.",
            "abcdefG.",
            "abcdefgH.",
            "x.ABCDEFGHIJKLMNO.",
        ] {
            let mut m = hickory_proto::op::Message::query();
            let name = hickory_proto::rr::Name::from_ascii(spelled).expect("name");
            m.add_query(hickory_proto::op::Query::query(
                name,
                hickory_proto::rr::RecordType::AAAA,
            ));
            let packet = m.to_vec().expect("encode");
            let key = Key::parse(&packet, Transport::Udp, &mut Vec::new()).expect("plain");
            let (name, rest) = key.split();
            assert_eq!(name, &packet[12..12 + key.name_len].to_ascii_lowercase()[..]);
            assert_eq!(rest, [0, 28, 2, 0, 0]);
            assert_eq!((key.fingerprint, key.fingerprint & 1), (fingerprint(key.bytes()), 1));
        }
    }
}
