//! Finds the SOA serial in an encoded reply, so a memoized negative
//! answer kept across a publish can carry the current serial, as a fresh
//! answer would.

use crate::query::request::walk::{skip_name, Records, Section};

const SOA: u16 = 6;

/// The offset of the serial of the one SOA record in the answer and
/// authority sections: `Some(None)` when there is none, `None` when the
/// reply cannot be walked or holds several.
pub(super) fn serial_at(msg: &[u8]) -> Option<Option<usize>> {
    let mut records = Records::of(msg)?;
    let mut found = None;
    for rr in records.by_ref().take_while(|rr| rr.section != Section::Additional) {
        if rr.rtype == SOA {
            let serial = skip_name(msg, skip_name(msg, rr.rdata)?)?;
            if found.is_some() || serial + 20 != rr.end {
                return None;
            }
            found = Some(serial);
        }
    }
    records.end().map(|_| found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::reply::{self, Zone};
    use hickory_proto::op::{Message, MessageType, OpCode, Query};
    use hickory_proto::rr::{Name, RecordType};

    fn name(s: &str) -> Name {
        Name::from_ascii(s).expect("name")
    }

    #[test]
    fn finds_the_serial_of_a_negative_answer() {
        let mut m = Message::new(7, MessageType::Response, OpCode::Query);
        m.add_query(Query::query(name("nope.svc.cluster.local."), RecordType::A));
        let zone = Zone::new(name("cluster.local."));
        m.add_authority(reply::soa(&zone, 30, 0xDEAD_BEEF));
        let bytes = m.to_vec().expect("encode");
        let at = serial_at(&bytes).expect("walkable").expect("an SOA");
        assert_eq!(bytes[at..at + 4], 0xDEAD_BEEFu32.to_be_bytes());
    }

    #[test]
    fn no_soa_and_broken_replies() {
        let mut m = Message::new(7, MessageType::Response, OpCode::Query);
        let owner = name("a.b.svc.cluster.local.");
        m.add_query(Query::query(owner.clone(), RecordType::A));
        let ip = "10.0.0.1".parse().expect("ip");
        m.add_answer(reply::address(&owner, 30, ip, RecordType::A).expect("A"));
        let bytes = m.to_vec().expect("encode");
        assert_eq!(serial_at(&bytes), Some(None));
        assert_eq!(serial_at(&bytes[..bytes.len() - 2]), None, "cut short");
        let zone = Zone::new(name("cluster.local."));
        m.add_authority(reply::soa(&zone, 30, 1));
        m.add_authority(reply::soa(&zone, 30, 2));
        assert_eq!(serial_at(&m.to_vec().expect("encode")), None, "two SOAs");
    }
}
