//! What the memo keeps per entry besides the key and reply bytes, written
//! as bytes into the entry's record in the ring ([`super::arena`]) so a
//! hit reads it from the lines it reads the reply from. The crate has no
//! `unsafe`, so the record is encoded field by field:
//!
//! ```text
//! 0..8    generation (u64 LE)      13..15  zone (u16 LE)
//! 8..10   serial_at (u16 LE)       15      plugin (its discriminant)
//! 10      flags (FLAG_*)           16      qtype slot
//! 11..13  rcode (u16 LE)           17      expansion (0: none, 1 + discriminant)
//!                                  18..22  log format (u32 LE)
//! ```
//!
//! An entry's [`Deps`] (read only when the generation moved) go after its
//! reply, as [`Deps::to_bytes`] writes them.

use hickory_proto::op::ResponseCode;

use crate::metrics::{Expansion, Plugin};
use crate::query::log::setup::LogStyle;
use crate::query::reply::Summary;
use crate::store::Deps;

/// Bytes of an encoded [`Meta`].
pub(super) const META: usize = 22;

/// Bytes of an entry's encoded [`Deps`].
pub(super) const DEPS: usize = Deps::BYTES;

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

impl Meta {
    /// The record's bytes, or `None` when they would not read back as
    /// `self` (a plugin or expansion the tables above miss).
    pub(super) fn encode(&self) -> Option<[u8; META]> {
        let o = &self.outcome;
        let log = o.log.unwrap_or(LogStyle {
            format: 0,
            success: false,
            denial: false,
            error: false,
        });
        let flags = flag(self.exact_case, FLAG_EXACT_CASE)
            | flag(o.truncated, FLAG_TRUNCATED)
            | flag(o.dnssec_ok, FLAG_DNSSEC_OK)
            | flag(o.log.is_some(), FLAG_LOG)
            | flag(log.success, FLAG_LOG_SUCCESS)
            | flag(log.denial, FLAG_LOG_DENIAL)
            | flag(log.error, FLAG_LOG_ERROR);
        let mut b = [0; META];
        b[0..8].copy_from_slice(&self.generation.to_le_bytes());
        b[8..10].copy_from_slice(&self.serial_at.to_le_bytes());
        b[10] = flags;
        b[11..13].copy_from_slice(&u16::from(o.rcode).to_le_bytes());
        b[13..15].copy_from_slice(&o.zone.to_le_bytes());
        b[15] = o.plugin as u8;
        b[16] = o.qtype;
        b[17] = o.expansion.map_or(0, |e| 1 + e as u8);
        b[18..22].copy_from_slice(&log.format.to_le_bytes());
        (Meta::decode(&b).as_ref() == Some(self)).then_some(b)
    }

    /// The meta [`Meta::encode`] wrote.
    pub(super) fn decode(b: &[u8; META]) -> Option<Meta> {
        let flags = b[10];
        let on = |bit: u8| flags & bit != 0;
        let log = on(FLAG_LOG).then(|| LogStyle {
            format: u32::from_le_bytes([b[18], b[19], b[20], b[21]]),
            success: on(FLAG_LOG_SUCCESS),
            denial: on(FLAG_LOG_DENIAL),
            error: on(FLAG_LOG_ERROR),
        });
        let expansion = match b[17] {
            0 => None,
            e => Some(*Expansion::ALL.get(usize::from(e) - 1)?),
        };
        let outcome = Summary {
            rcode: <ResponseCode as From<u16>>::from(u16::from_le_bytes([b[11], b[12]])),
            truncated: on(FLAG_TRUNCATED),
            log,
            zone: u16::from_le_bytes([b[13], b[14]]),
            plugin: *Plugin::ALL.get(usize::from(b[15]))?,
            qtype: b[16],
            dnssec_ok: on(FLAG_DNSSEC_OK),
            expansion,
        };
        Some(Meta {
            outcome,
            generation: Meta::generation(b),
            serial_at: u16::from_le_bytes([b[8], b[9]]),
            exact_case: on(FLAG_EXACT_CASE),
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
        let mut n = 0u16;
        for (plugin, expansion) in Plugin::ALL
            .iter()
            .flat_map(|p| expansions.clone().map(move |e| (*p, e)))
        {
            for log in [None, Some(styles[0]), Some(styles[1])] {
                n = n.wrapping_add(4099);
                let m = meta(plugin, expansion, log, n);
                let b = m.encode().expect("encodes");
                assert_eq!(Meta::decode(&b), Some(m));
                assert_eq!(Meta::generation(&b), m.generation);
            }
        }
    }

    #[test]
    fn a_moved_generation_is_all_that_changes() {
        let m = meta(Plugin::Kubernetes, None, None, 3);
        let mut b = m.encode().expect("encodes");
        Meta::set_generation(&mut b, 99);
        assert_eq!(Meta::decode(&b), Some(Meta { generation: 99, ..m }));
    }
}
