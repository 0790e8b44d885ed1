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
//! (A class other than IN is judged by `route`, after `rewrite class`: `chaos`, else
//! `forward` only, else REFUSED.)
//!
//! One parser reads requests: [`parse`] walks the wire bytes of a plain
//! query (header, one question, at most an OPT, nothing after) without
//! allocating, and both the memo key ([`super::memo::Key`]) and [`check`]
//! come from what it read. Only what it does not take (several
//! questions, other records, compressed or malformed names, trailing
//! bytes, unusual OPT options) is decoded whole by hickory, where a
//! malformed message finds its FORMERR.

use hickory_proto::op::{Header, Message, MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

pub mod edns;
pub mod walk;

use edns::{opt, ClientEdns};

/// A request that passed every check.
#[derive(Debug, Clone)]
pub struct Request {
    pub meta: Metadata,
    pub query: Query,
    pub edns: Option<ClientEdns>,
}

/// The result of checking a packet.
#[derive(Debug)]
pub enum Triage {
    Drop,
    Reject {
        meta: Metadata,
        query: Option<Query>,
        edns: Option<ClientEdns>,
        rcode: ResponseCode,
    },
    Query(Request),
}

/// A plain query as read off the wire by [`parse`]: QR clear, opcode
/// QUERY, one question of class IN with an uncompressed name at offset 12,
/// no answer or authority records, at most an OPT record (root owner,
/// extended rcode 0, well-formed options), and nothing after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// Length of the question name on the wire (it starts at offset 12).
    pub name_len: usize,
    pub qtype: u16,
    pub edns: Option<ClientEdns>,
    /// The OPT record's EDNS version (0 without one).
    pub version: u8,
}

impl Wire {
    /// The question name, as the client spelled it (wire form).
    pub fn name<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[12..12 + self.name_len]
    }
}

/// A question name as the memo's and the cache's keys hold it: its wire
/// form, lower-cased (ASCII, as DNS compares names). For a plain query it
/// is the packet's own name bytes lower-cased ([`Wire::name`]).
pub fn name_key(name: &hickory_proto::rr::Name, into: &mut Vec<u8>) {
    for label in name.iter() {
        into.push(label.len() as u8); // a label is at most 63 bytes
        into.extend(label.iter().map(u8::to_ascii_lowercase));
    }
    into.push(0);
}

/// Reads a plain query (see [`Wire`]) without allocating; `None` when the
/// packet is anything else, which [`check`] then decodes whole.
#[inline(always)]
pub fn parse(bytes: &[u8]) -> Option<Wire> {
    let header = bytes.get(..12)?;
    let count = |i: usize| u16::from_be_bytes([header[i], header[i + 1]]);
    if header[2] & 0xF8 != 0 || count(4) != 1 || count(6) != 0 || count(8) != 0 || count(10) > 1 {
        return None;
    }
    let mut at = 12;
    loop {
        let len = *bytes.get(at)?;
        if len & 0xC0 != 0 {
            return None; // a pointer, or an unknown label type
        }
        at += usize::from(len) + 1;
        if len == 0 {
            break;
        }
    }
    let name_len = at - 12;
    if name_len > 255 {
        return None; // too long
    }
    let question = bytes.get(at..at + 4)?;
    if question[2..4] != [0, 1] {
        return None;
    }
    let qtype = u16::from_be_bytes([question[0], question[1]]);
    at += 4;
    let (edns, version) = if count(10) == 1 {
        let (edns, version) = opt(bytes, &mut at)?;
        (Some(edns), version)
    } else {
        (None, 0)
    };
    (at == bytes.len()).then_some(Wire {
        name_len,
        qtype,
        edns,
        version,
    })
}

/// Decodes and checks one DNS message from a client.
pub fn check(bytes: &[u8]) -> Triage {
    check_parsed(bytes, parse(bytes))
}

/// [`check`] of a packet already [`parse`]d: a plain query is checked from
/// what the parser read (its question name decoded alone); anything else is
/// decoded whole.
pub fn check_parsed(bytes: &[u8], wire: Option<Wire>) -> Triage {
    if bytes.len() < 12 || bytes[2] & 0x80 != 0 {
        return Triage::Drop;
    }
    match wire {
        Some(wire) => plain(bytes, &wire),
        None => decoded(bytes),
    }
}

/// The header rules for a plain query: only the version and the type can
/// still refuse it.
fn plain(bytes: &[u8], wire: &Wire) -> Triage {
    let (Ok(header), Ok(name)) = (
        Header::read(&mut BinDecoder::new(bytes)),
        Name::read(&mut BinDecoder::new(wire.name(bytes))),
    ) else {
        return decoded(bytes);
    };
    let query = Query::query(name, RecordType::from(wire.qtype)); // class IN
    let (meta, edns) = (header.metadata, wire.edns);
    let rcode = if wire.version > 0 {
        ResponseCode::BADVERS
    } else if matches!(query.query_type(), RecordType::AXFR | RecordType::IXFR) {
        ResponseCode::Refused
    } else {
        return Triage::Query(Request { meta, query, edns });
    };
    Triage::Reject {
        meta,
        query: Some(query),
        edns,
        rcode,
    }
}

