//! CoreDNS's plugin/etcd/lookup_test.go and other_test.go rows, asked of
//! a mirror filled directly (no etcd): each row is a question and the
//! answer, authority and additional sections as text, sorted.

use super::*;
use crate::query::plugins::etcd::mirror::{entry, Records};

/// The services of lookup_test.go: (name, JSON).
const SERVICES: &[(&str, &str)] = &[
    (
        "a.server1.dev.region1.skydns.test.",
        r#"{"host":"dev.server1","port":8080}"#,
    ),
    (
        "a.server1.prod.region1.skydns.test.",
        r#"{"host":"10.0.0.1","port":8080}"#,
    ),
    (
        "b.server1.prod.region1.skydns.test.",
        r#"{"host":"10.0.0.2","port":8080}"#,
    ),
    ("b.server6.prod.region1.skydns.test.", r#"{"host":"::1","port":8080}"#),
    ("a.txt.server1.prod.region1.skydns.test.", r#"{"text":"sometext"}"#),
    ("b.txt.server1.prod.region1.skydns.test.", r#"{"text":"moretext"}"#),
    (
        "cname.prod.region1.skydns.test.",
        r#"{"host":"unresolvable.skydns.test"}"#,
    ),
    (
        "priority.skydns.test.",
        r#"{"host":"priority.server1","priority":333,"port":8080}"#,
    ),
    ("a.sub.region1.skydns.test.", r#"{"host":"sub.server1"}"#),
    ("b.sub.region1.skydns.test.", r#"{"host":"sub.server2","port":80}"#),
    ("c.sub.region1.skydns.test.", r#"{"host":"10.0.0.1","port":8080}"#),
    (
        "a.targetstrip.skydns.test.",
        r#"{"host":"10.0.0.1","port":8080,"targetstrip":1}"#,
    ),
    ("b.cname.skydns.test.", r#"{"host":"a.cname.skydns.test"}"#),
    ("a.cname.skydns.test.", r#"{"host":"b.cname.skydns.test"}"#),
    ("a.ns.dns.skydns.test.", r#"{"host":"10.0.0.2"}"#),
    ("b.ns.dns.skydns.test.", r#"{"host":"10.0.0.3"}"#),
    ("ns1.c.ns.dns.skydns.test.", r#"{"host":"10.0.0.4","targetstrip":1}"#),
    ("ns2.c.ns.dns.skydns.test.", r#"{"host":"10.0.0.5","targetstrip":1}"#),
    ("x.skydns_zoneb.test.", r#"{"host":"10.0.0.2"}"#),
    ("y.skydns_zoneb.test.", r#"{"host":"10.0.0.3"}"#),
    ("apex.dns.skydns_zoneb.test.", r#"{"host":"10.0.0.4"}"#),
    ("1.0.0.10.in-addr.arpa.", r#"{"host":"reverse.example.com"}"#),
    (
        "a.mail.skydns.test.",
        r#"{"host":"mx.skydns.test","priority":50,"mail":true}"#,
    ),
    (
        "a.mx.skydns.test.",
        r#"{"host":"a.ipaddr.skydns.test","priority":30,"mail":true}"#,
    ),
    ("a.ipaddr.skydns.test.", r#"{"host":"172.16.1.1"}"#),
    ("large600.skydns.test.", r#"{"text":"LARGE"}"#),
    ("bad.skydns.test.", r#"{"host":1"#),
];

fn etcd(fallthrough: bool) -> Etcd {
    let zones = ["skydns.test.", "skydns_zoneb.test.", "in-addr.arpa."];
    let cfg = EtcdConfig {
        zones: zones.iter().map(|z| Name::from_ascii(z).expect("zone")).collect(),
        fallthrough: fallthrough.then(Vec::new),
        path: "/skydns".into(),
        endpoints: vec![setup::DEFAULT_ENDPOINT.into()],
        credentials: None,
        tls: None,
        min_lease_ttl: 30,
        max_lease_ttl: 86_400,
    };
    let mut records = Records::new();
    for (name, json) in SERVICES {
        let json = json.replace("LARGE", &"0".repeat(600));
        let (k, v) = entry(service::path(name, "skydns").as_bytes(), json.as_bytes(), 0);
        records.insert(k, v);
    }
    let mirror = Arc::new(Mirror::default());
    mirror.store(records);
    Etcd::with(cfg, mirror)
}

/// The reply to `name type` as `RCODE|answer|authority|additional`, each
/// section's records sorted and the SOA's serial left out.
fn ask(e: &Etcd, name: &str, qtype: RecordType) -> String {
    let query = Query::query(Name::from_ascii(name).expect("name"), qtype);
    let client = Client {
        ip: std::net::Ipv4Addr::LOCALHOST.into(),
        wire: Default::default(),
        subnet: None,
    };
    let mut out = Answer::default();
    if e.answer(&query, &client, &mut out) == Verdict::Next {
        return "next".into();
    }
    let text = |rs: &[Record]| {
        let mut v: Vec<String> = rs.iter().map(|r| r.to_string().replace('\t', " ")).collect();
        v.iter_mut()
            .filter(|t| t.contains(" SOA "))
            .for_each(|t| *t = t.split(" hostmaster").next().unwrap_or("").into());
        v.sort();
        v.join(", ")
    };
    format!(
        "{:?}|{}|{}|{}",
        out.rcode,
        text(&out.answers),
        text(&out.authority),
        text(&out.additional)
    )
}

const SOA: &str = "skydns.test. 30 IN SOA ns.dns.skydns.test.";

#[test]
fn lookup_test_rows() {
    let e = etcd(false);
    let rows: &[(&str, RecordType, String)] = &[
        ("a.server1.dev.region1.skydns.test.", RecordType::SRV, "NoError|a.server1.dev.region1.skydns.test. 300 IN SRV 10 100 8080 dev.server1.||".into()),
        ("doesnotexist.skydns.test.", RecordType::A, format!("NXDomain||{SOA}|")),
        ("a.server1.prod.region1.skydns.test.", RecordType::SRV, "NoError|a.server1.prod.region1.skydns.test. 300 IN SRV 10 100 8080 a.server1.prod.region1.skydns.test.||a.server1.prod.region1.skydns.test. 300 IN A 10.0.0.1".into()),
        ("server1.prod.region1.skydns.test.", RecordType::A, "NoError|server1.prod.region1.skydns.test. 300 IN A 10.0.0.1, server1.prod.region1.skydns.test. 300 IN A 10.0.0.2||".into()),
        ("sub.region1.skydns.test.", RecordType::SRV, "NoError|sub.region1.skydns.test. 300 IN SRV 10 33 0 sub.server1., sub.region1.skydns.test. 300 IN SRV 10 33 80 sub.server2., sub.region1.skydns.test. 300 IN SRV 10 33 8080 c.sub.region1.skydns.test.||c.sub.region1.skydns.test. 300 IN A 10.0.0.1".into()),
        ("targetstrip.skydns.test.", RecordType::SRV, "NoError|targetstrip.skydns.test. 300 IN SRV 10 100 8080 targetstrip.skydns.test.||targetstrip.skydns.test. 300 IN A 10.0.0.1".into()),
        ("cname.prod.region1.skydns.test.", RecordType::A, format!("NoError||{SOA}|")),
        ("txt.server1.prod.region1.skydns.test.", RecordType::TXT, "NoError|txt.server1.prod.region1.skydns.test. 300 IN TXT moretext, txt.server1.prod.region1.skydns.test. 300 IN TXT sometext||".into()),
        ("a.cname.skydns.test.", RecordType::A, format!("NoError||{SOA}|")),
        ("a.server1.dev.region1.skydns.test.", RecordType::HINFO, format!("NoError||{SOA}|")),
        ("a.server1.nonexistent.region1.skydns.test.", RecordType::HINFO, format!("NXDomain||{SOA}|")),
        ("skydns.test.", RecordType::NS, "NoError|skydns.test. 300 IN NS a.ns.dns.skydns.test., skydns.test. 300 IN NS b.ns.dns.skydns.test., skydns.test. 300 IN NS c.ns.dns.skydns.test.||a.ns.dns.skydns.test. 300 IN A 10.0.0.2, b.ns.dns.skydns.test. 300 IN A 10.0.0.3, c.ns.dns.skydns.test. 300 IN A 10.0.0.4, c.ns.dns.skydns.test. 300 IN A 10.0.0.5".into()),
        ("a.skydns.test.", RecordType::NS, format!("NXDomain||{SOA}|")),
        ("skydns_zoneb.test.", RecordType::A, "NoError|skydns_zoneb.test. 300 IN A 10.0.0.4||".into()),
        ("1.0.0.10.in-addr.arpa.", RecordType::PTR, "NoError|1.0.0.10.in-addr.arpa. 300 IN PTR reverse.example.com.||".into()),
        ("a.mx.skydns.test.", RecordType::MX, "NoError|a.mx.skydns.test. 300 IN MX 30 a.ipaddr.skydns.test.||a.ipaddr.skydns.test. 300 IN A 172.16.1.1".into()),
        ("bad.skydns.test.", RecordType::A, format!("ServFail||{SOA}|")),
        ("example.org.", RecordType::A, "next".into()),
    ];
    for (name, qtype, want) in rows {
        assert_eq!(&ask(&e, name, *qtype), want, "{name} {qtype}");
    }
    assert!(ask(&e, "skydns.test.", RecordType::SOA).starts_with(&format!("NoError|{SOA}||")));
    let large = ask(&e, "large600.skydns.test.", RecordType::TXT);
    assert_eq!(large.matches(&"0".repeat(255)).count(), 2, "{large}");
}

#[test]
fn fallthrough_and_unsynced() {
    let e = etcd(true);
    assert_eq!(ask(&e, "doesnotexist.skydns.test.", RecordType::A), "next");
    let cold = Etcd::with(e.cfg.clone(), Arc::new(Mirror::default()));
    assert!(ask(&cold, "doesnotexist.skydns.test.", RecordType::A).starts_with("ServFail||"));
    assert!(!cold.readiness().expect("ready source").ready());
}

/// CoreDNS's ttl_test.go TestTTL, and the lease's time left when known.
#[test]
fn ttl_of_own_and_lease() {
    let default = (30, 86_400);
    // no lease time known (CoreDNS: no client): the record's own, else 300
    assert_eq!(lookup::ttl(0, 0, default), 300);
    assert_eq!(lookup::ttl(300, 0, default), 300);
    assert_eq!(lookup::ttl(120, 0, default), 120);
    assert_eq!(lookup::ttl(0, 0, (60, 3600)), 300);
    // a lease's time left, within the bounds, and the smaller of the two
    assert_eq!(lookup::ttl(0, 100, default), 100);
    assert_eq!(lookup::ttl(0, 5, default), 30);
    assert_eq!(lookup::ttl(0, 200_000, default), 86_400);
    assert_eq!(lookup::ttl(60, 100, default), 60);
    assert_eq!(lookup::ttl(600, 100, default), 100);
}
