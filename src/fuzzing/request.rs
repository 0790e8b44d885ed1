//! The wire request parser against hickory's decoder, on any bytes:
//! [`crate::query::request::parse`] reads only plain queries, and for
//! every packet the verdict it leads to (drop, which error, or which
//! request) is the one a whole decode gives. Where it reads a packet, the
//! decoder reads the same question (with its spelling), type and EDNS.

use hickory_proto::op::{Message, MessageType, OpCode};
use hickory_proto::rr::{DNSClass, Name};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::query::request::{self, edns::ClientEdns};

/// Panics when the parser and hickory's decoder disagree about `data`.
pub fn parser_agrees(data: &[u8]) {
    let wire = request::parse(data);
    let ours = format!("{:?}", request::check_parsed(data, wire));
    let whole = format!("{:?}", request::check_parsed(data, None));
    assert_eq!(ours, whole, "the parser's verdict is the decoder's");
    let Some(wire) = wire else { return };
    let message = Message::from_vec(data).unwrap_or_else(|e| panic!("the parser read what hickory rejects: {e}"));
    let meta = &message.metadata;
    assert_eq!(
        (meta.message_type, meta.op_code),
        (MessageType::Query, OpCode::Query),
        "a plain query"
    );
    let others = message.answers.len() + message.authorities.len() + message.additionals.len();
    assert_eq!((message.queries.len(), others), (1, 0), "one question, no records");
    let question = &message.queries[0];
    let name = Name::read(&mut BinDecoder::new(wire.name(data))).expect("the parser's name decodes alone");
    assert!(name.eq_case(question.name()), "the same name, spelled alike");
    assert_eq!(wire.qtype, u16::from(question.query_type()), "the same type");
    assert_eq!(question.query_class(), DNSClass::IN, "class IN");
    let edns = message.edns.as_ref().map(|e| {
        let client = ClientEdns {
            payload: e.max_payload(),
            dnssec_ok: e.flags().dnssec_ok,
            nsid: false, // a plain query never carries NSID
        };
        (client, e.version())
    });
    assert_eq!(wire.edns.map(|e| (e, wire.version)), edns, "the same EDNS");
}
