//! An upstream that is the test itself: a UDP socket whose queries the
//! test reads ([`held`]) and answers when it chooses ([`answer`]), so a
//! forwarded query is in flight for exactly as long as the test needs.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};

use hickory_proto::op::{Message, MessageType};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record};

use super::REPLY;

/// The address [`answer`] answers with.
pub const ADDRESS: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 9);

/// The upstream's reply to `req`: its question, one A record ([`ADDRESS`]).
pub fn answer(req: &Message) -> Vec<u8> {
    let mut m = Message::new(req.metadata.id, MessageType::Response, req.metadata.op_code);
    m.metadata.recursion_desired = true;
    m.metadata.recursion_available = true;
    let q = req.queries[0].clone();
    let owner = q.name().clone();
    m.add_query(q);
    m.add_answer(Record::from_rdata(owner, 60, RData::A(A::from(ADDRESS))));
    m.to_vec().expect("encode")
}

/// The next query the upstream `up` got, and where from (waited for up
/// to [`REPLY`], a ceiling only a hang reaches).
pub fn held(up: &UdpSocket) -> (Message, SocketAddr) {
    up.set_read_timeout(Some(REPLY)).expect("timeout");
    let mut buf = vec![0u8; 65535];
    let (n, from) = up.recv_from(&mut buf).expect("a query upstream");
    (Message::from_vec(&buf[..n]).expect("a query"), from)
}
