//! The demo handler the properties run against: the embedded demo
//! cluster in one block, with or without the direct writer.

use std::path::Path;
use std::sync::Arc;

use crate::metrics::Metrics;
use crate::query::plugins::chain::Chain;
use crate::query::plugins::cluster::Cluster;
use crate::query::{Block, Handler, Router};
use crate::store::{Kind, Store, Writer};

/// A handler like `h` (one block with a cluster) whose cluster answers
/// take the Record path only.
pub fn without_direct(h: &Handler) -> Handler {
    let router = h.router.load();
    let b = &router.blocks[0];
    let c = b.cluster.as_ref().expect("a cluster block");
    let cluster = Cluster {
        direct: false,
        ..Cluster::new(c.cfg.clone(), c.store.clone())
    };
    let block = Block {
        zone_stats: b.zone_stats.clone(),
        cluster: Some(cluster),
        loadbalance: b.loadbalance.clone(),
        plugins: Chain {
            after: b.plugins.after.clone(),
            ..Chain::default()
        },
        ..Block::new(b.zones.clone())
    };
    Handler::new(Router::new(vec![block], Vec::new()), Arc::new(Metrics::default()))
}

/// A handler over the demo cluster in `root`/zones (its Corefile's first
/// block), with or without `coredns_dns_*` stats (for the fuzzer, the
/// smoke test and `benches/metrics_cost.rs`).
pub fn demo_handler(root: &Path, with_stats: bool) -> Handler {
    let config = crate::config::load(&root.join("zones/Corefile"), 53).expect("the demo Corefile loads");
    let server = &config.servers[0];
    let k = server.kubernetes.clone().expect("the demo has kubernetes");
    let loaded = crate::watch::snapshot::read_file(&root.join("zones/cluster.yaml"), &k).expect("the demo dump");
    let store = Arc::new(Store::default());
    let mut writer = Writer::new(&Kind::ALL);
    crate::watch::snapshot::apply(&mut writer, loaded.records);
    for record in big_headless() {
        writer.apply(record);
    }
    writer.publish(&store, 1);
    let metrics = Arc::new(Metrics::default());
    let stats = if with_stats {
        vec![
            metrics.registry.zone("dns://:53", "dropped"),
            metrics.registry.zone("dns://:53", "."),
        ]
    } else {
        Vec::new()
    };
    let router = Router::new(
        vec![Block {
            zone_stats: vec![1; server.zones.len()],
            cluster: Some(Cluster::new(Arc::new(k), store)),
            ..Block::new(server.zones.clone())
        }],
        stats,
    );
    Handler::new(router, metrics)
}

/// Beside the demo: `many.big.svc.cluster.local`, a dual-stack headless
/// Service with 120 named endpoints (too big for 512 bytes and for 1232,
/// as A, AAAA and SRV), listed again in part by a second EndpointSlice, so
/// the properties meet truncation and duplicate addresses.
fn big_headless() -> Vec<crate::store::Record> {
    use crate::store::{PortIn, Proto, Record, ServiceKind};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let ports = || {
        vec![PortIn {
            name: "http".into(),
            proto: Proto::Tcp,
            port: 80,
        }]
    };
    let endpoint = |i: u16| -> (IpAddr, Option<String>) {
        let addr = if i.is_multiple_of(2) {
            IpAddr::V4(Ipv4Addr::new(10, 250, (i >> 8) as u8, i as u8))
        } else {
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0xbb, 0, 0, 0, 0, 0, i))
        };
        (addr, Some(format!("many-{i}")))
    };
    let slice = |name: &str, range: std::ops::Range<u16>| Record::Slice {
        trigger: None,
        zones: vec![],
        namespace: "big".into(),
        name: name.into(),
        service: "many".into(),
        ports: ports(),
        endpoints: range.map(endpoint).collect(),
    };
    vec![
        Record::Namespace { name: "big".into() },
        Record::Service {
            selector: true,
            namespace: "big".into(),
            name: "many".into(),
            kind: ServiceKind::Headless,
            ports: ports(),
            external: None,
        },
        slice("many-1", 0..120),
        slice("many-2", 100..120),
    ]
}
