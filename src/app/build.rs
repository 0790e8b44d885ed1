//! A configuration turned into routers: each server block's plugins
//! built from its directives (cluster sources kept across reloads when
//! their `kubernetes` block is unchanged), its zones' stats, and the
//! `coredns_plugin_enabled` list.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use super::runtime::{Built, GroupKey, Runtime, Source};
use crate::admin::Live;
use crate::config::{Config, Server};
use crate::metrics::exposed::Exposed;
use crate::query::forward::Forwarding;
use crate::query::metadata::Metadata;
use crate::query::plugins::chain::{BuildContext, Chain};
use crate::query::plugins::cluster::Cluster;
use crate::query::transfer::Transfer;
use crate::query::tsig::Tsig;
use crate::query::{Block, LoopProbe, Router};
use crate::store::Store;
use crate::watch;

impl Runtime {
    /// Builds the routers of `config`, reusing running cluster sources
    /// whose `kubernetes` block is unchanged.
    pub(super) fn build(&mut self, config: &Config) -> Built {
        self.epoch += 1;
        let stacktrace = config
            .servers
            .iter()
            .any(|s| s.errors.as_ref().is_some_and(|e| e.stacktrace));
        crate::query::errors::stacktrace(stacktrace);
        crate::query::errors::debug(config.debug());
        super::logging::log_debug(config.debug());
        let mut built = Built {
            routers: BTreeMap::new(),
            live: Live::default(),
            probes: Vec::new(),
        };
        let mut kept: HashMap<String, Source> = HashMap::new();
        let mut plugins = Vec::new();
        for server in &config.servers {
            let key = (server.port, server.bind.clone(), server.listen.clone());
            let label = server_label(server);
            let taps = crate::dnstap::Taps::start(&server.dnstap, &self.metrics);
            let mut block = self.block(server, &mut kept, &mut built, &key, &taps);
            let tracer = tracer(server, (&label, &enabled(server, config)), &mut built.live);
            routing(&mut block, server);
            let registry = &self.metrics.registry;
            let router = built.routers.entry(key).or_insert_with(|| Router {
                blocks: Vec::new(),
                epoch: self.epoch,
                stats: vec![registry.zone(&label, "dropped")],
                tcp: server.tcp,
                proxy: server.proxyproto.clone().map(Arc::new),
                in_flight: config.in_flight,
                taps: vec![None],
                traces: vec![None],
                tsig: None,
                views: false,
                subnets: false,
            });
            choosing(router, server, &block);
            let view = server.view.as_ref().map_or("", |v| v.name.as_str());
            for zone in &server.zones {
                block.zone_stats.push(router.stats.len() as u16);
                router
                    .stats
                    .push(registry.zone_in_view(&label, &zone.to_string(), view));
                router.taps.push(taps.clone());
                router.traces.push(tracer.clone());
                for name in enabled(server, config) {
                    plugins.push((label.clone(), zone.to_string(), name));
                }
            }
            router.blocks.push(block);
        }
        self.metrics.registry.set_plugins(plugins);
        for (_, old) in std::mem::replace(&mut self.sources, kept) {
            old.task.abort();
        }
        built
    }

    /// The block's cluster source: a running one whose `kubernetes` block
    /// is unchanged (moved from `self.sources` to `kept`), else a new one.
    fn cluster(&mut self, server: &Server, kept: &mut HashMap<String, Source>, live: &mut Live) -> Option<Cluster> {
        let k = server.kubernetes.as_ref()?;
        let id = format!("{k:?}");
        let source = kept
            .remove(&id)
            .or_else(|| self.sources.remove(&id))
            .unwrap_or_else(|| {
                let cfg = Arc::new(k.clone());
                let store = Arc::new(Store::default());
                let task = watch::start(cfg, store.clone(), self.metrics.clone());
                Source { store, task }
            });
        let store = source.store.clone();
        live.stores.push(store.clone());
        kept.insert(id, source);
        Some(Cluster::new(Arc::new(k.clone()), store))
    }

    /// The block's `cache` and `forward`, sending to its `dnstap` taps.
    fn forwarding(
        &self,
        server: &Server,
        taps: &Option<Arc<crate::dnstap::Taps>>,
        live: &mut Live,
    ) -> Option<Arc<Forwarding>> {
        let mut f = Forwarding::of(server.forwarding(), server_label(server), self.metrics.clone())?;
        f.taps = taps.clone();
        let f = Arc::new(f);
        live.forwardings.push(f.clone());
        Some(f)
    }

