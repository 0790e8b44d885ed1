//! What the memo keeps per entry besides the key and reply bytes, written
//! as bytes into the entry's record in the ring ([`super::arena`]) so a
//! hit reads it from the lines it reads the reply from. The crate has no
//! `unsafe`, so the record is encoded field by field:
//!
//! ```text
//! 0..8    generation (u64 LE)      10      flags (FLAG_EXACT_CASE)
//! 8..10   serial_at (u16 LE)       11..13  outcome (u16 LE: its index in Outcomes)
//! ```
//!
//! A reply's [`Summary`] is one of few (zone, plugin, rcode, type slot,
//! ...), so each worker's memo keeps each distinct one once
//! ([`Outcomes`]) and a record holds its index: a hit copies it from
//! there instead of decoding it. [`Outcome`] is its encoding, the key
//! it is interned by:
//!
//! ```text
//! 0       flags (FLAG_*)           5       plugin (its discriminant)
//! 1..3    rcode (u16 LE)           6       qtype slot
//! 3..5    zone (u16 LE)            7       expansion (0: none, 1 + discriminant)
//!                                  8..12   log format (u32 LE)
//! ```
//!
//! An entry's [`Deps`] (read only when the generation moved) go after its
//! reply, as [`Deps::to_bytes`] writes them.

use std::collections::HashMap;

use hickory_proto::op::ResponseCode;

use crate::metrics::{Expansion, Plugin};
use crate::query::log::setup::LogStyle;
use crate::query::reply::Summary;
use crate::store::Deps;

/// Bytes of an encoded [`Meta`].
pub(super) const META: usize = 13;

/// Bytes of an entry's encoded [`Deps`].
pub(super) const DEPS: usize = Deps::BYTES;

/// Distinct outcomes a memo keeps before it starts over (empties itself).
pub(super) const OUTCOMES: usize = 4096;

const FLAG_EXACT_CASE: u8 = 1;
const FLAG_TRUNCATED: u8 = 2;
const FLAG_DNSSEC_OK: u8 = 4;
const FLAG_LOG: u8 = 8;
const FLAG_LOG_SUCCESS: u8 = 16;
const FLAG_LOG_DENIAL: u8 = 32;
const FLAG_LOG_ERROR: u8 = 64;

/// What the memo keeps per entry besides the bytes and the deps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Meta {
    pub outcome: Summary,
    /// The generation the reply was built at (or last found still exact).
    pub generation: u64,
    /// Offset in the reply of its SOA's serial (0: none), rewritten when
    /// the entry outlives a publish.
    pub serial_at: u16,
    /// Replayed only to a question spelled as this reply's (`Tags::exact_case`).
    pub exact_case: bool,
}

fn flag(on: bool, bit: u8) -> u8 {
    if on {
        bit
    } else {
        0
    }
}

/// A [`Summary`] as bytes.
type Outcome = [u8; 12];

/// The outcome's bytes, or `None` when they would not read back as `o`
/// (a plugin or expansion the tables miss).
fn encode(o: &Summary) -> Option<Outcome> {
    let log = o.log.unwrap_or(LogStyle {
        format: 0,
        success: false,
        denial: false,
        error: false,
    });
    let mut b = [0; 12];
    b[0] = flag(o.truncated, FLAG_TRUNCATED)
        | flag(o.dnssec_ok, FLAG_DNSSEC_OK)
        | flag(o.log.is_some(), FLAG_LOG)
        | flag(log.success, FLAG_LOG_SUCCESS)
        | flag(log.denial, FLAG_LOG_DENIAL)
        | flag(log.error, FLAG_LOG_ERROR);
    b[1..3].copy_from_slice(&u16::from(o.rcode).to_le_bytes());
    b[3..5].copy_from_slice(&o.zone.to_le_bytes());
    b[5] = o.plugin as u8;
    b[6] = o.qtype;
    b[7] = o.expansion.map_or(0, |e| 1 + e as u8);
    b[8..12].copy_from_slice(&log.format.to_le_bytes());
    (decode(&b).as_ref() == Some(o)).then_some(b)
}

/// The outcome [`encode`] wrote.
fn decode(b: &Outcome) -> Option<Summary> {
    let on = |bit: u8| b[0] & bit != 0;
    let log = on(FLAG_LOG).then(|| LogStyle {
        format: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        success: on(FLAG_LOG_SUCCESS),
        denial: on(FLAG_LOG_DENIAL),
        error: on(FLAG_LOG_ERROR),
    });
    let expansion = match b[7] {
        0 => None,
        e => Some(*Expansion::ALL.get(usize::from(e) - 1)?),
    };
    Some(Summary {
        rcode: <ResponseCode as From<u16>>::from(u16::from_le_bytes([b[1], b[2]])),
        truncated: on(FLAG_TRUNCATED),
        log,
        zone: u16::from_le_bytes([b[3], b[4]]),
        plugin: *Plugin::ALL.get(usize::from(b[5]))?,
        qtype: b[6],
        dnssec_ok: on(FLAG_DNSSEC_OK),
        expansion,
    })
}

/// One memo's distinct outcomes, each kept once, by index.
#[derive(Default)]
pub(super) struct Outcomes {
    list: Vec<Summary>,
    index: HashMap<Outcome, u16>,
}

impl Outcomes {
    /// The index of `o`, added if new; `None` when it would not read back
    /// (see [`encode`]) or [`OUTCOMES`] are kept already.
    fn intern(&mut self, o: &Summary) -> Option<u16> {
        let bytes = encode(o)?;
        if let Some(at) = self.index.get(&bytes) {
            return Some(*at);
        }
        let at = u16::try_from(self.list.len())
            .ok()
            .filter(|at| usize::from(*at) < OUTCOMES)?;
        self.list.push(*o);
        self.index.insert(bytes, at);
        Some(at)
    }

