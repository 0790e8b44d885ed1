//! Replies written with hickory's encoder, for what the byte writer of
//! [`super`] does not take: header flags, rcode (with EDNS's extended
//! bits), the echoed question, EDNS, and truncation, by the same rules.
//!
//! Truncation: answers and authority must fit whole within the limit (less
//! room kept for OPT), else TC is set and the records that fit are kept.
//! Additional records are dropped silently when they do not fit (RFC 2181
//! §9: their loss does not set TC).

use hickory_proto::op::{Edns, Header, HeaderCounts, MessageType, Metadata, ResponseCode};
use hickory_proto::rr::Record;
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder};
use hickory_proto::ProtoError;

use crate::query::reply::answer::Answer;
use crate::query::reply::echo::{Echo, OPT_LEN, OUR_PAYLOAD};

/// [`write`] with hickory's encoder (a SERVFAIL when it fails).
pub(crate) fn write_with_hickory(out: &mut Vec<u8>, echo: &Echo<'_>, answer: &Answer, limit: usize) -> bool {
    match encode(out, echo, answer, limit) {
        Ok(truncated) => truncated,
        Err(_) => {
            let mut failed = Answer::default();
            failed.error(ResponseCode::ServFail);
            encode(out, echo, &failed, limit).unwrap_or_else(|_| {
                out.clear();
                false
            })
        }
    }
}

fn encode(out: &mut Vec<u8>, echo: &Echo<'_>, answer: &Answer, limit: usize) -> Result<bool, ProtoError> {
    out.clear();
    let mut enc = BinEncoder::new(out);
    let place = enc.place::<Header>()?;
    let mut counts = HeaderCounts::default();
    if let Some(q) = echo.query {
        q.emit(&mut enc)?;
        counts.queries = 1;
    }
    let ede_len = answer.ede.as_ref().map_or(0, |(_, text)| 6 + text.len());
    let ede_len = ede_len + crate::query::reply::nsid::option_len(echo.edns, answer.tags.nsid.as_deref());
    let room = if echo.edns.is_some() {
        limit.saturating_sub(OPT_LEN + ede_len)
    } else {
        limit
    };
    let (answers, mut truncated) = section(&mut enc, &answer.answers, room)?;
    counts.answers = answers;
    if !truncated {
        (counts.authorities, truncated) = section(&mut enc, &answer.authority, room)?;
    }
    if !truncated {
        counts.additionals = section(&mut enc, &answer.additional, room)?.0;
    }
    if let Some(client) = echo.edns {
        let mut edns = Edns::new();
        edns.set_max_payload(OUR_PAYLOAD)
            .set_version(0)
            .set_dnssec_ok(client.dnssec_ok);
        edns.set_rcode_high(answer.rcode.high());
        if let Some((code, text)) = &answer.ede {
            let mut data = code.to_be_bytes().to_vec();
            data.extend_from_slice(text.as_bytes());
            edns.options_mut()
                .insert(hickory_proto::rr::rdata::opt::EdnsOption::Unknown(15, data));
            // RFC 8914
        }
        if let Some(data) = crate::query::reply::nsid::option(client, answer.tags.nsid.as_deref()) {
            let nsid = hickory_proto::rr::rdata::opt::NSIDPayload::new(data.to_vec())?;
            edns.options_mut()
                .insert(hickory_proto::rr::rdata::opt::EdnsOption::NSID(nsid));
        }
        Record::from(&edns).emit(&mut enc)?;
        counts.additionals += 1;
    }
    let end = enc.offset();
    let mut meta = Metadata::new(echo.meta.id, MessageType::Response, echo.meta.op_code);
    meta.recursion_desired = echo.meta.recursion_desired;
    meta.checking_disabled = echo.meta.checking_disabled;
    meta.authoritative = answer.authoritative;
    meta.recursion_available = answer.recursion_available;
    meta.authentic_data = echo.authentic(answer.authentic_data);
    let truncated = truncated || answer.truncated;
    meta.truncation = truncated;
    meta.response_code = answer.rcode;
    place.replace(&mut enc, Header { metadata: meta, counts })?;
    out.truncate(end);
    Ok(truncated)
}

/// Emits whole records while each ends within `room` bytes; `(count,
/// truncated)`. A record is judged by where it ends once compressed (the
/// encoder's own size limit would judge its owner name uncompressed and
/// drop a record that fits), and one that does not fit is cut off the
/// buffer with its compression pointers: the reply ends where its last
/// whole record does (glibc's and musl's parsers reject anything after).
fn section(enc: &mut BinEncoder<'_>, records: &[Record], room: usize) -> Result<(u16, bool), ProtoError> {
    for (count, record) in records.iter().enumerate() {
        let start = enc.offset();
        let fits = match record.emit(enc) {
            Ok(()) => enc.offset() <= room,
            Err(ProtoError::MaxBufferSizeExceeded(_)) => false,
            Err(e) => return Err(e),
        };
        if !fits {
            enc.set_offset(start);
            enc.trim();
            return Ok((u16::try_from(count).unwrap_or(u16::MAX), true));
        }
    }
    Ok((u16::try_from(records.len()).unwrap_or(u16::MAX), false))
}

#[cfg(test)]
mod tests {
    use hickory_proto::op::{Metadata, OpCode, Query};
    use hickory_proto::rr::{Name, RecordType};

    use super::*;
    use crate::query::reply::wire::write;
    use crate::query::request::edns::ClientEdns;

    /// A truncated reply holds every whole record that fits (judged
    /// compressed) and nothing after the last one.
    #[test]
    fn truncated_replies_are_packed_and_end_at_a_whole_record() {
        let owner = Name::from_ascii("a-rather-long-service-name.some-namespace.svc.cluster.local.").expect("name");
        let mut answer = Answer::default();
        for i in 0..100u8 {
            let addr = std::net::IpAddr::from([10, 0, 0, i]);
            answer
                .answers
                .extend(crate::query::reply::address(&owner, 5, addr, RecordType::A));
        }
        let meta = Metadata::new(7, MessageType::Query, OpCode::Query);
        let query = Query::query(owner.clone(), RecordType::A);
        for (edns, limit) in [
            (None, 512),
            (
                Some(ClientEdns {
                    payload: 1232,
                    dnssec_ok: false,
                    nsid: false,
                }),
                1232,
            ),
        ] {
            let echo = Echo {
                meta: &meta,
                query: Some(&query),
                edns,
            };
            let mut out = Vec::new();
            assert!(write(&mut out, &echo, &answer, limit), "truncated");
            let parsed = crate::fuzzing::parse_strict(&out).expect("parses strictly");
            // one more A record, its owner a compression pointer: 2 + 10 + 4 bytes
            assert!(
                out.len() <= limit && out.len() + 16 > limit,
                "{} bytes, limit {limit}",
                out.len()
            );
            assert!(parsed.metadata.truncation);
            assert!(!parsed.answers.is_empty());
        }
    }
}
