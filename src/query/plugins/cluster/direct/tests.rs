//! The direct writer against the Record path: for every question over the
//! demo dump and over a generated cluster (several IPs, dual-stack,
//! headless with hostnames, names at the size limits), every EDNS
//! variant, UDP and TCP, and Corefiles with `loadbalance`, `fallthrough`,
//! `dns64` and another TTL, the two write the same bytes and tell the memo and the
//! metrics the same things.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use crate::fuzzing::without_direct;
use crate::metrics::{Metrics, Transport};
use crate::query::defer::Sink;
use crate::query::plugins::chain::Chain;
use crate::query::plugins::cluster::Cluster;
use crate::query::{Block, Handler, Router, Scratch};
use crate::store::{Kind, PortIn, Proto, Record, ServiceKind, Store, Writer};

fn packet(name: &Name, qtype: RecordType, edns: Option<(u16, bool, u8)>) -> Vec<u8> {
    let mut m = Message::new(0xBEEF, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(name.clone(), qtype));
    if let Some((payload, dnssec_ok, version)) = edns {
        let mut e = Edns::new();
        e.set_max_payload(payload).set_dnssec_ok(dnssec_ok).set_version(version);
        m.set_edns(e);
    }
    m.to_vec().expect("encodes")
}

const EDNS: [Option<(u16, bool, u8)>; 5] = [
    None,
    Some((512, false, 0)),
    Some((1232, false, 0)),
    Some((4096, true, 0)),
    Some((1232, false, 1)),
];

/// Every name × type × EDNS variant × transport through both handlers:
/// the same bytes (strictly parseable) and the same outcome. Returns how
/// many replies the direct writer wrote, and how many of them it truncated.
fn compare(on: &Handler, names: &[Name], qtypes: &[RecordType]) -> (usize, usize) {
    let off = without_direct(on);
    let peer = SocketAddr::from(([10, 1, 2, 3], 5353));
    let (mut direct, mut truncated) = (0, 0);
    for name in names {
        for &qtype in qtypes {
            for edns in EDNS {
                let bytes = packet(name, qtype, edns);
                for transport in [Transport::Udp, Transport::Tcp] {
                    let (mut a, mut b) = (Scratch::default(), Scratch::default());
                    let now = std::time::Instant::now();
                    fastrand::seed(16);
                    assert!(on.handle(&bytes, peer, transport, &mut a, &|| Sink::None, now));
                    fastrand::seed(16);
                    assert!(off.handle(&bytes, peer, transport, &mut b, &|| Sink::None, now));
                    let what = format!("{name} {qtype} {edns:?} {transport:?}");
                    let reply = crate::fuzzing::parse_strict(&a.out).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        a.out == b.out,
                        "{what}:\n{reply}\nthe Record path:\n{:?}",
                        Message::from_vec(&b.out)
                    );
                    let (x, y) = (&a.answer, &b.answer);
                    let seen = |x: &crate::query::Answer| {
                        (
                            x.rcode,
                            x.tags.plugin,
                            x.tags.memoizable,
                            x.tags.deps,
                            x.tags.expansion,
                            x.tags.zone,
                        )
                    };
                    assert_eq!(seen(x), seen(y), "{what}");
                    let records = reply.answers.len() + reply.authorities.len();
                    let written = records > 0 && x.answers.is_empty() && x.authority.is_empty();
                    direct += usize::from(written);
                    truncated += usize::from(written && reply.metadata.truncation);
                }
            }
        }
    }
    (direct, truncated)
}

fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn the_demo_cluster_is_written_as_the_record_path_writes_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let on = crate::fuzzing::demo_handler(root, false);
    let names: Vec<Name> = [
        "kubernetes.default.svc.cluster.local.",
        "KUBERNETES.Default.Svc.Cluster.Local.",
        "web.shop.svc.cluster.local.",
        "many.big.svc.cluster.local.",
        "Many.BIG.svc.cluster.local.",
        "postgres.db.svc.cluster.local.",
        "alertmanager-operated.monitoring.svc.cluster.local.",
        "payments.shop.svc.cluster.local.",
        "docs.shop.svc.cluster.local.",
        "nothere.shop.svc.cluster.local.",
        "many-4.many.big.svc.cluster.local.",
        "MANY-5.many.big.svc.cluster.local.",
        "none-1.many.big.svc.cluster.local.",
        "x.docs.shop.svc.cluster.local.",
        "www.example.com.shop.svc.cluster.local.",
        "www.example.com.nons.svc.cluster.local.",
        "shop.svc.cluster.local.",
        "nons.svc.cluster.local.",
        "svc.cluster.local.",
        "cluster.local.",
        "ns.dns.cluster.local.",
        "10-1-2-3.default.pod.cluster.local.",
        "x.y.z.cluster.local.",
    ]
    .iter()
    .map(|s| name(s))
    .collect();
    let qtypes = [RecordType::A, RecordType::AAAA, RecordType::SRV, RecordType::PTR];
    let (direct, truncated) = compare(&on, &names, &qtypes);
    assert!(
        direct >= 200 && truncated >= 4,
        "the direct writer wrote {direct} replies, {truncated} truncated"
    );
}

/// A cluster with every shape the direct writer takes: ClusterIP with one,
/// several, repeated and dual-stack addresses, v6 only, headless with
/// hostnames, duplicates across slices and hundreds of endpoints, an empty
/// headless Service, an ExternalName, names of 63-byte labels.
fn generated(store: &Arc<Store>) {
    let mut w = Writer::new(&Kind::ALL);
    for kind in Kind::ALL {
        w.relist_start(kind);
        w.relist_done(kind);
    }
    let ports = || {
        vec![PortIn {
            name: "http".into(),
            proto: Proto::Tcp,
            port: 80,
        }]
    };
    let ip = |s: &str| -> IpAddr { s.parse().expect("address") };
    let long_ns = "n".repeat(63);
    let long_svc = "s".repeat(63);
    for ns in ["ns", long_ns.as_str()] {
        w.apply(Record::Namespace { name: ns.into() });
        let mut service = |name: &str, kind: ServiceKind| {
            w.apply(Record::Service {
                namespace: ns.into(),
                name: name.into(),
                kind,
                selector: true,
                ports: ports(),
                external: None,
            })
        };
        service("one", ServiceKind::ClusterIp(vec![ip("10.0.0.1")].into()));
        service(
            "dual",
            ServiceKind::ClusterIp(vec![ip("10.0.0.2"), ip("fd00::2")].into()),
        );
        service("v6", ServiceKind::ClusterIp(vec![ip("fd00::3")].into()));
        let multi = vec![ip("10.0.0.4"), ip("10.0.0.5"), ip("10.0.0.4"), ip("fd00::4")];
        service("multi", ServiceKind::ClusterIp(multi.into()));
        service(
            &long_svc,
            ServiceKind::ClusterIp(vec![ip("10.0.0.6"), ip("fd00::6")].into()),
        );
        let target = Box::new(name("one.ns.svc.cluster.local."));
        service("ext", ServiceKind::ExternalName(target));
        for headless in ["hl", "big", "empty"] {
            service(headless, ServiceKind::Headless);
        }
        let mut slice = |slice: &str, service: &str, endpoints: Vec<(IpAddr, Option<String>)>| {
            w.apply(Record::Slice {
                namespace: ns.into(),
                name: slice.into(),
                service: service.into(),
                ports: ports(),
                endpoints,
                trigger: None,
                zones: vec![],
            })
        };
        let named = |a: &str, host: &str| (ip(a), Some(host.to_string()));
        slice(
            "hl-1",
            "hl",
            vec![
                named("10.1.0.1", "h1"),
                named("fd00::1:1", "h1"),
                (ip("10.1.0.2"), None),
            ],
        );
        slice(
            "hl-2",
            "hl",
            vec![(ip("10.1.0.2"), None), named("10.1.0.3", &"h".repeat(63))],
        );
        let many = |from: u16| -> Vec<(IpAddr, Option<String>)> {
            (from..from + 60)
                .map(|i| (IpAddr::from([10, 2, (i >> 8) as u8, i as u8]), None))
                .chain((from..from + 30).map(|i| (IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 2, i]), None)))
                .collect()
        };
        slice("big-1", "big", many(0));
        slice("big-2", "big", many(40));
    }
    w.publish(store, 7);
}

