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
