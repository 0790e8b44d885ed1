//! Wiring and lifecycle: stores and their sources, forwarders, DNS
//! listeners, admin endpoints; one log line per bound address; `reload`
//! (a changed Corefile is built beside the running one and switched in);
//! on shutdown, lameduck (health and readiness fail, DNS keeps answering),
//! then stop.
//!
//! Start at [`run`]; [`build`] turns a configuration into routers,
//! [`listen`] binds and switches listener groups, [`reload`] watches the
//! Corefile.

mod build;
mod listen;
mod logging;
mod reload;
mod runtime;

pub use logging::on_log_debug;
pub use runtime::AppError;
use runtime::{startup_wait, Runtime};

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::admin::{self, Live, State};
use crate::config::Config;
use crate::nodelocal::lease::Phase;
use crate::nodelocal::{handover, NodeLocal};
use crate::query::plugins::on::setup::Event;
use crate::watch;

/// Runs the server until `shutdown` completes, then drains and returns.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<(), AppError> {
    // The text `reload` compares against: read now, not once started (a
    // change written while the server starts would pass unseen).
    let loaded = std::fs::read(&config.path).ok();
    let mut rt = Runtime::new();
    listen::startup_doctor(&config, &rt.metrics);
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
    on(&config, Event::Startup).await;
    // Rules only once listening (as node-cache waits for CoreDNS).
    let keeper = match &nodelocal {
        Some(n) => Some(serve_rules(n).await),
        None => None,
    };
    let lameduck = config.health.as_ref().map(|h| h.lameduck).unwrap_or_default();
    let running = std::sync::Mutex::new(config.clone());
    match config.reload {
        Some((interval, jitter)) => {
            tokio::select! {
                () = shutdown => {}
                () = reload::reload_loop(&mut rt, &state, config, loaded, (interval, jitter), &running) => {}
            }
        }
        None => shutdown.await,
    }
    // the configuration running now: the last reload's
    let last = running.into_inner().unwrap_or_else(|e| e.into_inner());
    on(&last, Event::Shutdown).await;
    drain(rt, &state, lameduck, nodelocal.as_ref(), (admin, keeper)).await;
    Ok(())
}

/// The `on EVENT` commands of `config`'s server blocks.
async fn on(config: &Config, event: Event) {
    crate::query::plugins::on::fire(config.servers.iter().map(|s| s.setup("on")), event).await
}

/// Node-local mode once listening: announced as serving, its rules
/// installed, and the task that keeps them.
async fn serve_rules(n: &Arc<NodeLocal>) -> tokio::task::JoinHandle<()> {
    n.announce(Phase::Serving);
    n.install().await;
    tokio::spawn(n.clone().keep())
}

/// After shutdown: lameduck (still answering, health and readiness
/// failing), then the node-local hand-over or teardown, then listeners
/// stopped once what they hold is answered.
async fn drain(
    mut rt: Runtime,
    state: &State,
    lameduck: Duration,
    nodelocal: Option<&Arc<NodeLocal>>,
    (admin, keeper): (Vec<tokio::task::JoinHandle<()>>, Option<tokio::task::JoinHandle<()>>),
) {
    state.lameduck.store(true, Ordering::Relaxed);
    if !lameduck.is_zero() {
        tracing::info!("lameduck for {lameduck:?}: still answering, health and readiness failing");
        tokio::time::sleep(lameduck).await;
    }
    let successor = match nodelocal {
        Some(n) => handover::successor(n).await,
        None => false,
    };
    if successor {
        // The successor answers the probes from now on.
        admin.iter().for_each(tokio::task::JoinHandle::abort);
    } else if let Some(n) = nodelocal {
        // Alone: tear down before closing (in transparent mode the kube-dns
        // IP goes back to kube-proxy's DNAT while this still answers).
        keeper.as_ref().map(tokio::task::JoinHandle::abort);
        n.leave().await;
    }
    rt.stop(successor).await;
    crate::query::errors::stop();
    if let (true, Some(n)) = (successor, nodelocal) {
        keeper.as_ref().map(tokio::task::JoinHandle::abort);
        n.leave().await;
    }
    let late = rt.metrics.udp_late_dropped.load(Ordering::Relaxed);
    tracing::info!(
        "stopped ({} queries answered, {late} UDP queries dropped as too late)",
        rt.metrics.requests_total()
    );
}

/// Binds `pprof`, then `/health`, `/ready` and `/metrics` (`shared`:
/// with `SO_REUSEPORT`, for node-local surge upgrades) and logs each.
async fn bind_admin(
    config: &Config,
    state: &Arc<State>,
    shared: bool,
) -> Result<Vec<tokio::task::JoinHandle<()>>, AppError> {
    let (health, ready, prom) = (config.health.as_ref().map(|h| h.addr), config.ready, config.prometheus);
    let metrics_tls = config.prometheus_tls.as_ref().and_then(|(_, web)| web.tls.as_ref());
    let (mut tasks, mut bound_all) = (Vec::new(), Vec::new());
    // `pprof` first: once `/ready` answers, every listener is bound.
    if let Some(addr) = config.pprof {
        let listener = admin::bind(addr, shared).map_err(|source| AppError::Bind {
            proto: "http",
            addr,
            source,
        })?;
        tracing::info!("listening on pprof http://{}", listener.local_addr().unwrap_or(addr));
        tasks.push(tokio::spawn(crate::profile::serve(listener)));
    }
    for (addr, endpoints) in admin::plan(health, ready, prom, metrics_tls.is_some()) {
        let listener = admin::bind(addr, shared).map_err(|source| AppError::Bind {
            proto: "http",
            addr,
            source,
        })?;
        let bound = listener.local_addr().unwrap_or(addr);
        let tls = match (endpoints.metrics, metrics_tls) {
            (true, Some(tls)) => Some(metrics_certs(tls, addr)?),
            _ => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        for (on, name) in [
            (endpoints.health, "health"),
            (endpoints.ready, "ready"),
            (endpoints.metrics, "metrics"),
        ] {
            if on {
                tracing::info!("listening on {name} {scheme}://{bound}");
            }
        }
        bound_all.push((listener, endpoints, tls));
    }
    // Served once all are bound: once `/ready` answers, every listener is.
    for (listener, endpoints, tls) in bound_all {
        tasks.push(tokio::spawn(admin::serve(listener, endpoints, state.clone(), tls)));
    }
    Ok(tasks)
}

/// The metrics listener's certificate (`prometheus { tls FILE }`), read
/// again when its files change.
fn metrics_certs(
    tls: &crate::metrics::web::MetricsTls,
    addr: std::net::SocketAddr,
) -> Result<Arc<crate::serve::certs::Certs>, AppError> {
    let read = tls.clone();
    crate::serve::certs::Certs::with_reader(tls.files(), move || read.server_config()).map_err(|e| AppError::Bind {
        proto: "https",
        addr,
        source: std::io::Error::other(e),
    })
}
