//! `dnstap listen`: the server listens on the tap's socket (unix, TCP, or
//! TLS over TCP) and every collector that connects gets the stream, the
//! server acting as the Frame Streams writer (READY, ACCEPT, START … STOP,
//! FINISH) on each connection.
//!
//! ```text
//!  queue ─► writer task: encode a batch once ─┬─► collector task ─► conn
//!                     (Bytes, shared)         ├─► collector task ─► conn
//!                                             └─► …
//! ```
//!
//! Each collector has a short queue of batches of its own. One that falls
//! behind by more than that loses the batch (counted as dropped) and its
//! connection, as CoreDNS cuts off a slow sink; the others go on. While no
//! collector is connected the query path queues nothing (nobody to drop
//! for). A socket that cannot be bound is retried with backoff.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::time::timeout;
use tokio_rustls::TlsAcceptor;

use super::frame;
use super::queue::Queue;
use super::sink::{self, Conn, Writer, GATHER, TIMEOUT};
use crate::dnstap::setup::{DnstapConfig, Endpoint};
use crate::metrics::Metrics;

/// Batches a collector may fall behind by before it is cut off (a batch
/// is at most [`GATHER`] of messages).
const CLIENT_QUEUE: usize = 16;
/// Sessions handed from their tasks to the writer, not yet taken.
const JOINING: usize = 16;

/// One encoded batch and how many messages it holds.
type Chunk = (Bytes, u64);

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener, Option<TlsAcceptor>),
}

/// A connection accepted, before its TLS handshake (if any).
enum Incoming {
    Unix(UnixStream),
    Tcp(TcpStream),
    Tls(TcpStream, TlsAcceptor),
}

