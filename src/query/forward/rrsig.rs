//! Whether an upstream's DNSSEC answer carries a signature outside its
//! validity period (RFC 4034 3.1.5): CoreDNS's cache does not keep such an
//! answer for a DO query (response.Typify's expired check), so neither does
//! this one. RRSIGs arrive as unknown data (no DNSSEC feature): expiration
//! and inception are the big-endian seconds at bytes 8..12 and 12..16.

use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::op::Message;
use hickory_proto::rr::{RData, RecordType};

/// Whether `msg` asks for DNSSEC (DO in its OPT) and holds an RRSIG whose
/// validity period does not include now.
pub fn expired(msg: &Message) -> bool {
    if !msg.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok) {
        return false;
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let at = |b: &[u8], i: usize| b.get(i..i + 4).and_then(|s| s.try_into().ok()).map(u32::from_be_bytes);
    msg.answers
        .iter()
        .chain(&msg.authorities)
        .chain(&msg.additionals)
        .filter(|r| r.record_type() == RecordType::RRSIG)
        .any(|r| match &r.data {
            RData::Unknown { rdata, .. } => match (at(&rdata.anything, 8), at(&rdata.anything, 12)) {
                (Some(expires), Some(incepted)) => now > u64::from(expires) || now < u64::from(incepted),
                _ => false,
            },
            _ => false,
        })
}
