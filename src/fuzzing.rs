//! The demo handler and the properties the fuzz targets check, shared by the libFuzzer targets
//! in `fuzz/` and the bounded run of them in `tests/fuzz_smoke.rs` (which
//! `.ci/run` runs on the stable toolchain). Each takes any bytes and
//! panics only when a property fails.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use hickory_proto::op::Message;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::config::KubernetesConfig;
use crate::metrics::{Metrics, Transport};
use crate::query::cluster::Cluster;
use crate::query::defer::Sink;
use crate::query::{Block, Handler, Router, Scratch};
use crate::store::{Kind, Store, Writer};

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

/// Parses a reply as strictly as the strictest stub resolvers do (glibc's
/// and musl's `ns_initparse`): the header's counts match the records, the
/// message ends where its last counted record ends (a truncated reply
/// holds whole records only), and no RRset holds the same record twice.
pub fn parse_strict(bytes: &[u8]) -> Result<Message, String> {
    let mut decoder = BinDecoder::new(bytes);
    let message = Message::read(&mut decoder).map_err(|e| format!("does not parse: {e}"))?;
    if !decoder.is_empty() {
        return Err(format!("{} bytes after the last counted record", decoder.len()));
    }
    let sections = [
        ("answer", &message.answers),
        ("authority", &message.authorities),
        ("additional", &message.additionals),
    ];
    for (section, records) in sections {
        for (i, r) in records.iter().enumerate() {
            let same = |o: &&hickory_proto::rr::Record| {
                o.name == r.name && o.record_type() == r.record_type() && o.dns_class == r.dns_class && o.data == r.data
            };
            if records[..i].iter().any(|o| same(&o)) {
                return Err(format!("{section} section holds {r} twice"));
            }
        }
    }
    Ok(message)
}

/// The whole query path over the demo cluster, bytes in → bytes out.
pub struct QueryPath {
    handler: Handler,
    /// One per transport, kept across inputs like a worker's (so the
    /// reply memo is exercised across queries too).
    scratch: [Scratch; 2],
}

impl QueryPath {
    /// Over the demo cluster in `root`/zones.
    pub fn demo(root: &Path) -> QueryPath {
        QueryPath {
            handler: demo_handler(root, true),
            scratch: [Scratch::default(), Scratch::default()],
        }
    }

    /// Answers `data` over UDP and TCP, twice each (the second may come
    /// from the memo). Every reply parses strictly ([`parse_strict`]),
    /// carries the query's ID and question (with its spelling), and fits
    /// the client's limit: 512 bytes over UDP without EDNS, our 1232 with
    /// it, 65535 over TCP.
    pub fn check(&mut self, data: &[u8]) {
        let peer: SocketAddr = SocketAddr::from(([10, 1, 2, 3], 5353));
        let sink = || Sink::None;
        let query = Message::from_vec(data).ok();
        for (i, transport) in [Transport::Udp, Transport::Tcp].into_iter().enumerate() {
            let scratch = &mut self.scratch[i];
            for _ in 0..2 {
                if !self
                    .handler
                    .handle_guarded(data, peer, transport, scratch, &sink, std::time::Instant::now())
                {
                    continue;
                }
                let reply = &scratch.out;
                let parsed = parse_strict(reply).unwrap_or_else(|e| panic!("reply over {transport:?}: {e}"));
                assert_eq!(reply[..2], data[..2], "the reply's ID is the query's");
                let limit = match transport {
                    Transport::Udp => 1232,
                    Transport::Tcp => 65535,
                };
                assert!(reply.len() <= limit, "{} bytes over {transport:?}", reply.len());
                let Some(query) = &query else { continue };
                if let (Some(q), Some(r), 1) = (query.queries.first(), parsed.queries.first(), query.queries.len()) {
                    assert!(q.name().eq_case(r.name()), "the question is echoed with its spelling");
                    assert_eq!(q.query_type(), r.query_type(), "the question's type is echoed");
                }
                if query.edns.is_none() && transport == Transport::Udp {
                    assert!(reply.len() <= 512, "no EDNS: at most 512 bytes");
                }
            }
        }
    }
}

/// The Corefile parser: any text gives a configuration or errors that
/// each start with the file's name (`FILE:LINE:COL: message`).
pub fn corefile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Imports and files are read from disk: keep away from device and
    // process files that never end.
    if text.contains("/dev") || text.contains("/proc") || text.contains("/sys") {
        return;
    }
    match crate::config::load_str(Path::new("/nonexistent/Corefile"), text, 53) {
        Ok(config) => {
            let _ = config.to_string();
        }
        Err(errors) => {
            for e in &errors.0 {
                assert!(e.to_string().starts_with("/nonexistent/"), "{e}");
            }
        }
    }
}

/// kubectl dumps and API objects: any text is converted (malformed
/// objects skipped) or rejected; what converts builds a snapshot.
pub struct Dump {
    config: KubernetesConfig,
}

impl Dump {
    /// With the demo's `kubernetes` block and `pods verified`.
    pub fn demo(root: &Path) -> Dump {
        let demo = crate::config::load(&root.join("zones/Corefile"), 53).expect("the demo Corefile loads");
        let mut config = demo.servers[0].kubernetes.clone().expect("the demo has kubernetes");
        config.pods = crate::config::PodMode::Verified;
        Dump { config }
    }

    pub fn check(&self, data: &[u8]) {
        let Ok(text) = std::str::from_utf8(data) else { return };
        if let Ok(loaded) = crate::watch::snapshot::read_str("fuzz.yaml", text, &self.config) {
            let mut writer = Writer::new(&Kind::ALL);
            crate::watch::snapshot::apply(&mut writer, loaded.records);
            let _ = writer.snapshot(1);
        }
    }
}