/// Runs one listening tap until its taps are dropped.
pub(super) async fn run(cfg: DnstapConfig, queue: Arc<Queue>, metrics: Arc<Metrics>) {
    let name = sink::endpoint_name(&cfg.endpoint);
    queue.want(false);
    let Some(listener) = bind_retrying(&cfg, &queue, &name).await else {
        return;
    };
    tracing::info!(target: "dnstap", "listening for dnstap collectors on {name}");
    let mut writer = Writer::new(&cfg, queue, metrics);
    let (joining, mut joined) = mpsc::channel::<mpsc::Sender<Chunk>>(JOINING);
    let mut clients: Vec<mpsc::Sender<Chunk>> = Vec::new();
    loop {
        let closed = writer.queue.is_closed();
        let count = writer.take();
        if count > 0 {
            broadcast(&mut clients, &writer.out, count, &writer.metrics);
        }
        clients.retain(|c| !c.is_closed());
        writer.queue.want(!clients.is_empty());
        if closed {
            return; // each collector's task sends STOP as its queue closes
        }
        let queue = writer.queue.clone();
        let pause = async move {
            if count > 0 {
                queue.gather(GATHER).await;
            } else {
                queue.wait().await;
            }
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(incoming) => {
                    tokio::spawn(collector(incoming, joining.clone(), writer.metrics.clone()));
                }
                Err(e) => {
                    tracing::warn!(target: "dnstap", "accepting a collector on {name}: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            Some(client) = joined.recv() => clients.push(client),
            _ = pause => {}
        }
    }
}

/// Offers one batch to every collector; one whose queue is full loses it
/// and is cut off.
fn broadcast(clients: &mut Vec<mpsc::Sender<Chunk>>, out: &[u8], count: u64, metrics: &Metrics) {
    let chunk = Bytes::copy_from_slice(out);
    clients.retain(|c| match c.try_send((chunk.clone(), count)) {
        Ok(()) => true,
        Err(TrySendError::Full(_)) => {
            metrics.dnstap.dropped.fetch_add(count, Relaxed);
            tracing::warn!(target: "dnstap", "a dnstap collector fell behind: its messages dropped, its connection closed");
            false
        }
        Err(TrySendError::Closed(_)) => false,
    });
}

/// One collector's session: the handshake, then the batches the writer
/// hands it, until either end leaves.
async fn collector(incoming: Incoming, joining: mpsc::Sender<mpsc::Sender<Chunk>>, metrics: Arc<Metrics>) {
    let opened = timeout(TIMEOUT, async {
        let mut conn = incoming.open().await?;
        frame::open(&mut conn).await?;
        Ok::<_, io::Error>(conn)
    })
    .await;
    let conn = match opened {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => return tracing::info!(target: "dnstap", "a dnstap collector's handshake failed: {e}"),
        Err(_) => return tracing::info!(target: "dnstap", "a dnstap collector's handshake timed out"),
    };
    metrics.dnstap.connects.fetch_add(1, Relaxed);
    tracing::info!(target: "dnstap", "a dnstap collector connected");
    let (tx, mut rx) = mpsc::channel::<Chunk>(CLIENT_QUEUE);
    if joining.send(tx).await.is_err() {
        return;
    }
    let (mut rd, mut wr) = tokio::io::split(conn);
    let mut heard = Box::pin(async move { frame::read_control(&mut rd).await });
    loop {
        tokio::select! {
            got = rx.recv() => {
                let Some((chunk, count)) = got else {
                    sink::close(&mut wr, heard).await;
                    return;
                };
                let written = timeout(TIMEOUT, async {
                    tokio::io::AsyncWriteExt::write_all(&mut wr, &chunk).await?;
                    tokio::io::AsyncWriteExt::flush(&mut wr).await
                })
                .await;
                if !matches!(written, Ok(Ok(()))) {
                    metrics.dnstap.dropped.fetch_add(count, Relaxed);
                    return tracing::info!(target: "dnstap", "a dnstap collector stopped reading; disconnected");
                }
                metrics.dnstap.sent.fetch_add(count, Relaxed);
            }
            heard_back = &mut heard => {
                return tracing::info!(target: "dnstap", "a dnstap collector left: {}", sink::ended_by(heard_back));
            }
        }
    }
}

impl Incoming {
    async fn open(self) -> io::Result<Box<dyn Conn>> {
        Ok(match self {
            Incoming::Unix(s) => Box::new(s),
            Incoming::Tcp(s) => Box::new(s),
            Incoming::Tls(s, acceptor) => Box::new(acceptor.accept(s).await?),
        })
    }
}

impl Listener {
    async fn accept(&self) -> io::Result<Incoming> {
        match self {
            Listener::Unix(l) => Ok(Incoming::Unix(l.accept().await?.0)),
            Listener::Tcp(l, None) => Ok(Incoming::Tcp(l.accept().await?.0)),
            Listener::Tcp(l, Some(tls)) => Ok(Incoming::Tls(l.accept().await?.0, tls.clone())),
        }
    }
}

/// Binds the tap's socket, retrying with backoff (a reload's new tap may
/// start while the old one still holds it); `None` when the taps are
/// dropped first.
async fn bind_retrying(cfg: &DnstapConfig, queue: &Queue, name: &str) -> Option<Listener> {
    let mut backoff = sink::BACKOFF_FIRST;
    let mut warned = false;
    loop {
        match bind(cfg).await {
            Ok(l) => return Some(l),
            Err(e) if !warned => {
                tracing::error!(target: "dnstap", "cannot listen for dnstap collectors on {name}: {e}; retrying");
                warned = true;
            }
            Err(_) => {}
        }
        tokio::time::sleep(backoff).await;
        if queue.is_closed() {
            return None;
        }
        backoff = (backoff * 2).min(sink::BACKOFF_MAX);
    }
}

async fn bind(cfg: &DnstapConfig) -> io::Result<Listener> {
    let tcp = |addr: &str| {
        let addr = addr.to_string();
        async move {
            let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"));
            for a in tokio::net::lookup_host(&addr).await? {
                let socket = if a.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()?
                } else {
                    tokio::net::TcpSocket::new_v6()?
                };
                socket.set_reuseaddr(true)?;
                let _ = socket.set_send_buffer_size(cfg.write_buffer.saturating_mul(1 << 20));
                match socket.bind(a).and_then(|()| socket.listen(128)) {
                    Ok(l) => return Ok(l),
                    Err(e) => last = e,
                }
            }
            Err(last)
        }
    };
    match &cfg.endpoint {
        Endpoint::Unix(path) => {
            use std::os::unix::fs::FileTypeExt;
            // A socket left by an earlier run (or the tap this reload
            // replaces) is taken over; any other file is left alone.
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
                let _ = std::fs::remove_file(path);
            }
            Ok(Listener::Unix(UnixListener::bind(path)?))
        }
        Endpoint::Tcp(addr) => Ok(Listener::Tcp(tcp(addr).await?, None)),
        Endpoint::Tls(addr) => {
            let tls = cfg.listen.as_ref().and_then(|l| l.tls.as_ref()).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no 'tls CERT KEY [CA]' for a tls:// socket",
                )
            })?;
            let config = crate::tls::server_config(&tls.cert, &tls.key, tls.ca.as_deref(), cfg.skip_verify)
                .map_err(io::Error::other)?;
            let acceptor = TlsAcceptor::from(Arc::new(config));
            Ok(Listener::Tcp(tcp(addr).await?, Some(acceptor)))
        }
    }
}