/// The header rules for any other message, decoded whole by hickory.
fn decoded(bytes: &[u8]) -> Triage {
    let msg = match Message::from_vec(bytes) {
        Ok(m) => m,
        Err(_) => {
            let Ok(header) = Header::read(&mut BinDecoder::new(bytes)) else {
                return Triage::Drop;
            };
            return Triage::Reject {
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
        nsid: e.option(hickory_proto::rr::rdata::opt::EdnsCode::NSID).is_some(),
    });
    let version = msg.edns.as_ref().map_or(0, |e| e.version());
    let meta = msg.metadata;
    let mut queries = msg.queries;
    let single = if queries.len() == 1 { queries.pop() } else { None };
    let reject = |query, rcode| Triage::Reject {
        meta,
        query,
        edns,
        rcode,
    };
    if meta.message_type != MessageType::Query {
        return Triage::Drop;
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
    Triage::Query(Request { meta, query, edns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_key_is_the_plain_query_s_wire_name_lower_cased() {
        let spelled = "WEB.Shop.svc.cluster.local.";
        let mut m = hickory_proto::op::Message::query();
        let name = hickory_proto::rr::Name::from_ascii(spelled).expect("name");
        m.add_query(Query::query(name.clone(), hickory_proto::rr::RecordType::A));
        let bytes = m.to_vec().expect("encode");
        let wire = parse(&bytes).expect("plain");
        let mut key = Vec::new();
        name_key(&name, &mut key);
        assert_eq!(key, wire.name(&bytes).to_ascii_lowercase());
        let q = Query::query(name, hickory_proto::rr::RecordType::A);
        let cache = crate::query::forward::cache::Cache::key(&q, false, false);
        assert_eq!(cache[..key.len()], key[..], "the cache's key starts with it");
    }
    use hickory_proto::op::{Edns, Message, MessageType, OpCode};
    use hickory_proto::rr::Name;

    fn query(name: &str, qtype: RecordType, edns: Option<(u16, bool, u8)>, option: Option<(u16, &[u8])>) -> Vec<u8> {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(Name::from_ascii(name).expect("name"), qtype));
        if let Some((payload, dnssec_ok, version)) = edns {
            let mut e = Edns::new();
            e.set_max_payload(payload).set_dnssec_ok(dnssec_ok).set_version(version);
            if let Some((code, data)) = option {
                let option = hickory_proto::rr::rdata::opt::EdnsOption::Unknown(code, data.to_vec());
                e.options_mut().insert(option);
            }
            m.edns = Some(e);
        }
        m.to_vec().expect("encodes")
    }

    /// The wire parser and hickory's decoder check every packet alike:
    /// plain queries, unusual ones, and every one-byte change and every
    /// cut of them (what the parser does not take is decoded whole).
    #[test]
    fn the_parser_checks_as_the_decoder_does() {
        let cookie = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let seeds = [
            query("web.shop.svc.cluster.local.", RecordType::A, None, None),
            query(
                "Web.Shop.SVC.cluster.local.",
                RecordType::AAAA,
                Some((1232, true, 0)),
                None,
            ),
            query("a.", RecordType::SRV, Some((100, false, 0)), Some((10, &cookie))),
            query("a.", RecordType::A, Some((4096, false, 1)), None),
            query("a.b.", RecordType::AXFR, None, None),
            query(
                ".",
                RecordType::NS,
                Some((1232, false, 0)),
                Some((8, &[0, 1, 24, 0, 10, 1, 2])),
            ),
        ];
        let verdict = |b: &[u8]| format!("{:?}", check(b));
        let decoded = |b: &[u8]| format!("{:?}", check_parsed(b, None));
        let mut plain = 0;
        for seed in &seeds {
            plain += usize::from(parse(seed).is_some());
            let mut variants = vec![seed.clone()];
            for cut in 0..seed.len() {
                variants.push(seed[..cut].to_vec());
            }
            for at in 0..seed.len() {
                for value in [0u8, 1, 41, 63, 64, 0xC0, 0xFF, seed[at] ^ 0x20] {
                    let mut v = seed.clone();
                    v[at] = value;
                    variants.push(v);
                }
            }
            let mut longer = seed.clone();
            longer.push(0);
            variants.push(longer);
            for v in &variants {
                assert_eq!(verdict(v), decoded(v), "{v:?}");
            }
        }
        assert_eq!(plain, 5, "ECS is left to the decoder, the rest parse");
        let wire = parse(&seeds[1]).expect("plain");
        assert_eq!(
            wire.edns,
            Some(ClientEdns {
                payload: 1232,
                dnssec_ok: true,
                nsid: false
            })
        );
        assert_eq!(parse(&seeds[2]).and_then(|w| w.edns).map(|e| e.payload), Some(512));
        assert_eq!(parse(&seeds[3]).map(|w| w.version), Some(1));
    }
}
