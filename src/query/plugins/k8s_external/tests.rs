//! The decision table on a hand-built snapshot: the rows the end-to-end
//! tests do not reach (not synced, the name server without an external
//! address, names too deep, case, other types).

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RecordType};

use super::answer::K8sExternal;
use crate::query::plugins::k8s_external::setup::K8sExternalConfig;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;
use crate::store::{External, PortIn, Proto, Record, ServiceKind, Store, Writer};

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("test name")
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

fn service(ns: &str, svc: &str, cluster_ip: &str, external: &[&str]) -> Record {
    Record::Service {
        namespace: ns.into(),
        name: svc.into(),
        kind: ServiceKind::ClusterIp(vec![ip(cluster_ip)].into()),
        selector: true,
        ports: vec![PortIn {
            name: "http".into(),
            proto: Proto::Tcp,
            port: 80,
        }],
        external: External::boxed(external.iter().map(|s| ip(s)).collect(), Vec::new()),
    }
}

fn plugin(synced: bool) -> (K8sExternal, Store) {
    let store = Store::default();
    if synced {
        let mut w = Writer::new(&[]);
        w.apply(Record::Namespace { name: "shop".into() });
        w.apply(service("kube-system", "kube-dns", "10.96.0.10", &[]));
        w.apply(service("shop", "web", "10.96.1.10", &["203.0.113.10"]));
        store.publish(w.snapshot(7));
    }
    let cfg = K8sExternalConfig {
        zones: vec![name("example.org.")],
        apex: name("dns"),
        ttl: 5,
        headless: false,
        fallthrough: None,
        pos: crate::corefile::lexer::Pos {
            file: "test".into(),
            line: 1,
            col: 1,
        },
    };
    (K8sExternal::new(Arc::new(cfg)), store)
}

/// `(outcome, rcode, answers as text)`.
fn ask(p: &(K8sExternal, Store), qname: &str, qtype: RecordType) -> (Verdict, ResponseCode, Vec<String>) {
    let mut out = Answer::default();
    let outcome = p.0.answer(&name(qname), qtype, &p.1, &mut out);
    let soa = out.authority.iter().any(|r| r.record_type() == RecordType::SOA);
    if out.answers.is_empty() && out.rcode != ResponseCode::ServFail && outcome != Verdict::Next {
        assert!(soa, "{qname} {qtype}: negative answers carry the SOA");
    }
    (
        outcome,
        out.rcode,
        out.answers.iter().map(ToString::to_string).collect(),
    )
}

#[test]
fn the_rows_end_to_end_tests_do_not_reach() {
    use RecordType::{A, MX, NS};
    let p = plugin(true);
    let (ok, nx) = (ResponseCode::NoError, ResponseCode::NXDomain);
    assert_eq!(ask(&p, "elsewhere.test.", A).0, Verdict::Next, "not our zone");
    assert_eq!(
        ask(&p, "WEB.Shop.Example.ORG.", A),
        (
            Verdict::Answered,
            ok,
            vec!["WEB.Shop.Example.ORG. 5 IN A 203.0.113.10".to_string()]
        )
    );
    assert_eq!(ask(&p, "web.shop.example.org.", MX), (Verdict::Answered, ok, vec![]));
    assert_eq!(
        ask(&p, "a.b.c.d.web.shop.example.org.", A),
        (Verdict::Answered, nx, vec![])
    );
    assert_eq!(
        ask(&p, "_http._udp.web.shop.example.org.", A),
        (Verdict::Answered, nx, vec![])
    );
    assert_eq!(ask(&p, "_http._tcp.web.shop.example.org.", A).2.len(), 1);
    assert_eq!(
        ask(&p, "kube-dns.kube-system.example.org.", A),
        (Verdict::Answered, nx, vec![])
    );
    // kube-dns has no outside address: the name server is its cluster IP
    assert_eq!(
        ask(&p, "ns1.dns.example.org.", A).2,
        ["ns1.dns.example.org. 5 IN A 10.96.0.10"]
    );
    assert_eq!(
        ask(&p, "example.org.", NS).2,
        ["example.org. 5 IN NS ns1.dns.example.org."]
    );
    assert_eq!(ask(&p, "ns1.dns.example.org.", RecordType::AAAA).1, ok);
}

#[test]
fn before_the_first_sync_every_name_is_servfail() {
    let p = plugin(false);
    let (outcome, rcode, answers) = ask(&p, "web.shop.example.org.", RecordType::A);
    assert_eq!(
        (outcome, rcode, answers.len()),
        (Verdict::Answered, ResponseCode::ServFail, 0)
    );
}
