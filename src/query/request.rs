//! Bytes in → a checked request, or the error reply the header rules call
//! for. Checks, in order:
//!
//! | condition                                  | reply    |
//! |--------------------------------------------|----------|
//! | shorter than a header, or QR set           | (drop)   |
//! | the message does not decode                | FORMERR  |
//! | opcode is not QUERY                        | NOTIMP   |
//! | question count is not 1                    | FORMERR  |
//! | EDNS version above 0                       | BADVERS  |
//! | a zone transfer                            | REFUSED  |
//!
//! (A class other than IN is refused by `route`, after `rewrite class`.)

use hickory_proto::op::{Header, Message, MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_proto::rr::RecordType;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

/// What the client said about EDNS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientEdns {
    pub payload: u16,
    pub dnssec_ok: bool,
}

/// A request that passed every check.
#[derive(Debug, Clone)]
pub struct Request {
    pub meta: Metadata,
    pub query: Query,
    pub edns: Option<ClientEdns>,
}

/// The result of checking a packet.
#[derive(Debug)]
pub enum Checked {
    Drop,
    Reject {
        meta: Metadata,
        query: Option<Query>,
        edns: Option<ClientEdns>,
        rcode: ResponseCode,
    },
    Query(Request),
}

/// Decodes and checks one DNS message from a client.
pub fn check(bytes: &[u8]) -> Checked {
    if bytes.len() < 12 || bytes[2] & 0x80 != 0 {
        return Checked::Drop;
    }
    let msg = match Message::from_vec(bytes) {
        Ok(m) => m,
        Err(_) => {
            let Ok(header) = Header::read(&mut BinDecoder::new(bytes)) else {
                return Checked::Drop;
            };
            return Checked::Reject {
                meta: header.metadata,
                query: None,
                edns: None,
                rcode: ResponseCode::FormErr,
            };
        }
    };
    let edns = msg.edns.as_ref().map(|e| ClientEdns {
        payload: e.max_payload(),
        dnssec_ok: e.flags().dnssec_ok,
    });
    let version = msg.edns.as_ref().map_or(0, |e| e.version());
    let meta = msg.metadata;
    let mut queries = msg.queries;
    let single = if queries.len() == 1 { queries.pop() } else { None };
    let reject = |query, rcode| Checked::Reject {
        meta,
        query,
        edns,
        rcode,
    };
    if meta.message_type != MessageType::Query {
        return Checked::Drop;
    }
    if meta.op_code != OpCode::Query {
        return reject(single, ResponseCode::NotImp);
    }
    let Some(query) = single else {
        return reject(None, ResponseCode::FormErr);
    };
    if version > 0 {
        return reject(Some(query), ResponseCode::BADVERS);
    }
    if matches!(query.query_type(), RecordType::AXFR | RecordType::IXFR) {
        return reject(Some(query), ResponseCode::Refused);
    }
    Checked::Query(Request { meta, query, edns })
}

/// `bufsize`: the client's EDNS payload lowered to `cap` (never raised).
pub fn capped(edns: Option<ClientEdns>, cap: Option<u16>) -> Option<ClientEdns> {
    match (edns, cap) {
        (Some(e), Some(cap)) => Some(ClientEdns {
            payload: e.payload.min(cap),
            ..e
        }),
        _ => edns,
    }
}

/// `bufsize` for a request sent upstream: lowers the payload size of its
/// OPT record (the CLASS field) to `cap` in place. A message it cannot
/// walk is left as it is.
pub fn cap_payload(message: &mut [u8], cap: u16) {
    let count = |i: usize| {
        message
            .get(i..i + 2)
            .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    };
    let (questions, records) = (count(4), count(6) + count(8) + count(10));
    let mut at = 12;
    for _ in 0..questions {
        let Some(end) = skip_name(message, at) else { return };
        at = end + 4;
    }
    for _ in 0..records {
        let Some(end) = skip_name(message, at) else { return };
        let Some(fixed) = message.get(end..end + 10) else {
            return;
        };
        let (rtype, class) = (
            u16::from_be_bytes([fixed[0], fixed[1]]),
            u16::from_be_bytes([fixed[2], fixed[3]]),
        );
        let rdlen = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        if rtype == 41 && class > cap {
            message[end + 2..end + 4].copy_from_slice(&cap.to_be_bytes());
        }
        at = end + 10 + rdlen;
    }
}

/// The offset just past the (possibly compressed) name at `at`.
pub(crate) fn skip_name(message: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *message.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xC0 == 0xC0 => return Some(at + 2),
            l if l & 0xC0 == 0 => at += usize::from(l) + 1,
            _ => return None,
        }
    }
}

/// The largest UDP response a client accepts: its EDNS payload capped at
/// 1232 (the DNS flag day 2020 size), at least 512; 512 without EDNS.
pub fn udp_limit(edns: Option<ClientEdns>) -> usize {
    edns.map_or(512, |e| usize::from(e.payload).clamp(512, 1232))
}

/// The largest reply a client takes over `transport`.
pub fn limit(transport: crate::metrics::Transport, edns: Option<ClientEdns>) -> usize {
    match transport {
        crate::metrics::Transport::Udp => udp_limit(edns),
        crate::metrics::Transport::Tcp => usize::from(u16::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{Edns, Message, MessageType, OpCode};
    use hickory_proto::rr::Name;

    fn with_payload(payload: u16) -> Vec<u8> {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(
            Name::from_ascii("a.example.").expect("name"),
            RecordType::A,
        ));
        let mut edns = Edns::new();
        edns.set_max_payload(payload);
        m.edns = Some(edns);
        m.to_vec().expect("encodes")
    }

    fn payload(bytes: &[u8]) -> Option<u16> {
        Message::from_vec(bytes).expect("decodes").edns.map(|e| e.max_payload())
    }

    #[test]
    fn bufsize_lowers_the_opt_payload_only() {
        let mut big = with_payload(4096);
        cap_payload(&mut big, 1232);
        assert_eq!(payload(&big), Some(1232));
        let mut small = with_payload(600);
        cap_payload(&mut small, 1232);
        assert_eq!(payload(&small), Some(600));
        let mut cut = with_payload(4096);
        cut.truncate(20);
        cap_payload(&mut cut, 512); // cannot walk: left alone, no panic
        let client = ClientEdns {
            payload: 4096,
            dnssec_ok: true,
        };
        assert_eq!(capped(Some(client), Some(512)).map(|e| e.payload), Some(512));
        assert_eq!(capped(None, Some(512)), None);
    }
}
