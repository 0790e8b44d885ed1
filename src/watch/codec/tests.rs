//! The codec's round trip: every record kind encodes and decodes back
//! unchanged, and every truncation of the body is caught.

use std::net::IpAddr;

use hickory_proto::rr::Name;

use super::*;
use crate::store::mcs::ImportKind;
use crate::store::{External, PortIn, Proto, Record, ServiceKind};

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

#[test]
fn records_round_trip_and_damage_is_detected() {
    let port = |name: &str| PortIn {
        name: name.into(),
        proto: Proto::Udp,
        port: 53,
    };
    let records = vec![
        Record::Namespace { name: "db".into() },
        Record::Service {
            namespace: "db".into(),
            name: "pg".into(),
            kind: ServiceKind::ClusterIp(vec![ip("10.0.0.1"), ip("fd00::1")].into()),
            selector: true,
            ports: vec![port("dns"), port("")],
            external: External::boxed(
                vec![ip("198.51.100.1")],
                vec![Name::from_ascii("lb.example.net.").expect("name")],
            ),
        },
        Record::Service {
            namespace: "db".into(),
            name: "ext".into(),
            kind: ServiceKind::ExternalName(Box::new(Name::from_ascii("example.com.").expect("name"))),
            selector: false,
            ports: vec![],
            external: None,
        },
        Record::Slice {
            namespace: "db".into(),
            name: "pg-1".into(),
            service: "pg".into(),
            ports: vec![port("dns")],
            endpoints: vec![(ip("10.1.0.1"), Some("pg-0".into())), (ip("10.1.0.2"), None)],
            zones: vec!["us-west-2a".into(), String::new()],
            trigger: None,
        },
        Record::Import {
            namespace: "db".into(),
            name: "pg".into(),
            kind: ImportKind::ClusterSetIp(vec![ip("10.200.0.1")].into()),
            ports: vec![port("dns")],
        },
        Record::Import {
            namespace: "db".into(),
            name: "peers".into(),
            kind: ImportKind::Headless,
            ports: vec![],
        },
        Record::McsSlice {
            namespace: "db".into(),
            name: "peers-east".into(),
            service: "peers".into(),
            cluster: "east".into(),
            ports: vec![port("dns")],
            endpoints: vec![(ip("10.2.0.1"), Some("peer-0".into())), (ip("10.2.0.2"), None)],
        },
        Record::Pod {
            namespace: "db".into(),
            name: "pg-0".into(),
            ips: vec![ip("10.1.0.1")],
            running: true,
        },
    ];
    let mut enc = Enc::new(Vec::new());
    records.iter().try_for_each(|r| enc.record(r)).expect("encode");
    let bytes = enc.finish().expect("finish");
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    assert_eq!(fnv(body).to_le_bytes(), sum);
    let mut dec = Dec::new(body, 0);
    let mut back = Vec::new();
    while !dec.done() {
        back.push(dec.record().expect("record"));
    }
    assert_eq!(back, records);
    // every truncation fails to decode or leaves a shorter list
    for cut in 1..body.len() {
        let mut dec = Dec::new(&body[..cut], 0);
        let mut n = 0;
        while !dec.done() {
            if dec.record().is_none() {
                break;
            }
            n += 1;
        }
        assert!(n < records.len(), "cut at {cut}");
    }
}
