//! Table-driven answer tests on a hand-built snapshot: each row is a query
//! name and type, the expected rcode, and the expected answer records as
//! zone-file text (sorted before comparing). Negative rows also check the
//! SOA in the authority section.

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::Cluster;
use crate::kubernetes::{KubernetesConfig, PodMode, Source};
use crate::query::reply::Answer;
use crate::query::route::{Block, Router};
use crate::store::{PortIn, Proto, Record, ServiceKind, Store, Writer};

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

/// A hostname, or `None` when it is just the dashed address.
fn named(host: &str, addr: &str) -> Option<String> {
    (crate::store::records::undash(host) != Some(ip(addr))).then(|| host.to_string())
}

fn port(name: &str, proto: Proto, number: u16) -> PortIn {
    PortIn {
        name: name.into(),
        proto,
        port: number,
    }
}

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("test name")
}

fn service(ns: &str, svc: &str, kind: ServiceKind, ports: Vec<PortIn>) -> Record {
    Record::Service {
        external: None,
        selector: true,
        namespace: ns.into(),
        name: svc.into(),
        kind,
        ports,
    }
}

fn slice(ns: &str, svc: &str, eps: &[(&str, &str)], ports: Vec<PortIn>) -> Record {
    let endpoints = eps.iter().map(|(h, a)| (ip(a), named(h, a))).collect();
    Record::Slice {
        trigger: None,
        namespace: ns.into(),
        name: format!("{svc}-1"),
        service: svc.into(),
        ports,
        endpoints,
        zones: vec![],
    }
}

/// The fixture cluster every table runs against.
fn snapshot() -> crate::store::Snapshot {
    let mut w = Writer::new(&[]);
    for ns in ["default", "kube-system", "shop", "db", "quiet"] {
        w.apply(Record::Namespace { name: ns.into() });
    }
    let cip = |ips: &[&str]| ServiceKind::ClusterIp(ips.iter().map(|s| ip(s)).collect());
    let ext = |target: &str| ServiceKind::ExternalName(Box::new(name(target)));
    let pg_port = || vec![port("postgres", Proto::Tcp, 5432)];
    w.apply(service(
        "default",
        "kubernetes",
        cip(&["10.96.0.1"]),
        vec![port("https", Proto::Tcp, 443)],
    ));
    let dns_ports = vec![port("dns", Proto::Udp, 53), port("dns-tcp", Proto::Tcp, 53)];
    w.apply(service("kube-system", "kube-dns", cip(&["10.96.0.10"]), dns_ports));
    let web_ports = vec![port("http", Proto::Tcp, 80), port("", Proto::Tcp, 81)];
    w.apply(service("shop", "web", cip(&["10.96.12.34", "fd00::1234"]), web_ports));
    w.apply(slice(
        "shop",
        "web",
        &[("10-244-1-10", "10.244.1.10")],
        vec![port("http", Proto::Tcp, 8080)],
    ));
    w.apply(service("shop", "payments", ext("payments.example.com."), vec![]));
    w.apply(service("shop", "docs", ext("web.shop.svc.cluster.local."), vec![]));
    w.apply(service("shop", "loop", ext("loop.shop.svc.cluster.local."), vec![]));
    w.apply(service("db", "pg", ServiceKind::Headless, pg_port()));
    let pg = [("pg-0", "10.244.3.10"), ("pg-1", "10.244.3.11"), ("pg-v6", "fd00::310")];
    w.apply(slice("db", "pg", &pg, pg_port()));
    // pg-1 listed by a second slice too (a migration between slices): its
    // PTR, A and SRV records must each appear once.
    w.apply(Record::Slice {
        trigger: None,
        namespace: "db".into(),
        name: "pg-2".into(),
        service: "pg".into(),
        ports: pg_port(),
        endpoints: vec![(ip("10.244.3.11"), named("pg-1", "10.244.3.11"))],
        zones: vec![],
    });
    w.apply(service("db", "empty", ServiceKind::Headless, pg_port()));
    w.apply(service("db", "lonely", cip(&["10.96.5.5"]), vec![]));
    w.apply(Record::Pod {
        namespace: "shop".into(),
        name: "web-1".into(),
        ips: vec![ip("10.244.1.10")],
        running: true,
    });
    w.snapshot(42)
}

fn config(pods: PodMode, fallthrough: bool, ignore_empty: bool) -> KubernetesConfig {
    KubernetesConfig {
        zones: vec![name("cluster.local."), name("in-addr.arpa."), name("ip6.arpa.")],
        source: Source::Snapshot("unused".into()),
        namespaces: Vec::new(),
        labels: None,
        labels_text: None,
        namespace_labels: None,
        pods,
        endpoint_pod_names: false,
        ttl: 5,
        noendpoints: false,
        fallthrough: fallthrough.then(|| vec![name("in-addr.arpa."), name("ip6.arpa.")]),
        ignore_empty_service: ignore_empty,
        watch_timeout: std::time::Duration::from_secs(290),
        persist: None,
        resync: None,
        client: Default::default(),
        multicluster: Vec::new(),
    }
}

