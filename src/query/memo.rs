//! Per-worker memo of encoded replies, valid for one store generation.
//!
//! Cluster answers depend only on the question (name without case, type),
//! the client's EDNS (present, DO bit, payload limit) and the snapshot. So
//! each worker keeps the bytes it last sent for such a question and, for
//! the next identical question, copies them, patches the ID, the RD and CD
//! bits and the question name's spelling, and is done: no decode, no
//! lookup, no encode. Answers refer to the question name by compression
//! pointer, so the patched spelling carries into them.
//!
//! A packet is memo-eligible only if it is a plain query the request
//! parser reads completely ([`request::parse`]); anything else takes the
//! full path.
//! The memo is cleared when any store publishes a new snapshot and when it
//! reaches [`MAX_ENTRIES`].

use hickory_proto::op::ResponseCode;

use super::request::{self, udp_limit, Wire};
use crate::metrics::Transport;
use crate::store::Map;

/// Entries per worker before the memo is emptied.
pub const MAX_ENTRIES: usize = 20_000;

/// The parts of a query its reply depends on, parsed from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// Lower-cased question name (wire form), qtype, EDNS state and limit.
    bytes: Vec<u8>,
    /// Length of the question name on the wire (it starts at offset 12).
    name_len: usize,
}

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
        into.clear();
        into.extend(wire.name(packet).iter().map(u8::to_ascii_lowercase));
        into.extend_from_slice(&wire.qtype.to_be_bytes());
        let limit = match transport {
            Transport::Udp => udp_limit(wire.edns) as u16,
            Transport::Tcp => u16::MAX,
        };
        into.extend_from_slice(&limit.to_be_bytes());
        into.push(match wire.edns {
            None => 0,
            Some(e) => 1 + u8::from(e.dnssec_ok),
        });
        Some(Key {
            bytes: std::mem::take(into),
            name_len: wire.name_len,
        })
    }

    /// The key as bytes (lower-cased name, type, limit, EDNS state).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
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

/// What a replayed reply reports to metrics and the query log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub rcode: ResponseCode,
    pub truncated: bool,
    pub log: Option<crate::config::local::LogStyle>,
    /// What the metrics record (see [`crate::metrics::Served`]).
    pub zone: u16,
    pub plugin: crate::metrics::Plugin,
    pub qtype: u8,
    pub dnssec_ok: bool,
    pub expansion: Option<crate::metrics::Expansion>,
}

struct Entry {
    reply: Box<[u8]>,
    outcome: Outcome,
}

/// Slots of the admission filter: once the memo is half full, a question
/// is memoized only the second time it is seen, so one-off names (a scan,
/// a working set larger than the memo) stop churning it.
const SEEN_SLOTS: usize = 65_536;

/// One worker's memo.
pub struct Memo {
    generation: u64,
    entries: Map<Box<[u8]>, Entry>,
    /// Direct-mapped fingerprints of questions answered once.
    seen: Box<[u64]>,
    hasher: foldhash::fast::FixedState,
}

impl Default for Memo {
    fn default() -> Self {
        Memo {
            generation: 0,
            entries: Map::default(),
            seen: vec![0; SEEN_SLOTS].into_boxed_slice(),
            hasher: foldhash::fast::FixedState::default(),
        }
    }
}

impl Memo {
    /// Writes the memoized reply to `key` into `out`, patched for `packet`;
    /// returns what it reports, or `None` on a miss.
    pub fn replay(&mut self, key: &Key, packet: &[u8], generation: u64, out: &mut Vec<u8>) -> Option<Outcome> {
        if generation != self.generation {
            self.entries.clear();
            self.generation = generation;
            return None;
        }
        let entry = self.entries.get(&key.bytes[..])?;
        out.clear();
        out.extend_from_slice(&entry.reply);
        key.echo(packet, out)?;
        Some(entry.outcome)
    }

