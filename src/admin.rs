//! The operator endpoints: `/health` (CoreDNS `health`, default :8080),
//! `/ready` (CoreDNS `ready`, default :8181) and `/metrics` (CoreDNS
//! `prometheus`, default :9153). A minimal HTTP/1.1 responder: one request
//! per connection, bounded in size and time; the metrics listener over TLS
//! with `prometheus { tls FILE }`.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::metrics::Metrics;
use crate::query::forward::Forwarding;
use crate::serve::certs::Certs;
use crate::store::Store;

/// Which endpoints one admin listener serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Endpoints {
    pub health: bool,
    pub ready: bool,
    pub metrics: bool,
}

/// What the endpoints report on.
pub struct State {
    /// The stores and forwarders of the running configuration (swapped by a reload).
    pub live: arc_swap::ArcSwap<Live>,
    pub metrics: Arc<Metrics>,
    /// Set at SIGTERM: health and readiness fail while DNS keeps answering.
    pub lameduck: AtomicBool,
}

/// What one configuration runs.
#[derive(Default)]
pub struct Live {
    pub stores: Vec<Arc<Store>>,
    pub forwardings: Vec<Arc<Forwarding>>,
    /// The counters the chain's plugins of every block keep for `/metrics`.
    pub exposed: Vec<Arc<dyn crate::metrics::exposed::Exposed>>,
    /// `clusterdns_transfer_*` of each block with `transfer`.
    pub transfers: Vec<Arc<crate::query::transfer::TransferStats>>,
    /// The chain's plugins `/ready` waits for, of every block.
    pub ready: Vec<Arc<dyn crate::query::plugins::chain::Readiness>>,
}

impl State {
    /// Why `/ready` fails (ready once every cluster source has completed
    /// its first sync), in CoreDNS's words: `Shutting down` in
    /// lameduck, else the plugins not ready, comma-separated (a
    /// `kubernetes` for each cluster source not yet synced).
    fn not_ready(&self) -> Option<String> {
        if self.lameduck.load(Ordering::Relaxed) {
            return Some("Shutting down".into());
        }
        let live = self.live.load();
        let waiting: Vec<&str> = live
            .stores
            .iter()
            .filter(|s| !s.synced())
            .map(|_| "kubernetes")
            .chain(live.ready.iter().filter(|r| !r.ready()).map(|r| r.name()))
            .collect();
        (!waiting.is_empty()).then(|| waiting.join(","))
    }

    fn synced(&self) -> bool {
        self.live.load().stores.iter().all(|s| s.synced())
    }
}

/// Groups the configured addresses: one listener per distinct address,
/// except that `metrics_apart` (its TLS) gives metrics a listener of its
/// own (on port 0, a port of its own; config refuses a shared fixed one).
pub fn plan(
    health: Option<SocketAddr>,
    ready: Option<SocketAddr>,
    metrics: Option<SocketAddr>,
    metrics_apart: bool,
) -> Vec<(SocketAddr, Endpoints)> {
    let mut plan: BTreeMap<SocketAddr, Endpoints> = BTreeMap::new();
    if let Some(a) = health {
        plan.entry(a).or_default().health = true;
    }
    if let Some(a) = ready {
        plan.entry(a).or_default().ready = true;
    }
    let apart = metrics.filter(|_| metrics_apart).map(|a| {
        let only = Endpoints {
            metrics: true,
            ..Endpoints::default()
        };
        (a, only)
    });
    if let Some(a) = metrics.filter(|_| !metrics_apart) {
        plan.entry(a).or_default().metrics = true;
    }
    plan.into_iter().chain(apart).collect()
}

/// Binds an admin listener on `addr`. `shared`: with `SO_REUSEPORT`, so a
/// second instance on the node (a surge upgrade of the node-local
/// DaemonSet, whose pods share the host's addresses) can bind it while the
/// first still serves; sockets of another user cannot join the group.
pub fn bind(addr: SocketAddr, shared: bool) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(shared)?;
    socket.bind(&addr.into())?;
    socket.listen(128)?;
    socket.set_nonblocking(true)?;
    TcpListener::from_std(socket.into())
}

/// Serves one admin listener forever; with `tls` (the metrics listener of
/// `prometheus { tls FILE }`) over TLS, its certificate read again when
/// its files change (a watch that ends with this task).
pub async fn serve(listener: TcpListener, endpoints: Endpoints, state: Arc<State>, tls: Option<Arc<Certs>>) {
    let watch = async {
        match &tls {
            Some(certs) => {
                let never = Arc::new(AtomicBool::new(false));
                certs.clone().watch(never, state.metrics.clone()).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = watch => {}
        () = accept(listener, endpoints, &state, tls.as_ref()) => {}
    }
}

/// Accepts connections forever, each answered in a task of its own.
async fn accept(listener: TcpListener, endpoints: Endpoints, state: &Arc<State>, tls: Option<&Arc<Certs>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let state = state.clone();
        let acceptor = tls.map(|c| tokio_rustls::TlsAcceptor::from(c.config()));
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), async {
                match acceptor {
                    None => respond(stream, endpoints, &state).await,
                    Some(acceptor) => respond(acceptor.accept(stream).await?, endpoints, &state).await,
                }
            })
            .await;
        });
    }
}

async fn respond<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    endpoints: Endpoints,
    state: &State,
) -> io::Result<()> {
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") && len < buf.len() {
        let n = stream.read(&mut buf[len..]).await?;
        if n == 0 {
            break;
        }
        len += n;
    }
    let request = String::from_utf8_lossy(&buf[..len]);
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    let (status, body, kind) = match path {
        "/health" if endpoints.health => {
            let started = std::time::Instant::now();
            let reply = match state.lameduck.load(Ordering::Relaxed) {
                false => ("200 OK", "OK".to_string(), "text/plain"),
                true => {
                    state.metrics.health.failures.fetch_add(1, Ordering::Relaxed);
                    ("503 Service Unavailable", "shutting down".to_string(), "text/plain")
                }
            };
            state.metrics.health.observe(started.elapsed().as_nanos() as u64);
            reply
        }
        "/ready" if endpoints.ready => match state.not_ready() {
            None => ("200 OK", "OK".to_string(), "text/plain"),
            Some(why) => ("503 Service Unavailable", why, "text/plain"),
        },
        "/metrics" if endpoints.metrics => {
            let mut text = state.metrics.render(state.synced());
            crate::query::forward::render(&state.live.load().forwardings, &mut text);
            crate::metrics::exposed::render(&state.live.load().exposed, &mut text);
            crate::query::transfer::render(&state.live.load().transfers, &mut text);
            ("200 OK", text, "text/plain; version=0.0.4")
        }
        _ => ("404 Not Found", "not found".to_string(), "text/plain"),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
