//! The whole query path, bytes in → bytes out, over the demo cluster, with
//! the properties every reply must have: it re-parses, its ID is the
//! query's, its question is the query's, and it fits the client's limit.
#![no_main]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use clusterdns::metrics::{Metrics, Transport};
use clusterdns::query::cluster::Cluster;
use clusterdns::query::defer::Sink;
use clusterdns::query::{Block, Handler, Router, Scratch};
use clusterdns::store::{Kind, Store, Writer};
use hickory_proto::op::Message;
use libfuzzer_sys::fuzz_target;

fn handler() -> &'static Handler {
    static H: OnceLock<Handler> = OnceLock::new();
    H.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let config = clusterdns::config::load(&root.join("zones/Corefile"), 53).expect("demo Corefile");
        let server = &config.servers[0];
        let k = server.kubernetes.clone().expect("kubernetes");
        let loaded = clusterdns::watch::snapshot::read_file(&root.join("zones/cluster.yaml"), &k).expect("demo");
        let store = Arc::new(Store::default());
        let mut writer = Writer::new(&Kind::ALL);
        clusterdns::watch::snapshot::apply(&mut writer, loaded.records);
        writer.publish(&store, 1);
        let metrics = Arc::new(Metrics::default());
        let router = Router::new(
            vec![Block {
                zone_stats: vec![1; server.zones.len()],
                cluster: Some(Cluster::new(Arc::new(k), store)),
                ..Block::new(server.zones.clone())
            }],
            vec![
                metrics.registry.zone("dns://:53", "dropped"),
                metrics.registry.zone("dns://:53", "."),
            ],
        );
        Handler::new(router, metrics)
    })
}

/// One scratch space per transport, kept across inputs like a worker's
/// (so the reply memo is exercised across queries too).
fn scratches() -> &'static Mutex<[Scratch; 2]> {
    static S: OnceLock<Mutex<[Scratch; 2]>> = OnceLock::new();
    S.get_or_init(|| Mutex::new([Scratch::default(), Scratch::default()]))
}

fuzz_target!(|data: &[u8]| {
    let h = handler();
    let peer: SocketAddr = "10.1.2.3:5353".parse().expect("addr");
    let sink = || Sink::None;
    let Ok(mut all) = scratches().lock() else { return };
    for (i, transport) in [Transport::Udp, Transport::Tcp].into_iter().enumerate() {
        let scratch = &mut all[i];
        // Twice: the second answer may come from the reply memo.
        for _ in 0..2 {
            if !h.handle_guarded(data, peer, transport, scratch, &sink) {
                continue;
            }
            let reply = &scratch.out;
            let parsed = Message::from_vec(reply).expect("every reply re-parses");
            assert_eq!(reply[..2], data[..2], "the reply's ID is the query's");
            let limit = match transport {
                Transport::Udp => 1232,
                Transport::Tcp => 65535,
            };
            assert!(reply.len() <= limit, "{} bytes over {transport:?}", reply.len());
            if let Ok(query) = Message::from_vec(data) {
                if let (Some(q), Some(r)) = (query.queries.first(), parsed.queries.first()) {
                    if query.queries.len() == 1 {
                        assert!(q.name().eq_case(r.name()), "the question is echoed with its spelling");
                        assert_eq!(q.query_type(), r.query_type());
                    }
                }
                if query.edns.is_none() && transport == Transport::Udp {
                    assert!(reply.len() <= 512, "no EDNS: at most 512 bytes");
                }
            }
        }
    }
});
