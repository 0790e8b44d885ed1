//! Finds the SOA serial in an encoded reply, so a memoized negative
//! answer kept across a publish can carry the current serial, as a fresh
//! answer would.

use crate::query::request::edns::skip_name;

const SOA: [u8; 2] = [0, 6];

/// The offset of the serial of the one SOA record in the answer and
/// authority sections: `Some(None)` when there is none, `None` when the
/// reply cannot be walked or holds several.
pub(super) fn serial_at(msg: &[u8]) -> Option<Option<usize>> {
    let count = |i: usize| msg.get(i..i + 2).map(|c| usize::from(u16::from_be_bytes([c[0], c[1]])));
    let (questions, records) = (count(4)?, count(6)? + count(8)?);
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(msg, at)? + 4;
    }
    let mut found = None;
    for _ in 0..records {
        at = skip_name(msg, at)?;
        let fixed = msg.get(at..at + 10)?;
        let rdata = at + 10;
        let end = rdata + usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        if fixed[..2] == SOA {
            let serial = skip_name(msg, skip_name(msg, rdata)?)?;
            if found.is_some() || serial + 20 != end {
                return None;
            }
            found = Some(serial);
        }
        at = end;
    }
    (at <= msg.len()).then_some(found)
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
