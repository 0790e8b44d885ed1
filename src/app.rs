//! Wiring and lifecycle: stores and their sources, DNS listeners, admin
//! endpoints; one log line per bound address; on shutdown, lameduck
//! (health and readiness fail, DNS keeps answering), then stop.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::admin::{self, State};
use crate::config::{Config, Server};
use crate::metrics::Metrics;
use crate::query::cluster::Cluster;
use crate::query::{tcp, udp, Block, Handler, Router};
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
}

/// Runs the server until `shutdown` completes, then drains and returns.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<(), AppError> {
    let metrics = Arc::new(Metrics::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut stores = Vec::new();
    let mut groups: BTreeMap<(u16, Vec<IpAddr>), Vec<Block>> = BTreeMap::new();
    for server in &config.servers {
        let block = block(server, &mut stores, &metrics);
        groups
            .entry((server.port, server.bind.clone()))
            .or_default()
            .push(block);
    }
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut threads = Vec::new();
    for ((port, bind), blocks) in groups {
        let handler = Arc::new(Handler {
            router: Router { blocks },
            metrics: metrics.clone(),
        });
        for ip in listen_ips(&bind) {
            let addr = SocketAddr::new(ip, port);
            match listen(addr, workers, &handler, &stop) {
                Ok(t) => threads.extend(t),
                Err(e) if bind.is_empty() && ip.is_ipv6() => {
                    tracing::warn!("{e}; serving IPv4 only")
                }
                Err(e) => return Err(e),
            }
        }
    }
    let state = Arc::new(State {
        stores,
        metrics,
        lameduck: AtomicBool::new(false),
    });
    let (health, ready, prom) = (config.health.as_ref().map(|h| h.addr), config.ready, config.prometheus);
    for (addr, endpoints) in admin::plan(health, ready, prom) {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| AppError::Bind {
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
        tokio::spawn(admin::serve(listener, endpoints, state.clone()));
    }
    shutdown.await;
    let lameduck = config.health.as_ref().map(|h| h.lameduck).unwrap_or_default();
    state.lameduck.store(true, Ordering::Relaxed);
    if !lameduck.is_zero() {
        tracing::info!("lameduck for {lameduck:?}: still answering, health and readiness failing");
        tokio::time::sleep(lameduck).await;
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = tokio::task::spawn_blocking(move || t.join()).await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// The query-side view of one server block; starts its cluster source.
fn block(server: &Server, stores: &mut Vec<Arc<Store>>, metrics: &Arc<Metrics>) -> Block {
    let cluster = server.kubernetes.as_ref().map(|k| {
        let cfg = Arc::new(k.clone());
        let store = Arc::new(Store::default());
        stores.push(store.clone());
        watch::start(cfg.clone(), store.clone(), metrics.clone());
        Cluster::new(cfg, store)
    });
    Block {
        zones: server.zones.clone(),
        cluster,
        log: server.log,
    }
}

fn listen_ips(bind: &[IpAddr]) -> Vec<IpAddr> {
    if bind.is_empty() {
        vec![IpAddr::from([0, 0, 0, 0]), IpAddr::from([0u16; 8])]
    } else {
        bind.to_vec()
    }
}

/// Binds UDP workers and a TCP listener on one address (the same port for
/// both, also when the port is 0) and logs both.
fn listen(
    addr: SocketAddr,
    workers: usize,
    handler: &Arc<Handler>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<std::thread::JoinHandle<()>>, AppError> {
    let (bound, threads) =
        udp::start(addr, workers, handler.clone(), stop.clone()).map_err(|source| AppError::Bind {
            proto: "udp",
            addr,
            source,
        })?;
    let listener = tcp::bind(bound).map_err(|source| AppError::Bind {
        proto: "tcp",
        addr: bound,
        source,
    })?;
    tracing::info!("listening on udp {bound}");
    tracing::info!("listening on tcp {bound}");
    tokio::spawn(tcp::serve(
        listener,
        handler.clone(),
        tcp::MAX_CONNECTIONS,
        stop.clone(),
    ));
    Ok(threads)
}
