//! What the `cache` keeps of an upstream's answer, and for how long, as
//! CoreDNS's cache decides it: no truncated answer, none with an RRSIG out
//! of its validity period (a DO query), none of a CNAME chain short of the
//! queried type without an SOA (NODATA with one), a NOERROR answer for its
//! lowest TTL and a negative one for its SOA's (RFC 2308), both within
//! their bounds, SERVFAIL and NOTIMP for `servfail`'s duration.

use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{RData, RecordType};

use crate::query::forward::cache::setup::CacheConfig;

/// How long `msg` may be cached, and whether it is a denial; `None`
/// when it must not be.
pub fn lifetime(cfg: &CacheConfig, query: &Query, msg: &Message) -> Option<(u32, bool)> {
    if msg.metadata.truncation || crate::query::forward::rrsig::expired(msg) {
        return None;
    }
    let name = query.name();
    let answered = crate::query::forward::chain::answers_question(query, &msg.answers);
    let soa = msg.authorities.iter().any(|r| r.record_type() == RecordType::SOA);
    match msg.metadata.response_code {
        // A CNAME chain short of the queried type: NODATA with an SOA,
        // not cached without one.
        ResponseCode::NoError if !msg.answers.is_empty() && !answered && !soa => None,
        ResponseCode::NoError if !msg.answers.is_empty() && answered => {
            if !cfg.caches(name, false) {
                return None;
            }
            let ttl = msg
                .answers
                .iter()
                .chain(&msg.authorities)
                .map(|r| r.ttl)
                .min()
                .unwrap_or(0);
            let b = cfg.success;
            Some((ttl.clamp(b.min_ttl.min(b.max_ttl), b.max_ttl), false))
        }
        ResponseCode::NoError | ResponseCode::NXDomain => {
            if !cfg.caches(name, true) {
                return None;
            }
            let ttl = msg.authorities.iter().find_map(|r| match &r.data {
                RData::SOA(soa) if r.record_type() == RecordType::SOA => Some(r.ttl.min(soa.minimum)),
                _ => None,
            })?;
            let b = cfg.denial;
            Some((ttl.clamp(b.min_ttl.min(b.max_ttl), b.max_ttl), true))
        }
        ResponseCode::ServFail | ResponseCode::NotImp if !cfg.servfail.is_zero() && cfg.caches(name, true) => {
            Some((u32::try_from(cfg.servfail.as_secs()).unwrap_or(300).max(1), true))
        }
        _ => None,
    }
}
