//! The demo handler and the properties the fuzz targets check, shared by the libFuzzer targets
//! in `fuzz/` and the bounded run of them in `tests/fuzz_smoke.rs` (which
//! `.ci/run` runs on the stable toolchain). Each takes any bytes and
//! panics only when a property fails: the query path's replies
//! ([`path`]), the request parser against hickory's decoder
//! ([`request`]), cache hits replayed as bytes ([`hits`]), the Corefile
//! parser and the dump conversion (here).
//!
//! Compiled only with the cargo feature `fuzzing` (or in this crate's own
//! unit tests): `fuzz/` enables it, as does the crate's dev-dependency on
//! itself for its tests and benches; `cargo build` leaves it out.

use std::path::Path;
use std::sync::Arc;

use hickory_proto::op::Message;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::kubernetes::KubernetesConfig;
use crate::metrics::Metrics;
use crate::query::plugins::chain::Chain;
use crate::query::plugins::cluster::Cluster;
use crate::query::{Block, Handler, Router};
use crate::store::{Kind, Store, Writer};

mod hits;
mod path;
mod reply;
mod request;

pub use hits::CacheHits;
pub use path::QueryPath;
pub use reply::with_echo;
pub use request::parser_agrees;

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
        config.pods = crate::kubernetes::PodMode::Verified;
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