fn router(cfg: KubernetesConfig, synced: bool) -> Router {
    let store = Arc::new(Store::default());
    if synced {
        store.publish(snapshot());
    }
    let zones = cfg.zones.clone();
    Router::new(
        vec![Block {
            cluster: Some(Cluster::new(Arc::new(cfg), store)),
            ..Block::new(zones)
        }],
        Vec::new(),
    )
}

fn ask(r: &Router, qname: &str, qtype: RecordType) -> Answer {
    let mut out = Answer::default();
    let asker = crate::query::Asker {
        client: [10, 0, 0, 9].into(),
        dnssec_ok: false,
        cd: false,
        wire: Default::default(),
        subnet: None,
    };
    let _ = r.answer(&Query::query(name(qname), qtype), asker, &mut out);
    out
}

fn text(records: &[hickory_proto::rr::Record]) -> Vec<String> {
    let mut v: Vec<String> = records.iter().map(|r| r.to_string()).collect();
    v.sort();
    v
}

/// Runs rows of `(qname, qtype, rcode, answers)` against `r`.
fn table(r: &Router, rows: &[(&str, RecordType, ResponseCode, &[&str])]) {
    for (qname, qtype, rcode, want) in rows {
        let got = ask(r, qname, *qtype);
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!((got.rcode, text(&got.answers)), (*rcode, want), "{qname} {qtype}");
        let negative = got.answers.is_empty() && matches!(rcode, ResponseCode::NoError | ResponseCode::NXDomain);
        if negative {
            let soa = got.authority.first().map(|s| s.record_type());
            assert_eq!(
                soa,
                Some(RecordType::SOA),
                "{qname} {qtype}: negative answers carry the SOA"
            );
        }
        if *rcode != ResponseCode::Refused && *rcode != ResponseCode::ServFail {
            assert!(got.authoritative, "{qname} {qtype}: AA");
        }
    }
}

use RecordType::{A, AAAA, ANY, CNAME, NS, PTR, SOA, SRV, TXT};
const OK: ResponseCode = ResponseCode::NoError;
const NX: ResponseCode = ResponseCode::NXDomain;

#[test]
fn services_clusterip_headless_externalname() {
    let r = router(config(PodMode::Disabled, true, false), true);
    table(
        &r,
        &[
            (
                "kubernetes.default.svc.cluster.local.",
                A,
                OK,
                &["kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"],
            ),
            (
                "KUBERNETES.Default.SVC.cluster.local.",
                A,
                OK,
                &["KUBERNETES.Default.SVC.cluster.local. 5 IN A 10.96.0.1"],
            ),
            ("kubernetes.default.svc.cluster.local.", AAAA, OK, &[]),
            ("kubernetes.default.svc.cluster.local.", TXT, OK, &[]),
            (
                "web.shop.svc.cluster.local.",
                AAAA,
                OK,
                &["web.shop.svc.cluster.local. 5 IN AAAA fd00::1234"],
            ),
            (
                "web.shop.svc.cluster.local.",
                ANY,
                OK,
                &[
                    "web.shop.svc.cluster.local. 5 IN A 10.96.12.34",
                    "web.shop.svc.cluster.local. 5 IN AAAA fd00::1234",
                ],
            ),
            ("nope.shop.svc.cluster.local.", A, NX, &[]),
            ("web.nope.svc.cluster.local.", A, NX, &[]),
            (
                "pg.db.svc.cluster.local.",
                A,
                OK,
                &[
                    "pg.db.svc.cluster.local. 5 IN A 10.244.3.10",
                    "pg.db.svc.cluster.local. 5 IN A 10.244.3.11",
                ],
            ),
            (
                "pg.db.svc.cluster.local.",
                AAAA,
                OK,
                &["pg.db.svc.cluster.local. 5 IN AAAA fd00::310"],
            ),
            (
                "pg-1.pg.db.svc.cluster.local.",
                A,
                OK,
                &["pg-1.pg.db.svc.cluster.local. 5 IN A 10.244.3.11"],
            ),
            ("pg-1.pg.db.svc.cluster.local.", AAAA, OK, &[]),
            ("pg-9.pg.db.svc.cluster.local.", A, NX, &[]),
            (
                "10-244-1-10.web.shop.svc.cluster.local.",
                A,
                OK,
                &["10-244-1-10.web.shop.svc.cluster.local. 5 IN A 10.244.1.10"],
            ),
            ("empty.db.svc.cluster.local.", A, NX, &[]),
            ("empty.db.svc.cluster.local.", SRV, NX, &[]),
            (
                "lonely.db.svc.cluster.local.",
                A,
                OK,
                &["lonely.db.svc.cluster.local. 5 IN A 10.96.5.5"],
            ),
            (
                "payments.shop.svc.cluster.local.",
                A,
                OK,
                &["payments.shop.svc.cluster.local. 5 IN CNAME payments.example.com."],
            ),
            (
                "payments.shop.svc.cluster.local.",
                CNAME,
                OK,
                &["payments.shop.svc.cluster.local. 5 IN CNAME payments.example.com."],
            ),
            (
                "docs.shop.svc.cluster.local.",
                A,
                OK,
                &[
                    "docs.shop.svc.cluster.local. 5 IN CNAME web.shop.svc.cluster.local.",
                    "web.shop.svc.cluster.local. 5 IN A 10.96.12.34",
                ],
            ),
            (
                "loop.shop.svc.cluster.local.",
                A,
                OK,
                &["loop.shop.svc.cluster.local. 5 IN CNAME loop.shop.svc.cluster.local."],
            ),
            ("www.example.com.shop.svc.cluster.local.", A, NX, &[]),
            ("www.example.com.svc.cluster.local.", A, NX, &[]),
            ("www.example.com.cluster.local.", A, NX, &[]),
        ],
    );
}

