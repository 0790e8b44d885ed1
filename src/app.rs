//! Wiring and lifecycle: stores and their sources, forwarders, DNS
//! listeners, admin endpoints; one log line per bound address; `reload`
//! (a changed Corefile is built beside the running one and switched in);
//! on shutdown, lameduck (health and readiness fail, DNS keeps answering),
//! then stop.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use crate::admin::{self, Live, State};
use crate::config::{Config, Server};
use crate::metrics::Metrics;
use crate::nodelocal::lease::Phase;
use crate::nodelocal::{handover, NodeLocal};
use crate::query::forward::Forwarding;
use crate::query::plugins::chaos::Chaos;
use crate::query::plugins::cluster::Cluster;
use crate::query::plugins::dns64::Dns64;
use crate::query::plugins::file::ZoneFile;
use crate::query::plugins::hosts::Hosts;
use crate::query::plugins::k8s_external::K8sExternal;
use crate::query::plugins::local::LocalNames;
use crate::query::plugins::rewrite::Rewrite;
use crate::query::plugins::template::Templates;
use crate::query::transfer::Transfer;
use crate::query::{tcp, udp, Block, Handler, LoopProbe, Router};
use crate::store::Store;
use crate::watch;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("cannot listen on {proto} {addr}: {source}")]
    Bind {
        proto: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    NodeLocal(#[from] crate::nodelocal::NodeLocalError),
}

/// Listeners are grouped by port and `bind` addresses.
type GroupKey = (u16, Vec<IpAddr>);

/// A running cluster source, reused by a reload whose `kubernetes` block
/// is unchanged.
struct Source {
    store: Arc<Store>,
    task: tokio::task::JoinHandle<()>,
}

/// One listener group: its handler, its stop switch and threads, and
/// the addresses it is bound to.
struct Group {
    handler: Arc<Handler>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    bound: Vec<SocketAddr>,
    /// A second handle on each UDP socket, to take it out of its
    /// `SO_REUSEPORT` group at a hand-over; the TCP accept loops.
    udp: Vec<std::net::UdpSocket>,
    tcp: Vec<tokio::task::JoinHandle<()>>,
}

/// Everything a configuration runs, built beside the running one.
struct Built {
    routers: BTreeMap<GroupKey, Router>,
    live: Live,
    /// Loop probes to send once listening: (group, probe, zone).
    probes: Vec<(GroupKey, Arc<LoopProbe>, Name)>,
}

struct Runtime {
    metrics: Arc<Metrics>,
    sources: HashMap<String, Source>,
    groups: BTreeMap<GroupKey, Group>,
    epoch: u64,
    workers: usize,
}

/// Runs the server until `shutdown` completes, then drains and returns.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<(), AppError> {
    // The text `reload` compares against: read now, not once started (a
    // change written while the server starts would pass unseen).
    let loaded = std::fs::read(&config.path).ok();
    let mut rt = Runtime {
        metrics: Arc::new(Metrics::default()),
        sources: HashMap::new(),
        groups: BTreeMap::new(),
        epoch: 0,
        workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    startup_doctor(&config, &rt.metrics);
    // The node-local interface and addresses exist before the listeners bind.
    let nodelocal = match config.nodelocal.clone() {
        Some(cfg) => Some(Arc::new(NodeLocal::setup(cfg, rt.metrics.clone()).await?)),
        None => None,
    };
    let built = rt.build(&config);
    if let Some(n) = &nodelocal {
        // Beside a running instance, join its listeners only when ready.
        handover::await_ready(n, &built.live.stores).await;
    }
    watch::startup::await_sync(&built.live.stores, startup_wait(&config)).await;
    let state = Arc::new(State {
        live: arc_swap::ArcSwap::from_pointee(Live::default()),
        metrics: rt.metrics.clone(),
        lameduck: AtomicBool::new(false),
    });
    let started = match rt.switch(built, &state) {
        Ok(()) => bind_admin(&config, &state, nodelocal.is_some()).await,
        Err(e) => Err(e),
    };
    let admin = match started {
        Ok(tasks) => tasks,
        Err(e) => {
            if let Some(n) = &nodelocal {
                n.leave().await;
            }
            return Err(e);
        }
    };
    // Rules only once listening (as node-cache waits for CoreDNS).
    let keeper = match &nodelocal {
        Some(n) => {
            n.announce(Phase::Serving);
            n.install().await;
            Some(tokio::spawn(n.clone().keep()))
        }
        None => None,
    };
    let lameduck = config.health.as_ref().map(|h| h.lameduck).unwrap_or_default();
    match config.reload {
        Some((interval, jitter)) => {
            tokio::select! {
                () = shutdown => {}
                () = reload_loop(&mut rt, &state, config, loaded, (interval, jitter)) => {}
            }
        }
        None => shutdown.await,
    }
    state.lameduck.store(true, Ordering::Relaxed);
    if !lameduck.is_zero() {
        tracing::info!("lameduck for {lameduck:?}: still answering, health and readiness failing");
        tokio::time::sleep(lameduck).await;
    }
    let successor = match &nodelocal {
        Some(n) => handover::successor(n).await,
        None => false,
    };
    if successor {
        // The successor answers the probes from now on.
        admin.iter().for_each(tokio::task::JoinHandle::abort);
    } else if let Some(n) = &nodelocal {
        // Alone: tear down before closing (in transparent mode the kube-dns
        // IP goes back to kube-proxy's DNAT while this still answers).
        keeper.as_ref().map(tokio::task::JoinHandle::abort);
        n.leave().await;
    }
    rt.stop(successor).await;
    crate::query::errors::stop();
    if let (true, Some(n)) = (successor, &nodelocal) {
        keeper.as_ref().map(tokio::task::JoinHandle::abort);
        n.leave().await;
    }
    let late = rt.metrics.udp_late_dropped.load(Ordering::Relaxed);
    tracing::info!(
        "stopped ({} queries answered, {late} UDP queries dropped as too late)",
        rt.metrics.requests_total()
    );
    Ok(())
}

/// How long listeners wait for the cluster state: the longest
/// `startup_timeout` of the configuration's `kubernetes` blocks.
fn startup_wait(config: &Config) -> Duration {
    let blocks = config.servers.iter().filter_map(|s| s.kubernetes.as_ref());
    blocks.map(watch::startup::timeout).max().unwrap_or_default()
}

/// Binds `/health`, `/ready` and `/metrics` (`shared`: with
/// `SO_REUSEPORT`, for node-local surge upgrades) and logs each.
async fn bind_admin(
    config: &Config,
    state: &Arc<State>,
    shared: bool,
) -> Result<Vec<tokio::task::JoinHandle<()>>, AppError> {
    let (health, ready, prom) = (config.health.as_ref().map(|h| h.addr), config.ready, config.prometheus);
    let mut tasks = Vec::new();
    for (addr, endpoints) in admin::plan(health, ready, prom) {
        let listener = admin::bind(addr, shared).map_err(|source| AppError::Bind {
            proto: "http",
            addr,
            source,
        })?;
        let bound = listener.local_addr().unwrap_or(addr);
        for (on, name) in [
            (endpoints.health, "health"),
            (endpoints.ready, "ready"),
            (endpoints.metrics, "metrics"),
        ] {
            if on {
                tracing::info!("listening on {name} http://{bound}");
            }
        }
        tasks.push(tokio::spawn(admin::serve(listener, endpoints, state.clone())));
    }
    Ok(tasks)
}

/// Checks the Corefile every `interval` (± `jitter`); a changed file that
/// loads replaces the running configuration, one that does not is logged
/// and counted while the old one keeps serving.
async fn reload_loop(
    rt: &mut Runtime,
    state: &Arc<State>,
    mut config: Config,
    mut last: Option<Vec<u8>>,
    (mut interval, mut jitter): (Duration, Duration),
) {
    let read = |c: &Config| std::fs::read(&c.path).ok();
    loop {
        let spread = jitter.as_secs_f64() * (fastrand::f64() * 2.0 - 1.0);
        tokio::time::sleep(Duration::from_secs_f64((interval.as_secs_f64() + spread).max(1.0))).await;
        let now = read(&config);
        if now == last {
            continue;
        }
        last = now;
        match crate::config::load(&config.path, config.default_port) {
            Err(errors) => {
                rt.metrics.reload_failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(target: "reload", "{} did not load; still running the previous configuration:\n{errors}", config.path.display());
            }
            Ok(new) => {
                if (new.health.as_ref().map(|h| h.addr), new.ready, new.prometheus)
                    != (config.health.as_ref().map(|h| h.addr), config.ready, config.prometheus)
                {
                    tracing::warn!(target: "reload", "health, ready and prometheus addresses change only on restart");
                }
                if new.nodelocal != config.nodelocal {
                    tracing::warn!(target: "reload", "nodelocal changes only on restart");
                }
                let built = rt.build(&new);
                watch::startup::await_sync(&built.live.stores, startup_wait(&new)).await;
                match rt.switch(built, state) {
                    Ok(()) => tracing::info!(target: "reload", "reloaded {}", new.path.display()),
                    Err(e) => {
                        rt.metrics.reload_failed.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(target: "reload", "{e}; listeners that did bind serve the new configuration");
                    }
                }
                if let Some((i, j)) = new.reload {
                    (interval, jitter) = (i, j);
                }
                config = new;
            }
        }
    }
}

impl Runtime {
    /// Builds the routers of `config`, reusing running cluster sources
    /// whose `kubernetes` block is unchanged.
    fn build(&mut self, config: &Config) -> Built {
        self.epoch += 1;
        let stacktrace = config
            .servers
            .iter()
            .any(|s| s.errors.as_ref().is_some_and(|e| e.stacktrace));
        crate::query::errors::stacktrace(stacktrace);
        let mut built = Built {
            routers: BTreeMap::new(),
            live: Live::default(),
            probes: Vec::new(),
        };
        let mut kept: HashMap<String, Source> = HashMap::new();
        let mut plugins = Vec::new();
        for server in &config.servers {
            let key = (server.port, server.bind.clone());
            let label = server_label(server);
            let taps = crate::dnstap::Taps::start(&server.dnstap, &self.metrics);
            let mut block = self.block(server, &mut kept, &mut built, &key, &taps);
            let registry = &self.metrics.registry;
            let router = built.routers.entry(key).or_insert_with(|| Router {
                blocks: Vec::new(),
                epoch: self.epoch,
                stats: vec![registry.zone(&label, "dropped")],
                tcp: server.tcp,
                in_flight: config.in_flight,
                taps: vec![None],
            });
            for zone in &server.zones {
                block.zone_stats.push(router.stats.len() as u16);
                router.stats.push(registry.zone(&label, &zone.to_string()));
                router.taps.push(taps.clone());
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

    fn block(
        &mut self,
        server: &Server,
        kept: &mut HashMap<String, Source>,
        built: &mut Built,
        key: &GroupKey,
        taps: &Option<Arc<crate::dnstap::Taps>>,
    ) -> Block {
        let cluster = server.kubernetes.as_ref().map(|k| {
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
            built.live.stores.push(store.clone());
            kept.insert(id, source);
            Cluster::new(Arc::new(k.clone()), store)
        });
        let forwarding = Forwarding::of(server, server_label(server), self.metrics.clone()).map(|mut f| {
            f.taps = taps.clone();
            Arc::new(f)
        });
        if let Some(f) = &forwarding {
            built.live.forwardings.push(f.clone());
        }
        let dns64 = server
            .dns64
            .clone()
            .map(|d| Arc::new(Dns64::new(d, server_label(server))));
        built.live.dns64.extend(dns64.clone());
        let templates =
            (!server.templates.is_empty()).then(|| Templates::new(server.templates.clone(), server_label(server)));
        if let Some(t) = &templates {
            built.live.templates.push(t.stats.clone());
        }
        let acl_stats = (!server.acl.is_empty()).then(|| {
            let zones: Vec<Vec<String>> = server
                .acl
                .iter()
                .map(|r| r.zones.iter().map(|z| z.to_string()).collect())
                .collect();
            Arc::new(crate::metrics::AclStats::new(&server_label(server), &zones))
        });
        built.live.acl.extend(acl_stats.clone());
        let files: Vec<ZoneFile> = server.files.iter().cloned().map(ZoneFile::new).collect();
        let external = server
            .k8s_external
            .clone()
            .map(|e| Arc::new(K8sExternal::new(Arc::new(e))));
        let transfer = Transfer::start(
            &server.transfers,
            cluster.as_ref(),
            &files,
            external.as_ref(),
            server_label(server),
        );
        built.live.transfers.extend(transfer.as_ref().map(|t| t.stats.clone()));
        let loop_probe = server.loop_detect.map(|exit| Arc::new(LoopProbe::new(exit)));
        if let (Some(p), Some(zone)) = (&loop_probe, server.zones.first()) {
            built.probes.push((key.clone(), p.clone(), zone.clone()));
        }
        Block {
            zones: server.zones.clone(),
            zone_wires: server.zones.iter().map(crate::config::args::lower_wire).collect(),
            zone_stats: Vec::new(),
            hosts: server.hosts.clone().map(Hosts::new),
            files,
            cluster,
            forwarding,
            loop_probe,
            log: server.log.clone(),
            loadbalance: server.loadbalance.clone().map(Arc::new),
            autopath: server.autopath.as_ref().map(|(a, _)| a.clone()),
            acl: server.acl.clone(),
            acl_stats,
            any: server.any,
            whoami: server.whoami,
            chain: server.chain,
            dns64,
            k8s_external: server.k8s_external.clone().map(|e| K8sExternal::new(Arc::new(e))),
            templates,
            rewrite: (!server.rewrites.is_empty()).then(|| Rewrite {
                rules: server.rewrites.clone(),
            }),
            bufsize: server.bufsize,
            chaos: server.chaos.clone().map(Chaos::new),
            local: server.local.map(LocalNames::new),
            transfer,
        }
    }

    /// Puts `built` in service: routers of existing listener groups are
    /// swapped (in-flight queries finish on the old one), new groups are
    /// bound, groups no longer configured are stopped.
    fn switch(&mut self, built: Built, state: &State) -> Result<(), AppError> {
        let Built { routers, live, probes } = built;
        state.live.store(Arc::new(live));
        let gone: Vec<GroupKey> = self
            .groups
            .keys()
            .filter(|k| !routers.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(g) = self.groups.remove(&key) {
                g.stop.store(true, Ordering::Relaxed);
                tracing::info!("closing listeners on port {} (no longer configured)", key.0);
            }
        }
        let mut result = Ok(());
        for (key, router) in routers {
            if let Some(g) = self.groups.get(&key) {
                g.handler.router.store(Arc::new(router));
                continue;
            }
            match self.open(&key, router) {
                Ok(g) => {
                    self.groups.insert(key, g);
                }
                Err(e) => result = Err(e),
            }
        }
        for (key, probe, zone) in probes {
            if let Some(addr) = self.groups.get(&key).and_then(|g| g.bound.first().copied()) {
                send_probe(addr, &probe, &zone, &self.groups[&key].handler);
            }
        }
        result
    }

    /// Stops every listener group. `handover`: another instance serves, so
    /// first take the UDP sockets out of their groups and answer what they
    /// hold (see [`handover`]).
    async fn stop(&mut self, handover: bool) {
        let groups = std::mem::take(&mut self.groups);
        if handover {
            let sockets: Vec<&std::net::UdpSocket> = groups.values().flat_map(|g| &g.udp).collect();
            handover::drain_udp(&sockets, &self.metrics).await;
        }
        let mut tcp = Vec::new();
        for (_, group) in groups {
            group.stop.store(true, Ordering::Relaxed);
            for t in group.threads {
                let _ = tokio::task::spawn_blocking(move || t.join()).await;
            }
            if handover {
                handover::left_behind(&group.udp);
            }
            tcp.extend(group.tcp);
        }
        for t in tcp {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
        handover::await_forwarded(&self.metrics).await;
    }

    fn open(&self, (port, bind): &GroupKey, router: Router) -> Result<Group, AppError> {
        let handler = Arc::new(Handler::new(router, self.metrics.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut group = Group {
            handler,
            stop,
            threads: Vec::new(),
            bound: Vec::new(),
            udp: Vec::new(),
            tcp: Vec::new(),
        };
        for ip in listen_ips(bind) {
            let addr = SocketAddr::new(ip, *port);
            match listen(addr, self.workers, &group.handler, &group.stop) {
                Ok(Listening {
                    bound,
                    threads,
                    udp,
                    tcp,
                }) => {
                    group.threads.extend(threads);
                    group.udp.extend(udp);
                    group.tcp.push(tcp);
                    group.bound.push(bound);
                    if let Ok(mut ports) = self.metrics.udp_ports.lock() {
                        ports.push(bound.port());
                    }
                }
                Err(e) if bind.is_empty() && ip.is_ipv6() => tracing::warn!("{e}; serving IPv4 only"),
                Err(e) => return Err(e),
            }
        }
        Ok(group)
    }
}

/// Sends the `loop` plugin's probe (`<random>.<random>.<zone> HINFO`) to
/// our own listener; if it comes back through an upstream, the block's
/// router notices.
fn send_probe(addr: SocketAddr, probe: &LoopProbe, zone: &Name, handler: &Handler) {
    let label = || Name::from_ascii(fastrand::u64(..).to_string()).unwrap_or_else(|_| Name::root());
    let Ok(name) = label().append_name(&label()).and_then(|n| n.append_name(zone)) else {
        return;
    };
    if let Ok(mut n) = probe.name.lock() {
        *n = Some(name.clone());
    }
    for block in &handler.router.load().blocks {
        if let Some(f) = &block.forwarding {
            if let Ok(mut p) = f.probe.lock() {
                p.0 = Some(name.clone());
            }
        }
    }
    let target = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], addr.port())),
        ip if ip.is_unspecified() => SocketAddr::from((IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]), addr.port())),
        _ => addr,
    };
    tokio::spawn(async move {
        let mut m = Message::new(fastrand::u16(..), MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(name, RecordType::HINFO));
        let (Ok(bytes), Ok(socket)) = (m.to_vec(), tokio::net::UdpSocket::bind((target.ip(), 0)).await) else {
            return;
        };
        let _ = socket.send_to(&bytes, target).await;
        let mut buf = [0u8; 512];
        let _ = tokio::time::timeout(Duration::from_secs(10), socket.recv(&mut buf)).await;
    });
}

/// The `server` label of a block's metrics, as CoreDNS writes it.
fn server_label(server: &Server) -> String {
    match server.bind.first() {
        Some(ip) => format!("dns://{}", SocketAddr::new(*ip, server.port)),
        None => format!("dns://:{}", server.port),
    }
}

/// `clusterdns doctor`'s checks against this node, as warnings and metrics.
fn startup_doctor(config: &Config, metrics: &Metrics) {
    let findings = crate::doctor::check(&crate::doctor::Inputs {
        root: "/".into(),
        upstream_resolv: config
            .servers
            .iter()
            .flat_map(|s| &s.forward)
            .flat_map(|f| f.files.clone())
            .collect(),
        pod_resolv: None,
        pods: None,
        sockets: Some(sockets_needed(config)),
    });
    for f in &findings {
        tracing::warn!(target: "doctor", "{}: {} (fix: {})", f.check, f.message, f.fix);
    }
    if let Ok(mut d) = metrics.doctor.lock() {
        *d = findings.iter().map(|f| (f.check, f.severity.label())).collect();
    }
}

/// Sockets the configuration may hold at once: each listener's TCP
/// connection cap, the in-flight cap, and a margin for the rest.
fn sockets_needed(config: &Config) -> u64 {
    let mut listeners: BTreeMap<GroupKey, u64> = BTreeMap::new();
    for s in &config.servers {
        let addresses = listen_ips(&s.bind).len() as u64;
        listeners
            .entry((s.port, s.bind.clone()))
            .or_insert(s.tcp.connections as u64 * addresses);
    }
    listeners.values().sum::<u64>() + config.in_flight as u64 + 256
}

/// The plugins of `server` (`coredns_plugin_enabled`).
fn enabled(server: &Server, config: &Config) -> Vec<&'static str> {
    let mut names = Vec::new();
    let on = [
        (server.errors.is_some(), "errors"),
        (server.log.is_some(), "log"),
        (config.health.is_some(), "health"),
        (config.ready.is_some(), "ready"),
        (config.prometheus.is_some(), "prometheus"),
        (server.hosts.is_some(), "hosts"),
        (!server.files.is_empty(), "file"),
        (server.kubernetes.is_some(), "kubernetes"),
        (server.cache.is_some(), "cache"),
        (!server.forward.is_empty(), "forward"),
        (server.loop_detect.is_some(), "loop"),
        (config.reload.is_some(), "reload"),
        (server.loadbalance.is_some(), "loadbalance"),
        (server.autopath.is_some(), "autopath"),
        (!server.acl.is_empty(), "acl"),
        (server.any, "any"),
        (server.dns64.is_some(), "dns64"),
        (server.k8s_external.is_some(), "k8s_external"),
        (!server.templates.is_empty(), "template"),
        (!server.rewrites.is_empty(), "rewrite"),
        (server.bufsize.is_some(), "bufsize"),
        (server.chaos.is_some(), "chaos"),
        (server.local.is_some(), "local"),
    ];
    names.extend(on.iter().filter(|(yes, _)| *yes).map(|(_, n)| *n));
    names
}

