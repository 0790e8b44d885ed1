//! The three shapes of an IXFR answer (RFC 1995 section 4) read record by
//! record, and the answers that must fall back to AXFR.

use hickory_proto::rr::{rdata, Name};

use super::*;

fn zone(text: &str) -> Zone {
    let origin = Name::from_ascii("example.com.").expect("origin");
    crate::zonefile::parse(text, None, &origin).expect("zone")
}

fn name(n: &str) -> Name {
    Name::from_ascii(n).expect("name")
}

/// The SOA of serial `serial`.
fn soa(serial: u32) -> Record {
    let data = rdata::SOA::new(
        name("ns.example.com."),
        name("admin.example.com."),
        serial,
        3600,
        600,
        86400,
        60,
    );
    Record::from_rdata(name("example.com."), 60, RData::SOA(data))
}

fn a(owner: &str, ip: [u8; 4]) -> Record {
    Record::from_rdata(name(owner), 60, RData::A(rdata::A::from(std::net::Ipv4Addr::from(ip))))
}

fn held() -> Zone {
    zone(
        "example.com. 60 IN SOA ns.example.com. admin.example.com. 1 3600 600 86400 60\n\
         example.com. 60 IN NS ns.example.com.\nns.example.com. 60 IN A 127.0.0.1\nwww.example.com. 60 IN A 192.0.2.1\n",
    )
}

fn read_all(held: &Zone, answer: &[Record]) -> Result<Got, String> {
    let mut reader = Reader::new(held);
    for (i, r) in answer.iter().enumerate() {
        if reader.push(r.clone())? {
            assert_eq!(i + 1, answer.len(), "done before the last record");
            return reader.finish(held);
        }
    }
    Err("not done".into())
}

fn addresses(z: &Zone, name: &str) -> Vec<String> {
    let name = Name::from_ascii(name).expect("name");
    z.owned(&name).iter().map(|r| r.data.to_string()).collect()
}

#[test]
fn one_soa_not_newer_keeps_the_zone() {
    let got = read_all(&held(), &[soa(1)]).expect("read");
    assert!(got.is_none(), "{got:?}");
}

#[test]
fn diffs_are_applied_in_turn() {
    let www = "www.example.com.";
    let answer = [
        soa(3),
        soa(1),
        a(www, [192, 0, 2, 1]),
        soa(2),
        a(www, [192, 0, 2, 2]),
        soa(2),
        a(www, [192, 0, 2, 2]),
        soa(3),
        a(www, [192, 0, 2, 3]),
        a("mail.example.com.", [192, 0, 2, 9]),
        soa(3),
    ];
    let (z, diffs) = read_all(&held(), &answer).expect("read").expect("a zone");
    assert_eq!((z.serial(), diffs), (3, 2));
    assert_eq!(addresses(&z, "www.example.com."), vec!["192.0.2.3"]);
    assert_eq!(addresses(&z, "mail.example.com."), vec!["192.0.2.9"]);
    assert_eq!(
        addresses(&z, "ns.example.com."),
        vec!["127.0.0.1"],
        "untouched records stay"
    );
}

#[test]
fn an_axfr_style_answer_replaces_the_zone() {
    let ns = Record::from_rdata(name("example.com."), 60, RData::NS(rdata::NS(name("ns.example.com."))));
    let answer = [
        soa(5),
        ns,
        a("ns.example.com.", [127, 0, 0, 1]),
        a("other.example.com.", [192, 0, 2, 7]),
        soa(5),
    ];
    let (z, diffs) = read_all(&held(), &answer).expect("read").expect("a zone");
    assert_eq!((z.serial(), diffs), (5, 0));
    assert!(
        addresses(&z, "www.example.com.").is_empty(),
        "the held records are gone"
    );
    assert_eq!(addresses(&z, "other.example.com."), vec!["192.0.2.7"]);
}

#[test]
fn a_wrong_answer_is_an_error_for_axfr_to_mend() {
    let deletes_missing = [soa(2), soa(1), a("none.example.com.", [192, 0, 2, 1]), soa(2), soa(2)];
    assert!(read_all(&held(), &deletes_missing).is_err());
    let wrong_start = [soa(3), soa(2), soa(3), soa(3)];
    assert!(
        read_all(&held(), &wrong_start).is_err(),
        "a diff from a serial not held"
    );
    assert!(
        read_all(&held(), &[a("www.example.com.", [192, 0, 2, 1])]).is_err(),
        "no SOA first"
    );
}
