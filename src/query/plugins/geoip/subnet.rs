//! The address of a request's EDNS Client Subnet option (RFC 7871,
//! option 8): what `geoip { edns-subnet }` looks up instead of the
//! client's address, read from the request's bytes (the router's path;
//! the query log reads the decoded message, `metadata::subnet_of`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::query::request::walk::{Records, Section};

/// The ECS option's address in the request `msg` (wire bytes), if its
/// OPT record carries a well-formed one.
pub fn of_wire(msg: &[u8]) -> Option<IpAddr> {
    let opt = Records::of(msg)?.find(|r| r.section == Section::Additional && r.rtype == 41)?;
    let mut options = msg.get(opt.rdata..opt.end)?;
    while options.len() >= 4 {
        let code = u16::from_be_bytes([options[0], options[1]]);
        let len = usize::from(u16::from_be_bytes([options[2], options[3]]));
        let data = options.get(4..4 + len)?;
        if code == 8 {
            return address(data);
        }
        options = &options[4 + len..];
    }
    None
}

/// FAMILY, SOURCE PREFIX-LENGTH, SCOPE PREFIX-LENGTH, ADDRESS (the
/// prefix's bytes, the rest zero).
fn address(data: &[u8]) -> Option<IpAddr> {
    let family = u16::from_be_bytes([*data.first()?, *data.get(1)?]);
    let bytes = data.get(4..)?;
    match family {
        1 if bytes.len() <= 4 => {
            let mut a = [0u8; 4];
            a[..bytes.len()].copy_from_slice(bytes);
            Some(IpAddr::V4(Ipv4Addr::from(a)))
        }
        2 if bytes.len() <= 16 => {
            let mut a = [0u8; 16];
            a[..bytes.len()].copy_from_slice(bytes);
            Some(IpAddr::V6(Ipv6Addr::from(a)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::op::{Edns, Message, Query};
    use hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsOption};
    use hickory_proto::rr::{Name, RecordType};

    /// A query carrying ECS `subnet`, read both ways.
    #[test]
    fn the_option_read_from_bytes_and_message() {
        for (subnet, want) in [("81.2.69.0/24", "81.2.69.0"), ("2001:db8::/56", "2001:db8::")] {
            let mut m = Message::query();
            m.add_query(Query::query(
                Name::from_ascii("example.org.").expect("valid"),
                RecordType::A,
            ));
            let mut edns = Edns::new();
            let s: ClientSubnet = subnet.parse().expect("valid");
            edns.options_mut().insert(EdnsOption::Subnet(s));
            m.edns = Some(edns);
            let bytes = m.to_vec().expect("valid");
            assert_eq!(super::of_wire(&bytes), Some(want.parse().expect("valid")), "{subnet}");
            let back = Message::from_vec(&bytes).expect("valid");
            assert_eq!(
                crate::query::metadata::subnet_of(&back),
                Some(want.parse().expect("valid")),
                "{subnet}"
            );
        }
        let plain = Message::query().to_vec().expect("valid");
        assert_eq!(super::of_wire(&plain), None);
    }
}