#[test]
fn srv_named_ports_bare_names_and_empty_non_terminals() {
    let r = router(config(PodMode::Disabled, true, false), true);
    table(&r, &[
        ("_https._tcp.kubernetes.default.svc.cluster.local.", SRV, OK, &[
            "_https._tcp.kubernetes.default.svc.cluster.local. 5 IN SRV 0 100 443 kubernetes.default.svc.cluster.local.",
        ]),
        ("_HTTPS._TCP.kubernetes.default.svc.cluster.local.", SRV, OK, &[
            "_HTTPS._TCP.kubernetes.default.svc.cluster.local. 5 IN SRV 0 100 443 kubernetes.default.svc.cluster.local.",
        ]),
        ("_https._tcp.kubernetes.default.svc.cluster.local.", A, OK, &[]),
        ("_https._udp.kubernetes.default.svc.cluster.local.", SRV, NX, &[]),
        ("_nope._tcp.kubernetes.default.svc.cluster.local.", SRV, NX, &[]),
        ("_tcp.kubernetes.default.svc.cluster.local.", A, OK, &[]),
        ("_udp.kubernetes.default.svc.cluster.local.", A, NX, &[]),
        ("_dns._udp.kube-dns.kube-system.svc.cluster.local.", SRV, OK, &[
            "_dns._udp.kube-dns.kube-system.svc.cluster.local. 5 IN SRV 0 100 53 kube-dns.kube-system.svc.cluster.local.",
        ]),
        // Dual-stack, two ports: CoreDNS weighs 4 (address, port) pairs, 25 each.
        ("web.shop.svc.cluster.local.", SRV, OK, &[
            "web.shop.svc.cluster.local. 5 IN SRV 0 25 80 web.shop.svc.cluster.local.",
            "web.shop.svc.cluster.local. 5 IN SRV 0 25 81 web.shop.svc.cluster.local.",
        ]),
        // pg-1 is in two slices: CoreDNS weighs its 4 endpoint addresses, 100/4 each.
        ("_postgres._tcp.pg.db.svc.cluster.local.", SRV, OK, &[
            "_postgres._tcp.pg.db.svc.cluster.local. 5 IN SRV 0 25 5432 pg-0.pg.db.svc.cluster.local.",
            "_postgres._tcp.pg.db.svc.cluster.local. 5 IN SRV 0 25 5432 pg-1.pg.db.svc.cluster.local.",
            "_postgres._tcp.pg.db.svc.cluster.local. 5 IN SRV 0 25 5432 pg-v6.pg.db.svc.cluster.local.",
        ]),
    ]);
    let srv = ask(&r, "_postgres._tcp.pg.db.svc.cluster.local.", SRV);
    assert_eq!(
        text(&srv.additional),
        [
            "pg-0.pg.db.svc.cluster.local. 5 IN A 10.244.3.10",
            "pg-1.pg.db.svc.cluster.local. 5 IN A 10.244.3.11",
            "pg-v6.pg.db.svc.cluster.local. 5 IN AAAA fd00::310",
        ]
    );
    let srv = ask(&r, "_https._tcp.kubernetes.default.svc.cluster.local.", SRV);
    assert_eq!(
        text(&srv.additional),
        ["kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"]
    );
}

mod zonal;
mod zone;
