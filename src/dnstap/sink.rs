//! A tap's writer task: connects to the collector (unix socket, TCP, or
//! TLS over TCP), opens a Frame Streams session and writes the queued
//! exchanges as they come, whatever is queued encoded into one buffer and
//! written at once. A failed connect or a broken session is retried with backoff
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
use tokio::time::timeout;
use tokio_rustls::rustls;

use super::frame;
use super::message::{Clock, Encoder};
use super::queue::{self, Queue};
use crate::dnstap::setup::{DnstapConfig, Endpoint};
use crate::metrics::Metrics;

/// CoreDNS's dial and write timeout.
pub(super) const TIMEOUT: Duration = Duration::from_secs(4);
pub(super) const BACKOFF_FIRST: Duration = Duration::from_millis(250);
pub(super) const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// After a write, the writer lets messages gather this long before it
/// looks again (sooner when a slot is half full): a few wake-ups and
/// writes a second, not one per query. Each write wakes the collector,
/// and every wake-up on a busy machine splits the bursts the UDP workers
/// take in one `recvmmsg`, which costs them more than the writing does.
pub(super) const GATHER: Duration = Duration::from_millis(50);

pub(super) trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

/// How a session ended.
pub(super) enum Ended {
    /// The taps were dropped: the writer is done.
    Closed,
    Broken(io::Error),
}

/// Runs one tap until its taps are dropped.
pub(super) async fn run(cfg: DnstapConfig, queue: Arc<Queue>, metrics: Arc<Metrics>) {
    let mut writer = Writer::new(&cfg, queue, metrics);
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
                writer.metrics.dnstap.connects.fetch_add(1, Relaxed);
                tracing::info!(target: "dnstap", "connected to {name}");
                (backoff, failing) = (BACKOFF_FIRST, false);
                match writer.session(conn).await {
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
        if !writer.drop_for(backoff).await {
            return;
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// The writer's state across sessions.
pub(super) struct Writer {
    pub queue: Arc<Queue>,
    encoder: Encoder,
    spares: [queue::Batch; queue::SLOTS],
    pub out: Vec<u8>,
    pub metrics: Arc<Metrics>,
}

impl Writer {
    pub fn new(cfg: &DnstapConfig, queue: Arc<Queue>, metrics: Arc<Metrics>) -> Writer {
        Writer {
            queue,
            encoder: Encoder::of(cfg),
            spares: queue::spares(),
            out: Vec::new(),
            metrics,
        }
    }

    /// Takes what is queued into `out` as frames; how many messages.
    pub fn take(&mut self) -> u64 {
        self.out.clear();
        if !self.queue.drain(&mut self.spares) {
            return 0;
        }
        let clock = Clock::now();
        let mut count = 0;
        for batch in &self.spares {
            count += self.encoder.batch(batch, &clock, &mut self.out);
        }
        count
    }

    /// Drops (and counts) what is queued for `wait`; false when the taps
    /// were dropped meanwhile.
    pub async fn drop_for(&mut self, wait: Duration) -> bool {
        let until = tokio::time::Instant::now() + wait;
        loop {
            let dropped = self.queue.drain(&mut self.spares);
            if dropped {
                let messages: u64 = self.spares.iter().flat_map(|b| &b.records).map(|r| r.messages()).sum();
                self.metrics.dnstap.dropped.fetch_add(messages, Relaxed);
            }
            if self.queue.is_closed() {
                return false;
            }
            if tokio::time::Instant::now() >= until {
                return true;
            }
            let _ = tokio::time::timeout_at(until, self.queue.wait()).await;
        }
    }

    /// Writes what is queued until the taps are dropped or the session
    /// breaks.
    async fn session(&mut self, conn: Box<dyn Conn>) -> Ended {
        let (mut rd, mut wr) = tokio::io::split(conn);
        // A collector sends nothing mid-session but FINISH after our STOP:
        // whatever it reads (or EOF) ends the session.
        let mut heard = Box::pin(async move { frame::read_control(&mut rd).await });
        loop {
            let closed = self.queue.is_closed();
            let count = self.take();
            if count > 0 {
                let written = timeout(TIMEOUT, async {
                    wr.write_all(&self.out).await?;
                    wr.flush().await
                })
                .await;
                let error = match written {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(_) => Some(io::Error::new(io::ErrorKind::TimedOut, "write timed out")),
                };
                if let Some(e) = error {
                    self.metrics.dnstap.dropped.fetch_add(count, Relaxed);
                    return Ended::Broken(e);
                }
                self.metrics.dnstap.sent.fetch_add(count, Relaxed);
            }
            if closed {
                return close(&mut wr, heard).await;
            }
            let pause = async {
                if count > 0 {
                    self.queue.gather(GATHER).await;
                } else {
                    self.queue.wait().await;
                }
            };
            tokio::select! {
                _ = pause => {}
                heard_back = &mut heard => return Ended::Broken(ended_by(heard_back)),
            }
        }
    }
}

/// Why the collector's side ended a session.
pub(super) fn ended_by(heard: io::Result<(u32, bool)>) -> io::Error {
    let why = match heard {
        Ok((kind, _)) => format!("the collector sent control frame {kind} mid-session"),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => "the collector closed the connection".into(),
        Err(e) => e.to_string(),
    };
    io::Error::other(why)
}

/// STOP, then FINISH from the collector (bounded in time).
pub(super) async fn close<W, F>(wr: &mut W, heard: F) -> Ended
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

pub(super) fn endpoint_name(e: &Endpoint) -> String {
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
            let client = crate::tls::client_config(&[], cfg.skip_verify).map_err(io::Error::other)?;
            let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(client));
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