    fn block(
        &mut self,
        server: &Server,
        kept: &mut HashMap<String, Source>,
        built: &mut Built,
        key: &GroupKey,
        taps: &Option<Arc<crate::dnstap::Taps>>,
    ) -> Block {
        let cluster = self.cluster(server, kept, &mut built.live);
        let forwarding = self.forwarding(server, taps, &mut built.live);
        let metadata = metadata(server, cluster.as_ref());
        let ctx = BuildContext {
            server: &server_label(server),
            store: cluster.as_ref().map(|c| &c.store),
            metadata: metadata.as_ref(),
        };
        let plugins = Chain::build_in(&server.plugins, &ctx);
        built.live.ready.extend(plugins.readiness());
        built.live.exposed.extend(plugins.exposed());
        let transfer = Transfer::start(&server.transfers, cluster.as_ref(), &plugins, server_label(server));
        built.live.transfers.extend(transfer.as_ref().map(|t| t.stats.clone()));
        let loop_probe = server.loop_detect.map(|exit| Arc::new(LoopProbe::new(exit)));
        if let (Some(p), Some(zone)) = (&loop_probe, server.zones.first()) {
            built.probes.push((key.clone(), p.clone(), zone.clone()));
        }
        Block {
            zones: server.zones.clone(),
            zone_wires: server.zones.iter().map(crate::corefile::args::lower_wire).collect(),
            zone_stats: Vec::new(),
            cluster,
            forwarding,
            loop_probe,
            log: server.log.clone(),
            loadbalance: server.loadbalance.clone().map(Arc::new),
            autopath: server.autopath.as_ref().map(|(a, _)| a.clone()),
            chain: server.chain,
            rewrite: (!server.rewrites.is_empty()).then(|| server.rewrites.clone().into()),
            bufsize: server.bufsize,
            nsid: server.nsid.as_ref().map(|d| Arc::from(d.as_bytes())),
            header: server.header.clone().map(Arc::new),
            minimal: server.minimal,
            plugins,
            transfer,
            metadata,
            ..Block::new(Vec::new())
        }
    }
}

/// What `router` learns of `server`'s `block`: whether blocks are chosen
/// by views, whether the plugins read ECS addresses, its `tsig`.
fn choosing(router: &mut Router, server: &Server, block: &Block) {
    router.views |= server.view.is_some();
    router.subnets |= router.views || block.metadata.as_ref().is_some_and(|m| m.reads_subnet());
    if let Some(t) = &server.tsig {
        router.tsig = Some(Arc::new(Tsig::with(router.tsig.as_deref(), t)));
    }
}

/// `view` of `server` into `block`, and its `log` lines told the metadata
/// (`{/LABEL}`) when it has `metadata`.
fn routing(block: &mut Block, server: &Server) {
    block.view = server.view.clone().map(Arc::new);
    if let (Some(metadata), Some(log)) = (&block.metadata, &mut block.log) {
        log.style.format = crate::query::log::setup::with_metadata(log.style.format, metadata);
    }
}

/// The block's `metadata` at run time: its zones and the plugins of the
/// block that set labels (`view/name`, `kubernetes/client-namespace`).
fn metadata(server: &Server, cluster: Option<&Cluster>) -> Option<Arc<Metadata>> {
    let m = server.metadata.as_ref()?;
    let pods = cluster.filter(|c| c.cfg.pods == crate::kubernetes::PodMode::Verified);
    Some(Arc::new(Metadata {
        zones: m.zones.clone(),
        view: server.view.as_ref().map(|v| v.name.clone()),
        pods: pods.map(|c| c.store.clone()),
        geoip: crate::query::plugins::geoip::setup::of(server.setup("geoip")),
        kubernetes: cluster.map(|c| {
            Arc::new(crate::query::plugins::cluster::labels::ClusterLabels {
                zones: c.cfg.zones.clone(),
                multicluster: c.cfg.multicluster.clone(),
            }) as Arc<dyn crate::query::metadata::NameLabels>
        }),
    }))
}

/// The block's `trace` tracer (its spans' local endpoint the block's
/// first bound address and port), its counters on `/metrics`.
fn tracer(
    server: &Server,
    (label, plugins): (&str, &[&'static str]),
    live: &mut Live,
) -> Option<Arc<crate::query::plugins::trace::Tracer>> {
    let local = server.bind.first().map(|ip| SocketAddr::new(*ip, server.port));
    let tracer = crate::query::plugins::trace::setup::tracer(server.setup("trace"), label, local, plugins);
    live.exposed
        .extend(tracer.iter().map(|t| t.counters.clone() as Arc<dyn Exposed>));
    tracer
}

/// The `server` label of a block's metrics, as CoreDNS writes it.
pub(super) fn server_label(server: &Server) -> String {
    let scheme = server.listen.scheme.name();
    match server.bind.first() {
        Some(ip) => format!("{scheme}://{}", SocketAddr::new(*ip, server.port)),
        None => format!("{scheme}://:{}", server.port),
    }
}

/// The plugins of `server` (`coredns_plugin_enabled`), from the
/// directive table.
fn enabled(server: &Server, config: &Config) -> Vec<&'static str> {
    let table = crate::config::directives::DIRECTIVES.iter();
    table.filter(|d| (d.enabled)(server, config)).map(|d| d.name).collect()
}
