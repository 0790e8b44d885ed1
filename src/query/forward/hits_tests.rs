//! Unit tests of the byte-level replay: where the TTLs are, that patching
//! them touches nothing else (OPT's TTL field holds EDNS flags), and that
//! `loadbalance`'s byte shuffle keeps the records whole.

use hickory_proto::op::{MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};

use super::*;
use crate::query::answer::{self, Zone};
use crate::query::finish::{write, Echo};
use crate::query::request::ClientEdns;

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("name")
}

/// `answer` written as `finish` writes it for `qname` A, with EDNS (DO set).
fn reply(qname: &str, answer: &Answer) -> Vec<u8> {
    let meta = Metadata::new(7, MessageType::Query, OpCode::Query);
    let query = Query::query(name(qname), RecordType::A);
    let echo = Echo {
        meta: &meta,
        query: Some(&query),
        edns: Some(ClientEdns {
            payload: 1232,
            dnssec_ok: true,
        }),
    };
    let mut out = Vec::new();
    write(&mut out, &echo, answer, 1232);
    out
}

fn positive(ttl: u32, n: u8) -> Answer {
    let owner = name("www.example.org.");
    let target = name("web.example.org.");
    let mut a = Answer::default();
    a.answers.push(answer::cname(&owner, ttl, target.clone()));
    for i in 1..=n {
        let ip = std::net::IpAddr::from([192, 0, 2, i]);
        a.answers.extend(answer::address(&target, ttl, ip, RecordType::A));
    }
    a.additional.push(answer::txt(&target, ttl, "extra"));
    a
}

fn negative(ttl: u32) -> Answer {
    let mut a = Answer::default();
    a.rcode = ResponseCode::NXDomain;
    a.authority.push(answer::soa(&Zone::new(name("example.org.")), ttl, 1));
    a
}

#[test]
fn every_ttl_is_found_and_patched_and_nothing_else_changes() {
    for (answer, records) in [(positive(30, 3), 5), (negative(30), 1)] {
        let before = reply("www.example.org.", &answer);
        let walked = walk(&before).expect("walks to the end");
        assert_eq!(walked.ttls.len(), records, "every record but OPT");
        let mut after = before.clone();
        patch_ttls(&mut after, &walked.ttls, 17).expect("in bounds");
        let parsed = crate::fuzzing::parse_strict(&after).expect("strict");
        let ttls: Vec<u32> = parsed
            .answers
            .iter()
            .chain(&parsed.authorities)
            .chain(parsed.additionals.iter().filter(|r| r.record_type() != RecordType::OPT))
            .map(|r| r.ttl)
            .collect();
        assert_eq!(ttls, vec![17; records]);
        let edns = parsed.edns.as_ref().expect("OPT kept");
        assert!(edns.flags().dnssec_ok, "OPT's TTL field (the DO bit) untouched");
        assert_eq!(edns.max_payload(), 1232);
        if let Some(soa) = parsed.authorities.first() {
            let RData::SOA(soa) = &soa.data else { panic!("SOA") };
            assert_eq!(soa.minimum, 30, "the SOA's MINIMUM is data, not a TTL");
        }
        let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        assert!(changed <= 2 * records, "only TTL bytes differ ({changed})");
    }
}

#[test]
fn ttls_decrease_as_patched() {
    let before = reply("www.example.org.", &negative(300));
    let walked = walk(&before).expect("walks");
    let mut out = before.clone();
    let mut last = u32::MAX;
    for left in [299, 120, 1, 0] {
        patch_ttls(&mut out, &walked.ttls, left).expect("patched");
        let parsed = crate::fuzzing::parse_strict(&out).expect("strict");
        let ttl = parsed.authorities[0].ttl;
        assert!(ttl < last, "{ttl} after {last}");
        last = ttl;
    }
}

#[test]
fn a_reply_that_does_not_parse_to_its_end_is_not_walked() {
    let mut r = reply("www.example.org.", &positive(30, 2));
    r.push(0);
    assert_eq!(walk(&r), None);
    r.truncate(r.len() - 8);
    assert_eq!(walk(&r), None);
    assert_eq!(walk(&[0; 11]), None);
    let mut looped = reply("www.example.org.", &positive(30, 2));
    looped[12] = 0xFF; // a label length no name may have
    assert_eq!(walk(&looped), None);
}

#[test]
fn the_byte_shuffle_keeps_records_whole_and_reorders_them() {
    let answer = positive(30, 6);
    let r = reply("www.example.org.", &answer);
    let walked = walk(&r).expect("walks");
    let (slots, len) = shuffle_slots(&answer, &walked).expect("one owner, one type");
    assert_eq!((slots.len(), len), (6, 4));
    let addresses = |bytes: &[u8]| -> Vec<String> {
        let m = crate::fuzzing::parse_strict(bytes).expect("strict");
        m.answers.iter().skip(1).map(|r| r.data.to_string()).collect()
    };
    let original = addresses(&r);
    let mut orders = std::collections::HashSet::new();
    for _ in 0..50 {
        let mut out = r.clone();
        shuffle(&mut out, &slots, usize::from(len));
        let mut got = addresses(&out);
        orders.insert(got.clone());
        got.sort();
        let mut want = original.clone();
        want.sort();
        assert_eq!(got, want, "the same addresses");
    }
    assert!(orders.len() > 1, "the order changes");
}

#[test]
fn addresses_of_two_owners_are_not_shuffled_as_bytes() {
    let mut answer = Answer::default();
    for (owner, i) in [("a.example.org.", 1), ("b.example.org.", 2)] {
        let ip = std::net::IpAddr::from([192, 0, 2, i]);
        answer
            .answers
            .extend(answer::address(&name(owner), 30, ip, RecordType::A));
    }
    let r = reply("a.example.org.", &answer);
    let walked = walk(&r).expect("walks");
    assert_eq!(shuffle_slots(&answer, &walked), None);
    assert_eq!(
        shuffle_slots(
            &positive(30, 1),
            &walk(&reply("www.example.org.", &positive(30, 1))).expect("walks")
        ),
        Some((Vec::new(), 0))
    );
}
