//! Authenticated denial as NSEC "black lies" (draft-valsorda-dnsop-black-lies),
//! as CoreDNS's dnssec plugin makes them: the name asked owns an NSEC whose
//! next name is `\000.` under it, so that no other name is covered, and
//! whose bitmap lists every type but the one asked. A name that does not
//! exist is then answered as one without the type asked (NOERROR).

use hickory_proto::rr::{Name, Record, RecordType};

use crate::zonefile::dnssec::{type_bitmap, unknown};

/// What kind of answer an NSEC is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denial {
    NoData,
    NameError,
    Delegation,
}

// The codes of the types the bitmaps list (LOC, HIP and SPF have no name here).
const A: u16 = 1;
const NS: u16 = 2;
const SOA: u16 = 6;
const HINFO: u16 = 13;
const MX: u16 = 15;
const TXT: u16 = 16;
const AAAA: u16 = 28;
const LOC: u16 = 29;
const SRV: u16 = 33;
const CERT: u16 = 37;
const SSHFP: u16 = 44;
const RRSIG: u16 = 46;
const NSEC: u16 = 47;
const DNSKEY: u16 = 48;
const TLSA: u16 = 52;
const HIP: u16 = 55;
const OPENPGPKEY: u16 = 61;
const SPF: u16 = 99;

/// The bitmap below a zone's apex (CoreDNS's `zoneBitmap`).
const ZONE: [u16; 14] = [
    A, HINFO, TXT, AAAA, LOC, SRV, CERT, SSHFP, RRSIG, NSEC, TLSA, HIP, OPENPGPKEY, SPF,
];
/// At a delegation, or for a DS question (`delegationBitmap`).
const DELEGATION: [u16; 15] = [
    A, NS, HINFO, TXT, AAAA, LOC, SRV, CERT, SSHFP, RRSIG, NSEC, TLSA, HIP, OPENPGPKEY, SPF,
];
/// At the apex (`apexBitmap`).
const APEX: [u16; 18] = [
    A, NS, SOA, HINFO, MX, TXT, AAAA, LOC, SRV, CERT, SSHFP, RRSIG, NSEC, DNSKEY, TLSA, HIP, OPENPGPKEY, SPF,
];

/// The NSEC record for `qname` (`qtype` asked) in `zone`, with `ttl`.
pub fn nsec(qname: &Name, qtype: RecordType, zone: &Name, denial: Denial, ttl: u32) -> Record {
    let apex = qname.to_lowercase() == zone.to_lowercase();
    let qtype = u16::from(qtype);
    let mut codes: Vec<u16> = if apex {
        filtered(&APEX, qtype, denial)
    } else if denial == Denial::Delegation || qtype == u16::from(RecordType::DS) {
        DELEGATION.to_vec()
    } else {
        filtered(&ZONE, qtype, denial)
    };
    let next = match denial {
        Denial::Delegation if !apex => after_first_label(qname),
        _ => Name::from_labels([&b"\0"[..]])
            .and_then(|zero| zero.append_domain(qname))
            .ok(),
    };
    let mut rdata = Vec::new();
    // an NSEC's next name is not lowercased in canonical form (RFC 6840 5.1)
    let next = next.unwrap_or_else(|| qname.clone());
    for label in next.iter() {
        rdata.push(label.len() as u8);
        rdata.extend(label);
    }
    rdata.push(0);
    type_bitmap(&mut codes, &mut rdata);
    unknown(qname.clone(), ttl, RecordType::NSEC, rdata)
}

/// `bitmap` without `qtype` for a denial (NODATA or NXDOMAIN) of another
/// type than NSEC; whole otherwise.
fn filtered(bitmap: &[u16], qtype: u16, denial: Denial) -> Vec<u16> {
    let denies = matches!(denial, Denial::NoData | Denial::NameError) && qtype != NSEC;
    bitmap.iter().copied().filter(|t| !denies || *t != qtype).collect()
}

/// `qname` with `\000` appended to its first label: the next name at a cut.
fn after_first_label(qname: &Name) -> Option<Name> {
    let mut labels: Vec<Vec<u8>> = qname.iter().map(<[u8]>::to_vec).collect();
    labels.first_mut()?.push(0);
    let mut name = Name::from_labels(labels).ok()?;
    name.set_fqdn(true);
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::RData;

    fn name(s: &str) -> Name {
        Name::from_ascii(s).expect("name")
    }

    fn rdata(r: &Record) -> Vec<u8> {
        match &r.data {
            RData::Unknown { rdata, .. } => rdata.anything.clone(),
            _ => panic!("not unknown data"),
        }
    }

    /// CoreDNS's black_lies_bitmap_test.go: the type asked is left out.
    #[test]
    fn the_type_asked_is_left_out() {
        let zone = name("example.org.");
        let r = nsec(&name("ww.example.org."), RecordType::A, &zone, Denial::NoData, 1800);
        let wire = rdata(&r);
        let next = [&[1u8, 0][..], &[2], b"ww", &[7], b"example", &[3], b"org", &[0]].concat();
        assert_eq!(wire[..next.len()], next[..], "\\000.ww.example.org.");
        let bitmap = &wire[next.len()..];
        assert_eq!(bitmap[0], 0, "window 0");
        assert_eq!(bitmap[2] & 0x40, 0, "A (1) left out");
        assert_ne!(bitmap[3] & 0x04, 0, "HINFO (13) kept");
        let whole = nsec(&name("ww.example.org."), RecordType::A, &zone, Denial::Delegation, 1800);
        assert_eq!(rdata(&whole)[..4], [3, b'w', b'w', 0], "a cut: ww\\000.example.org.");
    }
}
