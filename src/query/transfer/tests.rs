//! The request test and serial arithmetic of `transfer`; whole transfers
//! over real sockets are in `tests/transfer.rs`.

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use super::asks;

fn request(qtype: RecordType, op: OpCode, kind: MessageType) -> Vec<u8> {
    let mut m = Message::new(7, kind, op);
    m.add_query(Query::query(Name::from_ascii("cluster.local.").expect("name"), qtype));
    m.to_vec().expect("encode")
}

#[test]
fn only_plain_axfr_and_ixfr_queries_are_transfer_requests() {
    assert!(asks(&request(RecordType::AXFR, OpCode::Query, MessageType::Query)));
    assert!(asks(&request(RecordType::IXFR, OpCode::Query, MessageType::Query)));
    assert!(!asks(&request(RecordType::SOA, OpCode::Query, MessageType::Query)));
    assert!(!asks(&request(RecordType::AXFR, OpCode::Notify, MessageType::Query)));
    assert!(!asks(&request(RecordType::AXFR, OpCode::Query, MessageType::Response)));
    let whole = request(RecordType::AXFR, OpCode::Query, MessageType::Query);
    for cut in 0..whole.len() {
        assert!(!asks(&whole[..cut]), "a message cut at {cut} is no request");
    }
    let mut pointer = whole.clone();
    pointer[12] = 0xC0; // a compression pointer in the question
    assert!(!asks(&pointer));
}
