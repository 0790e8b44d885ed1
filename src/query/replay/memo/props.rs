//! The memo's one promise, checked on random histories: after any
//! sequence of store changes, a reply replayed from a worker's memo is
//! byte for byte the reply a worker with an empty memo gives now.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use crate::metrics::{Metrics, Transport};
use crate::query::defer::Sink;
use crate::query::plugins::cluster::Cluster;
use crate::query::{Block, Handler, Router, Scratch};
use crate::store::{Kind, ObjectKey, PortIn, Proto, Record, ServiceKind, Store, Writer};

const NAMESPACES: [&str; 3] = ["a", "b", "kube-system"];
const SERVICES: [&str; 4] = ["web", "db", "kube-dns", "alias"];

fn addr(rng: &mut fastrand::Rng) -> IpAddr {
    IpAddr::from([10, 0, 0, rng.u8(1..8)])
}

fn pick<'a>(rng: &mut fastrand::Rng, from: &[&'a str]) -> &'a str {
    from[rng.usize(..from.len())]
}

fn ports() -> Vec<PortIn> {
    vec![PortIn {
        name: "http".into(),
        proto: Proto::Tcp,
        port: 80,
    }]
}

/// One random change: a Service, an EndpointSlice, a Pod or a Namespace
/// comes, changes or goes.
fn change(rng: &mut fastrand::Rng, w: &mut Writer) {
    let (namespace, name) = (pick(rng, &NAMESPACES).to_string(), pick(rng, &SERVICES).to_string());
    let kind = match rng.u8(..4) {
        0 => ServiceKind::Headless,
        1 => {
            let target = format!("web.{}.svc.cluster.local.", pick(rng, &NAMESPACES));
            ServiceKind::ExternalName(Box::new(Name::from_ascii(target).expect("name")))
        }
        _ => ServiceKind::ClusterIp(vec![addr(rng)].into()),
    };
    let key = |kind, namespace: &str, name: &str| ObjectKey {
        kind,
        namespace: namespace.into(),
        name: name.into(),
    };
    match rng.u8(..8) {
        0 | 1 => {
            w.apply(Record::Service {
                namespace,
                name,
                kind,
                selector: true,
                ports: ports(),
                external: None,
            });
        }
        2 => w.delete(&key(Kind::Service, &namespace, &name)),
        3 | 4 => {
            let endpoints: Vec<_> = (0..rng.usize(..3))
                .map(|i| (addr(rng), (i == 0).then(|| "h0".to_string())))
                .collect();
            w.apply(Record::Slice {
                namespace,
                name: format!("{name}-{}", rng.u8(..2)),
                service: name,
                ports: ports(),
                endpoints,
                trigger: None,
                zones: vec![],
            });
        }
        5 => w.delete(&key(
            Kind::EndpointSlice,
            &namespace,
            &format!("{name}-{}", rng.u8(..2)),
        )),
        6 => {
            w.apply(Record::Pod {
                namespace,
                name: format!("p{}", rng.u8(..3)),
                ips: vec![addr(rng)],
                running: rng.bool(),
            });
        }
        _ if rng.bool() => {
            w.apply(Record::Namespace { name: namespace });
        }
        _ => w.delete(&key(Kind::Namespace, "", &namespace)),
    }
}

/// A random question about the names the changes touch.
fn question(rng: &mut fastrand::Rng) -> Vec<u8> {
    let (ns, svc) = (pick(rng, &NAMESPACES), pick(rng, &SERVICES));
    let last = rng.u8(1..8);
    let name = match rng.u8(..9) {
        0 | 1 => format!("{svc}.{ns}.svc.cluster.local."),
        2 => format!("h0.{svc}.{ns}.svc.cluster.local."),
        3 => format!("_http._tcp.{svc}.{ns}.svc.cluster.local."),
        4 => format!("{last}.0.0.10.in-addr.arpa."),
        5 => format!("10-0-0-{last}.{ns}.pod.cluster.local."),
        6 => format!("{ns}.svc.cluster.local."),
        7 => "ns.dns.cluster.local.".to_string(),
        _ => format!("x.{svc}.{ns}.svc.cluster.local."),
    };
    let qtype = [RecordType::A, RecordType::AAAA, RecordType::SRV, RecordType::PTR][rng.usize(..4)];
    let mut m = Message::new(rng.u16(..), MessageType::Query, OpCode::Query);
    m.add_query(Query::query(Name::from_ascii(&name).expect("name"), qtype));
    m.to_vec().expect("encode")
}

fn handler(store: Arc<Store>) -> Handler {
    let corefile = ".:53 {\n    kubernetes cluster.local in-addr.arpa {\n        snapshot unused\n        pods verified\n    }\n}\n";
    let config =
        crate::config::load_str(std::path::Path::new("/nonexistent/Corefile"), corefile, 53).expect("Corefile");
    let cfg = config.servers[0].kubernetes.clone().expect("kubernetes");
    let zones = cfg.zones.clone();
    let block = Block {
        cluster: Some(Cluster::new(Arc::new(cfg), store)),
        ..Block::new(zones)
    };
    Handler::new(Router::new(vec![block], Vec::new()), Arc::new(Metrics::default()))
}

#[test]
fn a_replayed_reply_is_always_the_fresh_reply() {
    let store = Arc::new(Store::default());
    let handler = handler(store.clone());
    let mut writer = Writer::new(&Kind::ALL);
    for kind in Kind::ALL {
        writer.relist_start(kind);
        writer.relist_done(kind);
    }
    let mut rng = fastrand::Rng::with_seed(16);
    let mut warm = Scratch::default();
    let peer = SocketAddr::from(([10, 9, 9, 9], 53));
    let (kept_before, _) = super::revalidations();
    for step in 0..400u32 {
        for _ in 0..rng.usize(1..4) {
            change(&mut rng, &mut writer);
        }
        writer.publish(&store, 1000 + step);
        for _ in 0..30 {
            let q = question(&mut rng);
            let mut fresh = Scratch::default();
            let sent = handler.handle(&q, peer, Transport::Udp, &mut fresh, &|| Sink::None, Instant::now());
            let again = handler.handle(&q, peer, Transport::Udp, &mut warm, &|| Sink::None, Instant::now());
            assert_eq!(sent, again);
            assert_eq!(
                warm.out,
                fresh.out,
                "step {step}: {:?}",
                Message::from_vec(&q).map(|m| m.queries)
            );
        }
    }
    let (kept, _) = super::revalidations();
    assert!(
        kept - kept_before > 500,
        "entries outlived publishes: {}",
        kept - kept_before
    );
}
