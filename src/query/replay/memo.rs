//! Per-worker memo of encoded replies, kept across store changes that do
//! not touch them.
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
//! parser reads completely ([`crate::query::request::parse`]); anything else takes the
//! full path. Each entry remembers the store generation it was built at
//! and what in the store it depends on ([`Deps`]); after a publish it is
//! replayed only if the store's change table shows none of that changed
//! (its negative answer's SOA serial is then rewritten to the current
//! one). A config reload empties the memo; the bytes live in one ring
//! ([`arena`]), so eviction frees nothing.

use crate::query::reply::Summary;

use std::sync::atomic::Ordering;

use crate::store::{Deps, Store};
use arena::Arena;
pub use key::Key;
use record::{Meta, Outcomes, DEPS, META};

mod arena;
mod key;
#[cfg(test)]
mod props;
mod record;
mod soa;
mod table;

/// Entries per worker before the memo is emptied.
pub const MAX_ENTRIES: usize = 20_000;

/// What the memo checks its entries against: the router's config epoch,
/// the generation of its stores, and the one store whose change table
/// can keep entries across a publish (none when several stores serve).
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub epoch: u64,
    pub generation: u64,
    pub store: Option<&'a Store>,
}

/// Slots of the admission filter: once the memo is half full, a question
/// is memoized only the second time it is seen, so one-off names (a scan,
/// a working set larger than the memo) stop churning it.
const SEEN_SLOTS: usize = 65_536;

/// Bytes of keys and replies one worker keeps (allocated as used).
const ARENA_BYTES: usize = 4 << 20;

pub use crate::metrics::revalidations;

/// One worker's memo.
pub struct Memo {
    epoch: u64,
    entries: Arena<META, DEPS>,
    /// The distinct outcomes its records refer to.
    outcomes: Outcomes,
    /// Direct-mapped fingerprints of questions answered once.
    seen: Box<[u64]>,
    counts: &'static crate::metrics::MemoStripe,
}

impl Default for Memo {
    fn default() -> Self {
        Memo {
            epoch: 0,
            entries: Arena::new(ARENA_BYTES, MAX_ENTRIES),
            outcomes: Outcomes::default(),
            seen: vec![0; SEEN_SLOTS].into_boxed_slice(),
            counts: crate::metrics::memo_stripe(),
        }
    }
}

impl Memo {
    /// Empties the memo when the configuration changed.
    fn sync(&mut self, view: &View<'_>) {
        if view.epoch != self.epoch {
            self.entries.clear();
            self.outcomes.clear();
            self.epoch = view.epoch;
        }
    }

    /// Writes the memoized reply to `key` into `out`, patched for `packet`;
    /// returns what it reports, or `None` on a miss. An entry built at an
    /// older generation is replayed only if nothing it depends on changed
    /// since (its generation then moves up, so the check is paid once).
    pub fn replay(&mut self, key: &Key, packet: &[u8], view: &View<'_>, out: &mut Vec<u8>) -> Option<Summary> {
        self.sync(view);
        let fp = key.fingerprint;
        let (asked, rest) = key.split();
        let entry = self.entries.get(fp, rest)?;
        let (meta, reply) = (Meta::decode(entry.head, &self.outcomes)?, entry.reply);
        let name = 12..12 + key.name_len;
        if !reply
            .get(name.clone())
            .is_some_and(|n| n == asked || n.eq_ignore_ascii_case(asked))
        {
            self.entries.remove(fp); // another name with the same fingerprint
            return None;
        }
        if meta.exact_case && packet.get(name.clone()) != reply.get(name) {
            return None; // answered anew, and remembered in this spelling
        }
        if meta.generation != view.generation {
            let deps = Deps::from_bytes(entry.tail);
            let Some(store) = view.store.filter(|s| s.unchanged_since(meta.generation, &deps)) else {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                self.entries.remove(fp);
                return None;
            };
            self.counts.kept.fetch_add(1, Ordering::Relaxed);
            Meta::set_generation(entry.head, view.generation);
            let at = usize::from(meta.serial_at);
            if let Some(serial) = reply.get_mut(at..at + 4).filter(|_| at != 0) {
                serial.copy_from_slice(&store.serial().to_be_bytes());
            }
        }
        out.clear();
        out.extend_from_slice(reply);
        key.echo(packet, out)?;
        Some(meta.outcome)
    }

