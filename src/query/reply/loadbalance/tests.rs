//! CoreDNS's round robin and `prefer` order, and the draw of
//! `loadbalance weighted` with the random number fixed (the rows of
//! CoreDNS's TestLoadBalanceWRR).

use std::path::PathBuf;
use std::time::Duration;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use std::net::IpAddr;

use hickory_proto::rr::rdata::TXT;

use super::{draw, prefer};
use crate::corefile::args::Net;
use crate::query::plugins::template::parse_rr;
use crate::query::reply::loadbalance::setup::LoadbalanceConfig;
use crate::query::reply::loadbalance::weights::Weights;
use crate::query::reply::{address, cname, Answer};

fn weights(text: &str) -> std::sync::Arc<Weights> {
    let dir = std::env::temp_dir().join(format!("clusterdns-weights-{}", fastrand::u64(..)));
    std::fs::create_dir_all(&dir).expect("dir");
    let file: PathBuf = dir.join("w");
    std::fs::write(&file, text).expect("write");
    let w = Weights::load(file, Duration::ZERO).expect("loads");
    let _ = std::fs::remove_dir_all(&dir);
    w
}

#[test]
fn the_draw_falls_into_the_heaviest_first() {
    let w = weights(
        "endpoint.region2.skydns.test\n10.240.0.2 5\n10.240.0.1 2\n\
         endpoint.region1.skydns.test\n::2 4\n::1 3\n",
    );
    let addrs: Vec<_> = [
        "endpoint.region2.skydns.test. 300 IN A 10.240.0.1",
        "endpoint.region2.skydns.test. 300 IN A 10.240.0.2",
        "endpoint.region2.skydns.test. 300 IN A 10.240.0.3",
        "endpoint.region1.skydns.test. 300 IN AAAA ::1",
        "endpoint.region1.skydns.test. 300 IN AAAA ::2",
    ]
    .iter()
    .map(|t| parse_rr(t).expect("rr"))
    .collect();
    // TestLoadBalanceWRR row 0: (random value, top address); the sum is 15.
    for (v, top) in [
        (0, 1),
        (4, 1),
        (5, 4),
        (8, 4),
        (9, 3),
        (11, 3),
        (12, 0),
        (13, 0),
        (14, 2),
    ] {
        let got = draw(&addrs, &w, |limit| {
            assert_eq!(limit, 15);
            v
        });
        assert_eq!(got, Some(top), "random {v}");
    }
}

fn rr(text: &str) -> Record {
    let n = Name::from_ascii("x.example.").expect("name");
    match text.split_once(' ') {
        Some(("A", ip)) => address(&n, 60, ip.parse().expect("ip"), RecordType::A).expect("A"),
        Some(("CNAME", t)) => cname(&n, 60, Name::from_ascii(t).expect("target")),
        Some(("MX", t)) => Record::from_rdata(
            n,
            60,
            RData::MX(hickory_proto::rr::rdata::MX::new(10, Name::from_ascii(t).expect("mx"))),
        ),
        _ => Record::from_rdata(n, 60, RData::TXT(TXT::new(vec![text.to_string()]))),
    }
}

fn kinds(a: &Answer) -> Vec<String> {
    a.answers.iter().map(|r| r.record_type().to_string()).collect()
}

#[test]
fn balance_orders_sections_as_coredns_and_prefer_puts_networks_first() {
    let mut a = Answer::default();
    for t in ["A 10.0.0.1", "t", "MX m.", "CNAME c.", "A 192.168.1.1", "A 10.9.20.5"] {
        a.answers.push(rr(t));
    }
    assert!(a.balance(&LoadbalanceConfig::default()));
    assert_eq!(kinds(&a), ["CNAME", "TXT", "A", "A", "A", "MX"]);
    let prefer = LoadbalanceConfig {
        prefer: vec![
            Net::parse("10.9.20.0/24").expect("net"),
            Net::parse("192.168.1.0/24").expect("net"),
        ],
        weighted: None,
    };
    a.balance(&prefer);
    assert_eq!(kinds(&a), ["CNAME", "A", "A", "A", "MX", "TXT"]);
    let addrs: Vec<String> = a.answers[1..3].iter().map(|r| r.data.to_string()).collect();
    assert_eq!(addrs, ["10.9.20.5", "192.168.1.1"]);
    // not NOERROR: left as it is
    let mut nx = Answer {
        rcode: ResponseCode::NXDomain,
        ..Answer::default()
    };
    nx.answers.extend([rr("t"), rr("CNAME c.")]);
    assert!(!nx.balance(&prefer));
    assert_eq!(kinds(&nx), ["TXT", "CNAME"]);
}

/// plugin/loadbalance/prefer_test.go TestSortPreferred (coredns/coredns),
/// as data: the order `prefer` gives, before any shuffle.
#[test]
fn coredns_sort_preferred() {
    let n = Name::from_ascii("example.org.").expect("name");
    let mut records: Vec<Record> = [
        "10.9.30.1",
        "10.9.20.5",
        "192.168.1.2",
        "10.10.0.1",
        "10.9.20.3",
        "172.16.0.1",
        "2001:db8::1",
        "2001:db8:abcd::1",
        "fd00::1",
    ]
    .iter()
    .filter_map(|ip| {
        let ip: IpAddr = ip.parse().ok()?;
        address(&n, 300, ip, if ip.is_ipv4() { RecordType::A } else { RecordType::AAAA })
    })
    .collect();
    records.push(cname(&n, 300, Name::from_ascii("alias.example.org.").expect("target")));
    let nets: Vec<Net> = ["2001:db8::/32", "10.9.20.0/24", "10.9.30.0/24"]
        .iter()
        .filter_map(|c| Net::parse(c))
        .collect();
    prefer(&mut records, &nets);
    let order: Vec<String> = records.iter().map(|r| r.data.to_string()).collect();
    let want = [
        "alias.example.org.",
        "2001:db8::1",
        "2001:db8:abcd::1",
        "10.9.20.5",
        "10.9.20.3",
        "10.9.30.1",
        "192.168.1.2",
        "10.10.0.1",
        "172.16.0.1",
        "fd00::1",
    ];
    assert_eq!(order, want);
}