    /// Remembers `reply` (which echoes the question, as every reply of
    /// [`super::finish`] does) for `key` (made under `generation`): at once while
    /// the memo is less than half full, else if the same question was
    /// answered recently before.
    pub fn remember(&mut self, key: &Key, generation: u64, reply: &[u8], outcome: Outcome) {
        if generation != self.generation {
            self.entries.clear();
            self.generation = generation;
        }
        let fingerprint = std::hash::BuildHasher::hash_one(&self.hasher, &key.bytes[..]) | 1;
        let slot = &mut self.seen[(fingerprint as usize) % SEEN_SLOTS];
        if *slot != fingerprint && self.entries.len() >= MAX_ENTRIES / 2 {
            *slot = fingerprint;
            return;
        }
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.clear();
        }
        let entry = Entry {
            reply: reply.into(),
            outcome,
        };
        self.entries.insert(key.bytes.as_slice().into(), entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
    use hickory_proto::rr::{Name, RecordType};

    fn packet(name: &str, edns: Option<(u16, u8)>) -> Vec<u8> {
        let mut m = Message::new(1, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(Name::from_ascii(name).expect("name"), RecordType::A));
        if let Some((size, version)) = edns {
            let mut e = Edns::new();
            e.set_max_payload(size).set_version(version);
            m.set_edns(e);
        }
        m.to_vec().expect("encode")
    }

    fn key(p: &[u8], t: Transport) -> Option<Vec<u8>> {
        Key::parse(p, t, &mut Vec::new()).map(|k| k.bytes)
    }

    #[test]
    fn keys_ignore_case_and_separate_what_changes_the_reply() {
        let lower = key(&packet("web.shop.svc.cluster.local.", None), Transport::Udp);
        let upper = key(&packet("WEB.Shop.svc.cluster.local.", None), Transport::Udp);
        assert!(lower.is_some());
        assert_eq!(lower, upper);
        assert_ne!(lower, key(&packet("web.shop.svc.cluster.local.", None), Transport::Tcp));
        assert_ne!(
            lower,
            key(&packet("web.shop.svc.cluster.local.", Some((1232, 0))), Transport::Udp)
        );
        assert_eq!(
            key(&packet("a.", Some((1232, 0))), Transport::Udp),
            key(&packet("a.", Some((4096, 0))), Transport::Udp),
            "payloads above 1232 are capped alike"
        );
    }

    #[test]
    fn unusual_packets_take_the_full_path() {
        assert_eq!(
            key(&packet("a.", Some((1232, 1))), Transport::Udp),
            None,
            "EDNS version 1"
        );
        let mut trailing = packet("a.", None);
        trailing.push(0);
        assert_eq!(key(&trailing, Transport::Udp), None);
        let mut response = packet("a.", None);
        response[2] |= 0x80;
        assert_eq!(key(&response, Transport::Udp), None);
        assert_eq!(
            key(
                &[0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1],
                Transport::Udp
            ),
            None
        );
        assert_eq!(key(&packet("a.", None)[..14], Transport::Udp), None);
    }

    #[test]
    fn a_half_full_memo_admits_only_questions_seen_twice() {
        let mut memo = Memo::default();
        let outcome = Outcome {
            rcode: ResponseCode::NoError,
            truncated: false,
            log: None,
            zone: 0,
            plugin: crate::metrics::Plugin::None,
            qtype: 0,
            dnssec_ok: false,
            expansion: None,
        };
        let mut buf = Vec::new();
        for i in 0..MAX_ENTRIES / 2 {
            let reply = packet(&format!("n{i}.local."), None);
            let k = Key::parse(&reply, Transport::Udp, &mut buf).expect("key");
            memo.remember(&k, 1, &reply, outcome);
            k.recycle(&mut buf);
        }
        assert_eq!(memo.entries.len(), MAX_ENTRIES / 2);
        let late = packet("late.local.", None);
        let k = Key::parse(&late, Transport::Udp, &mut buf).expect("key");
        memo.remember(&k, 1, &late, outcome);
        assert_eq!(
            memo.replay(&k, &late, 1, &mut Vec::new()),
            None,
            "first sighting is not admitted"
        );
        memo.remember(&k, 1, &late, outcome);
        assert!(
            memo.replay(&k, &late, 1, &mut Vec::new()).is_some(),
            "second sighting is"
        );
    }

    #[test]
    fn a_reply_without_the_question_is_never_replayed() {
        let mut memo = Memo::default();
        let q = packet("short.local.", None);
        let k = Key::parse(&q, Transport::Udp, &mut Vec::new()).expect("key");
        let outcome = Outcome {
            rcode: ResponseCode::NoError,
            truncated: false,
            log: None,
            zone: 0,
            plugin: crate::metrics::Plugin::None,
            qtype: 0,
            dnssec_ok: false,
            expansion: None,
        };
        memo.remember(&k, 1, &[0u8; 12], outcome);
        assert_eq!(memo.replay(&k, &q, 1, &mut Vec::new()), None);
    }

    #[test]
    fn replay_patches_id_flags_and_spelling_and_expires_with_the_generation() {
        let mut memo = Memo::default();
        let first = packet("web.cluster.local.", None);
        let k = Key::parse(&first, Transport::Udp, &mut Vec::new()).expect("key");
        let mut reply = first.clone();
        reply[2] |= 0x84; // QR, AA
        let outcome = Outcome {
            rcode: ResponseCode::NoError,
            truncated: false,
            log: None,
            zone: 0,
            plugin: crate::metrics::Plugin::None,
            qtype: 0,
            dnssec_ok: false,
            expansion: None,
        };
        memo.remember(&k, 1, &reply, outcome);
        let mut second = packet("WEB.cluster.local.", None);
        second[0] = 0xAB;
        second[2] |= 0x01; // RD
        let k2 = Key::parse(&second, Transport::Udp, &mut Vec::new()).expect("key");
        let mut out = Vec::new();
        assert_eq!(memo.replay(&k2, &second, 1, &mut out), Some(outcome));
        assert_eq!(out[0], 0xAB);
        assert_eq!(out[2] & 0x85, 0x85);
        assert_eq!(&out[13..16], b"WEB");
        assert_eq!(
            memo.replay(&k2, &second, 2, &mut out),
            None,
            "a new snapshot empties the memo"
        );
    }
}