    /// Whether no more outcomes fit.
    pub(super) fn full(&self) -> bool {
        self.list.len() >= OUTCOMES
    }

    /// Forgets them all (with every record holding their indexes).
    pub(super) fn clear(&mut self) {
        self.list.clear();
        self.index.clear();
    }
}

impl Meta {
    /// The record's bytes, its outcome interned in `outcomes`; `None` when
    /// the outcome is not kept (see [`Outcomes::intern`]).
    pub(super) fn encode(&self, outcomes: &mut Outcomes) -> Option<[u8; META]> {
        let at = outcomes.intern(&self.outcome)?;
        let mut b = [0; META];
        b[0..8].copy_from_slice(&self.generation.to_le_bytes());
        b[8..10].copy_from_slice(&self.serial_at.to_le_bytes());
        b[10] = flag(self.exact_case, FLAG_EXACT_CASE);
        b[11..13].copy_from_slice(&at.to_le_bytes());
        Some(b)
    }

    /// The meta [`Meta::encode`] wrote, its outcome read from `outcomes`.
    pub(super) fn decode(b: &[u8; META], outcomes: &Outcomes) -> Option<Meta> {
        let outcome = *outcomes.list.get(usize::from(u16::from_le_bytes([b[11], b[12]])))?;
        Some(Meta {
            outcome,
            generation: Meta::generation(b),
            serial_at: u16::from_le_bytes([b[8], b[9]]),
            exact_case: b[10] & FLAG_EXACT_CASE != 0,
        })
    }

    /// The generation of an encoded meta.
    pub(super) fn generation(b: &[u8; META]) -> u64 {
        let mut g = [0; 8];
        g.copy_from_slice(&b[0..8]);
        u64::from_le_bytes(g)
    }

    /// Moves an encoded meta's generation to `generation`.
    pub(super) fn set_generation(b: &mut [u8; META], generation: u64) {
        b[0..8].copy_from_slice(&generation.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(plugin: Plugin, expansion: Option<Expansion>, log: Option<LogStyle>, n: u16) -> Meta {
        Meta {
            outcome: Summary {
                rcode: <ResponseCode as From<u16>>::from(n % 4096),
                truncated: n.is_multiple_of(2),
                log,
                zone: n.wrapping_mul(7919),
                plugin,
                qtype: n as u8,
                dnssec_ok: n.is_multiple_of(3),
                expansion,
            },
            generation: u64::from(n) << 40 | 12345,
            serial_at: n.wrapping_mul(31),
            exact_case: n.is_multiple_of(5),
        }
    }

    #[test]
    fn the_tables_list_each_variant_at_its_discriminant() {
        Plugin::ALL
            .iter()
            .enumerate()
            .for_each(|(i, p)| assert_eq!(*p as usize, i));
        Expansion::ALL
            .iter()
            .enumerate()
            .for_each(|(i, e)| assert_eq!(*e as usize, i));
    }

    #[test]
    fn every_meta_reads_back_as_written() {
        let styles = [true, false].map(|b| LogStyle {
            format: 0xDEAD_BEEF,
            success: b,
            denial: !b,
            error: b,
        });
        let expansions = [None].into_iter().chain(Expansion::ALL.map(Some));
        let (mut n, mut outcomes) = (0u16, Outcomes::default());
        for (plugin, expansion) in Plugin::ALL
            .iter()
            .flat_map(|p| expansions.clone().map(move |e| (*p, e)))
        {
            for log in [None, Some(styles[0]), Some(styles[1])] {
                n = n.wrapping_add(4099);
                let m = meta(plugin, expansion, log, n);
                let b = m.encode(&mut outcomes).expect("encodes");
                assert_eq!(Meta::decode(&b, &outcomes), Some(m));
                assert_eq!(Meta::generation(&b), m.generation);
                assert_eq!(decode(&encode(&m.outcome).expect("encodes")), Some(m.outcome));
                let again = Meta { generation: 7, ..m }.encode(&mut outcomes).expect("encodes");
                assert_eq!(again[11..], b[11..], "one index per distinct outcome");
            }
        }
    }

    #[test]
    fn a_moved_generation_is_all_that_changes() {
        let mut outcomes = Outcomes::default();
        let m = meta(Plugin::Kubernetes, None, None, 3);
        let mut b = m.encode(&mut outcomes).expect("encodes");
        Meta::set_generation(&mut b, 99);
        assert_eq!(Meta::decode(&b, &outcomes), Some(Meta { generation: 99, ..m }));
    }

    #[test]
    fn outcomes_stop_when_full_and_start_over_when_cleared() {
        let mut outcomes = Outcomes::default();
        let m = |n: usize| meta(Plugin::Kubernetes, None, None, 0).outcome_with_zone(n as u16);
        for n in 0..OUTCOMES {
            assert!(outcomes.intern(&m(n)).is_some());
        }
        assert!(outcomes.full());
        assert_eq!(outcomes.intern(&m(3)), Some(3), "a kept one is still found");
        assert_eq!(outcomes.intern(&m(OUTCOMES)), None, "a new one is not kept");
        outcomes.clear();
        assert_eq!(outcomes.intern(&m(OUTCOMES)), Some(0));
    }

    impl Meta {
        fn outcome_with_zone(self, zone: u16) -> Summary {
            Summary { zone, ..self.outcome }
        }
    }
}