fn listen_ips(bind: &[IpAddr]) -> Vec<IpAddr> {
    if bind.is_empty() {
        vec![IpAddr::from([0, 0, 0, 0]), IpAddr::from([0u16; 8])]
    } else {
        bind.to_vec()
    }
}

/// One address's listeners, as [`listen`] started them.
struct Listening {
    bound: SocketAddr,
    threads: Vec<std::thread::JoinHandle<()>>,
    udp: Vec<std::net::UdpSocket>,
    tcp: tokio::task::JoinHandle<()>,
}

/// Binds UDP workers and a TCP listener on one address (the same port for
/// both, also when the port is 0) and logs both.
fn listen(
    addr: SocketAddr,
    workers: usize,
    handler: &Arc<Handler>,
    stop: &Arc<AtomicBool>,
) -> Result<Listening, AppError> {
    // Port 0: the port the kernel gave UDP may be taken for TCP (by a
    // client's connection, say); then try another.
    let tries = if addr.port() == 0 { 20 } else { 1 };
    let udp_error = |source| AppError::Bind {
        proto: "udp",
        addr,
        source,
    };
    let mut attempt = 0;
    let (bound, sockets, listener) = loop {
        attempt += 1;
        let (bound, sockets) = udp::bind_all(addr, workers).map_err(udp_error)?;
        match tcp::bind(bound) {
            Ok(listener) => break (bound, sockets, listener),
            Err(e) if attempt < tries && e.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(source) => {
                return Err(AppError::Bind {
                    proto: "tcp",
                    addr: bound,
                    source,
                })
            }
        }
    };
    let dups = sockets.iter().map(|s| s.try_clone()).collect::<Result<_, _>>();
    let udp = dups.map_err(udp_error)?;
    let threads = udp::start(sockets, handler, stop).map_err(udp_error)?;
    tracing::info!("listening on udp {bound}");
    tracing::info!("listening on tcp {bound}");
    let tcp = tokio::spawn(tcp::serve(listener, handler.clone(), stop.clone()));
    Ok(Listening {
        bound,
        threads,
        udp,
        tcp,
    })
}
