//! A tap's writer task: connects to the collector (unix socket, TCP, or
//! TLS over TCP), opens a Frame Streams session and writes the queued
//! exchanges as they come, batching whatever is already queued into one
//! write. A failed connect or a broken session is retried with backoff
//! (0.25 s doubling to 10 s); meanwhile queued messages are dropped and
//! counted, as CoreDNS does while it has no output, so the collector sees
//! current traffic once it is back. A collector that closes its end (or
//! sends anything) mid-session ends the session at once. When the taps are
//! dropped (a reload, shutdown) the session ends with STOP and FINISH.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::timeout;
use tokio_rustls::rustls;

use super::message::Stamp;
use super::{frame, Exchange};
use crate::config::dnstap::{DnstapConfig, Endpoint};
use crate::metrics::Metrics;

/// CoreDNS's dial and write timeout.
const TIMEOUT: Duration = Duration::from_secs(4);
const BACKOFF_FIRST: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// Bytes gathered before a write when more is queued.
const BATCH: usize = 256 * 1024;
/// After a write that emptied the queue, the writer lets messages gather
/// this long before it looks again: one wake-up and one write per batch,
/// not per query, at high rates (the queue absorbs the wait).
const GATHER: Duration = Duration::from_millis(2);

trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

/// How a session ended.
enum Ended {
    /// The taps were dropped: the writer is done.
    Closed,
    Broken(io::Error),
}

/// Runs one tap until its taps are dropped.
pub(super) async fn run(cfg: DnstapConfig, mut rx: mpsc::Receiver<Exchange>, metrics: Arc<Metrics>) {
    let stamp = Stamp::of(&cfg);
    let name = endpoint_name(&cfg.endpoint);
    let mut backoff = BACKOFF_FIRST;
    let mut failing = false;
    loop {
        let opened = match timeout(TIMEOUT, connect(&cfg)).await {
            Ok(Ok(mut conn)) => match timeout(TIMEOUT, frame::open(&mut conn)).await {
                Ok(Ok(())) => Ok(conn),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "handshake timed out")),
            },
            Ok(Err(e)) => Err(e),
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out")),
        };
        let error = match opened {
            Ok(conn) => {
                metrics.dnstap.connects.fetch_add(1, Relaxed);
                tracing::info!(target: "dnstap", "connected to {name}");
                (backoff, failing) = (BACKOFF_FIRST, false);
                match session(conn, &mut rx, &stamp, &metrics).await {
                    Ended::Closed => return,
                    Ended::Broken(e) => e,
                }
            }
            Err(e) => e,
        };
        if !failing {
            tracing::warn!(target: "dnstap", "no connection to dnstap endpoint {name}: {error}; retrying, messages meanwhile dropped");
            failing = true;
        }
        if !drop_for(backoff, &mut rx, &metrics).await {
            return;
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Drops (and counts) what arrives for `wait`; false when the taps were
/// dropped meanwhile.
async fn drop_for(wait: Duration, rx: &mut mpsc::Receiver<Exchange>, metrics: &Metrics) -> bool {
    let until = tokio::time::Instant::now() + wait;
    loop {
        tokio::select! {
            got = rx.recv() => match got {
                Some(ex) => {
                    metrics.dnstap.dropped.fetch_add(ex.messages(), Relaxed);
                }
                None => return false,
            },
            _ = tokio::time::sleep_until(until) => return true,
        }
    }
}

/// Writes exchanges until the taps are dropped or the session breaks.
async fn session(conn: Box<dyn Conn>, rx: &mut mpsc::Receiver<Exchange>, stamp: &Stamp, metrics: &Metrics) -> Ended {
    let (mut rd, mut wr) = tokio::io::split(conn);
    // A collector sends nothing mid-session but FINISH after our STOP:
    // whatever it reads (or EOF) ends the session.
    let mut heard = Box::pin(async move { frame::read_control(&mut rd).await });
    let mut out = Vec::with_capacity(BATCH);
    loop {
        tokio::select! {
            got = rx.recv() => {
                let Some(ex) = got else {
                    return close(&mut wr, heard).await;
                };
                let mut count = stamp.frames(ex, &mut out);
                while out.len() < BATCH {
                    match rx.try_recv() {
                        Ok(ex) => count += stamp.frames(ex, &mut out),
                        Err(_) => break,
                    }
                }
                let written = timeout(TIMEOUT, async {
                    wr.write_all(&out).await?;
                    wr.flush().await
                })
                .await;
                out.clear();
                match written {
                    Ok(Ok(())) => {
                        metrics.dnstap.sent.fetch_add(count, Relaxed);
                        tokio::time::sleep(GATHER).await;
                    }
                    Ok(Err(e)) => {
                        metrics.dnstap.dropped.fetch_add(count, Relaxed);
                        return Ended::Broken(e);
                    }
                    Err(_) => {
                        metrics.dnstap.dropped.fetch_add(count, Relaxed);
                        return Ended::Broken(io::Error::new(io::ErrorKind::TimedOut, "write timed out"));
                    }
                }
            }
            heard_back = &mut heard => {
                let why = match heard_back {
                    Ok((kind, _)) => format!("the collector sent control frame {kind} mid-session"),
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => "the collector closed the connection".into(),
                    Err(e) => e.to_string(),
                };
                return Ended::Broken(io::Error::other(why));
            }
        }
    }
}

/// STOP, then FINISH from the collector (bounded in time).
async fn close<W, F>(wr: &mut W, heard: F) -> Ended
where
    W: AsyncWrite + Unpin,
    F: std::future::Future<Output = io::Result<(u32, bool)>>,
{
    let stop = async {
        wr.write_all(&frame::control(frame::STOP, false)).await?;
        wr.flush().await
    };
    if timeout(TIMEOUT, stop).await.is_ok_and(|r| r.is_ok()) {
        if let Ok(Ok((kind, _))) = timeout(TIMEOUT, heard).await {
            if kind != frame::FINISH {
                tracing::debug!(target: "dnstap", "expected FINISH after STOP, got control frame {kind}");
            }
        }
    }
    let _ = wr.shutdown().await;
    Ended::Closed
}

fn endpoint_name(e: &Endpoint) -> String {
    match e {
        Endpoint::Unix(p) => format!("unix://{}", p.display()),
        Endpoint::Tcp(a) => format!("tcp://{a}"),
        Endpoint::Tls(a) => format!("tls://{a}"),
    }
}

async fn connect(cfg: &DnstapConfig) -> io::Result<Box<dyn Conn>> {
    match &cfg.endpoint {
        Endpoint::Unix(path) => Ok(Box::new(tokio::net::UnixStream::connect(path).await?)),
        Endpoint::Tcp(addr) => Ok(Box::new(tcp(addr, cfg.write_buffer).await?)),
        Endpoint::Tls(addr) => {
            let stream = tcp(addr, cfg.write_buffer).await?;
            let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let name = rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let connector = tokio_rustls::TlsConnector::from(super::tls::client(cfg.skip_verify)?);
            Ok(Box::new(connector.connect(name, stream).await?))
        }
    }
}

/// A TCP connection to `addr` (resolved now) with the send buffer asked for.
async fn tcp(addr: &str, write_buffer_mib: u32) -> io::Result<tokio::net::TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"));
    for a in tokio::net::lookup_host(addr).await? {
        let socket = if a.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        let _ = socket.set_send_buffer_size(write_buffer_mib.saturating_mul(1 << 20));
        match socket.connect(a).await {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}