    /// Remembers `reply` (which echoes the question, as every reply of
    /// [`crate::query::reply::wire`] does) for `key`, built at `view`'s generation and
    /// depending on `deps` in its store: at once while the memo is less
    /// than half full, else if the same question was answered recently
    /// before.
    pub fn remember(
        &mut self,
        key: &Key,
        view: &View<'_>,
        reply: &[u8],
        outcome: Summary,
        (deps, exact_case): (Deps, bool),
    ) {
        self.sync(view);
        let (asked, rest) = key.split();
        if !reply
            .get(12..12 + key.name_len)
            .is_some_and(|n| n.eq_ignore_ascii_case(asked))
        {
            return; // no question to patch the spelling of, or to find the entry by
        }
        let fingerprint = key.fingerprint;
        let slot = &mut self.seen[(fingerprint as usize) % SEEN_SLOTS];
        if *slot != fingerprint && self.entries.len() >= MAX_ENTRIES / 2 {
            *slot = fingerprint;
            return;
        }
        // A reply whose SOA cannot be found for patching is kept only
        // within its own generation.
        let (deps, serial_at) = match soa::serial_at(reply).map(|at| at.map(u16::try_from)) {
            Some(None) => (deps, 0),
            Some(Some(Ok(at))) => (deps, at),
            None | Some(Some(Err(_))) => (Deps::EVERYTHING, 0),
        };
        let meta = Meta {
            outcome,
            generation: view.generation,
            serial_at,
            exact_case,
        };
        if self.outcomes.full() && meta.encode(&mut self.outcomes).is_none() {
            self.entries.clear(); // starts over, as when its index is full of live entries
            self.outcomes.clear();
        }
        let Some(meta) = meta.encode(&mut self.outcomes) else {
            return; // a record that would not read back
        };
        self.entries.insert(fingerprint, (&meta, &deps.to_bytes()), rest, reply);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Transport;
    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
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

    fn view(generation: u64) -> View<'static> {
        View {
            epoch: 0,
            generation,
            store: None,
        }
    }

    fn outcome() -> Summary {
        Summary {
            rcode: ResponseCode::NoError,
            truncated: false,
            log: None,
            zone: 0,
            plugin: crate::metrics::Plugin::None,
            qtype: 0,
            dnssec_ok: false,
            expansion: None,
        }
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
        let outcome = outcome();
        let mut buf = Vec::new();
        for i in 0..MAX_ENTRIES / 2 {
            let reply = packet(&format!("n{i}.local."), None);
            let k = Key::parse(&reply, Transport::Udp, &mut buf).expect("key");
            memo.remember(&k, &view(1), &reply, outcome, (Deps::NONE, false));
            k.recycle(&mut buf);
        }
        assert_eq!(memo.entries.len(), MAX_ENTRIES / 2);
        let late = packet("late.local.", None);
        let k = Key::parse(&late, Transport::Udp, &mut buf).expect("key");
        memo.remember(&k, &view(1), &late, outcome, (Deps::NONE, false));
        assert_eq!(
            memo.replay(&k, &late, &view(1), &mut Vec::new()),
            None,
            "first sighting is not admitted"
        );
        memo.remember(&k, &view(1), &late, outcome, (Deps::NONE, false));
        assert!(
            memo.replay(&k, &late, &view(1), &mut Vec::new()).is_some(),
            "second sighting is"
        );
    }

    #[test]
    fn a_reply_without_the_question_is_never_replayed() {
        let mut memo = Memo::default();
        let q = packet("short.local.", None);
        let k = Key::parse(&q, Transport::Udp, &mut Vec::new()).expect("key");
        let outcome = outcome();
        memo.remember(&k, &view(1), &[0u8; 12], outcome, (Deps::NONE, false));
        assert_eq!(memo.replay(&k, &q, &view(1), &mut Vec::new()), None);
        let other = packet("other.local.", None); // a question as long, another name
        memo.remember(&k, &view(1), &other, outcome, (Deps::NONE, false));
        assert_eq!(memo.replay(&k, &q, &view(1), &mut Vec::new()), None);
    }

    #[test]
    fn replay_patches_id_flags_and_spelling_and_expires_with_the_generation() {
        let mut memo = Memo::default();
        let first = packet("web.cluster.local.", None);
        let k = Key::parse(&first, Transport::Udp, &mut Vec::new()).expect("key");
        let mut reply = first.clone();
        reply[2] |= 0x84; // QR, AA
        let outcome = outcome();
        memo.remember(&k, &view(1), &reply, outcome, (Deps::NONE, false));
        let mut second = packet("WEB.cluster.local.", None);
        second[0] = 0xAB;
        second[2] |= 0x01; // RD
        let k2 = Key::parse(&second, Transport::Udp, &mut Vec::new()).expect("key");
        let mut out = Vec::new();
        assert_eq!(memo.replay(&k2, &second, &view(1), &mut out), Some(outcome));
        assert_eq!(out[0], 0xAB);
        assert_eq!(out[2] & 0x85, 0x85);
        assert_eq!(&out[13..16], b"WEB");
        assert_eq!(
            memo.replay(&k2, &second, &view(2), &mut out),
            None,
            "without a store to ask, a new generation drops the entry"
        );
    }
}
