//! `whoami`, CoreDNS's plugin that tells a client how it is seen: a query
//! that reaches it (nothing before it in the block answered) gets NOERROR
//! with AA, an empty answer, and in the additional section the client's
//! address (`QNAME 0 A|AAAA IP`) and the source port and transport it
//! asked from (`_udp.QNAME 0 SRV 0 0 PORT .`, `_tcp.` over TCP), in the
//! question's class. The reply is the client's own: never memoized.

use std::net::IpAddr;

use hickory_proto::op::Query;
use hickory_proto::rr::rdata::{A, AAAA, SRV};
use hickory_proto::rr::{Name, RData, Record};

use crate::query::reply::Answer;

/// Writes the whoami reply to `query` from `client` at `port` into `out`.
pub fn answer(query: &Query, client: IpAddr, port: u16, tcp: bool, out: &mut Answer) {
    out.clear_records();
    out.authoritative = true;
    let (qname, class) = (query.name(), query.query_class());
    let address = match client {
        IpAddr::V4(ip) => RData::A(A(ip)),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => RData::A(A(v4)),
            None => RData::AAAA(AAAA(ip)),
        },
    };
    let mut rr = Record::from_rdata(qname.clone(), 0, address);
    rr.dns_class = class;
    out.additional.push(rr);
    let proto = if tcp { "_tcp" } else { "_udp" };
    if let Ok(owner) = Name::from_ascii(proto).and_then(|p| p.append_name(qname)) {
        let srv = RData::SRV(SRV::new(0, 0, port, Name::root()));
        let mut rr = Record::from_rdata(owner, 0, srv);
        rr.dns_class = class;
        out.additional.push(rr);
    }
}