fn handler(corefile: &str, store: &Arc<Store>) -> Handler {
    let path = std::path::Path::new("/nonexistent/Corefile");
    let config = crate::config::load_str(path, corefile, 53).expect("Corefile");
    let server = &config.servers[0];
    let cfg = server.kubernetes.clone().expect("kubernetes");
    let block = Block {
        cluster: Some(Cluster::new(Arc::new(cfg), store.clone())),
        loadbalance: server.loadbalance.clone().map(Arc::new),
        plugins: Chain::build(&server.plugins, "dns://:53"),
        ..Block::new(server.zones.clone())
    };
    Handler::new(Router::new(vec![block], Vec::new()), Arc::new(Metrics::default()))
}

#[test]
fn generated_clusters_are_written_as_the_record_path_writes_them() {
    let store = Arc::new(Store::default());
    generated(&store);
    let long_ns = "n".repeat(63);
    let mut names = Vec::new();
    for ns in ["ns", "NS", long_ns.as_str(), "nons"] {
        for svc in [
            "one",
            "Dual",
            "v6",
            "multi",
            "ext",
            "hl",
            "big",
            "empty",
            "nosuch",
            &"s".repeat(63),
        ] {
            names.push(format!("{svc}.{ns}.svc.cluster.local."));
        }
        names.push(format!("www.example.com.{ns}.svc.cluster.local."));
        for host in ["h1", "H1", "10-1-0-2", "10-1-0-3", "zz", &"h".repeat(63)] {
            names.push(format!("{host}.hl.{ns}.svc.cluster.local."));
        }
        names.push(format!("h1.ext.{ns}.svc.cluster.local."));
        names.push(format!("h1.nosuch.{ns}.svc.cluster.local."));
        names.push(format!("10-2-0-7.big.{ns}.svc.cluster.local."));
        names.push(format!("{ns}.svc.cluster.local."));
    }
    // Names of 255 bytes and near it: the longest a question can be.
    for len in [250, 253] {
        let mut labels = vec!["a".repeat(63), "b".repeat(63), "c".repeat(63)];
        let rest = len - 3 * 64 - "svc.cluster.local.".len();
        labels.push("d".repeat(rest.saturating_sub(1).max(1)));
        names.push(format!("{}.svc.cluster.local.", labels.join(".")));
        names.push(format!("{}.ns.svc.cluster.local.", labels[1..].join(".")));
    }
    let names: Vec<Name> = names.iter().map(|s| name(s)).collect();
    let zone = "kubernetes cluster.local in-addr.arpa {\n        snapshot unused\n";
    let variants = [
        ("", ""),
        ("    loadbalance\n", "        ttl 30\n"),
        (
            "    dns64 64:ff9b::/96 {\n        allow_ipv4\n    }\n",
            "        fallthrough\n",
        ),
    ];
    for (plugins, extra) in variants {
        let corefile = format!(".:53 {{\n{plugins}    {zone}{extra}    }}\n}}\n");
        let (direct, truncated) = compare(&handler(&corefile, &store), &names, &[RecordType::A, RecordType::AAAA]);
        assert!(
            direct >= 300 && truncated >= 8,
            "{corefile}: the direct writer wrote {direct} replies, {truncated} truncated"
        );
    }
}
