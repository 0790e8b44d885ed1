//! One upstream resolver: exchanges over UDP (from its pool of ports,
//! `outgoing.rs`) or pooled TCP connections, or over its encrypted
//! transport (`encrypted.rs`) when it has one, and its health. All
//! leave from `source_address` when set; a pooled connection is closed
//! when idle for `expire` or older than `max_age`.
//!
//! An answer is accepted only if it comes from the upstream's address
//! (connected sockets), carries the ID we chose, and repeats our question;
//! over UDP whatever else arrives is counted (`outgoing.rs`).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use hickory_proto::op::{Message, Query};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::exchange::{matching, ExchangeError};
use super::lanes;
use crate::query::forward::setup::ForwardConfig;
use tokio::time::timeout_at;

/// An idle pooled connection, when it was last used and opened.
type Pooled = (TcpStream, Instant, Instant);

/// One upstream and its state.
#[derive(Debug)]
pub struct Upstream {
    pub addr: SocketAddr,
    /// Failures since the last success.
    pub fails: AtomicU32,
    pub down: AtomicBool,
    /// A health probe loop is running (`health.rs`).
    pub probing: AtomicBool,
    /// Set when the loop probe came back through this upstream.
    pub looping: AtomicBool,
    pub healthcheck_failures: AtomicU64,
    /// `coredns_proxy_request_duration_seconds` by the answer's rcode.
    pub durations: [crate::metrics::Durations; 7],
    /// Pooled connections: when last used, when opened (a UDP worker's
    /// lane keeps its own: a connection is read by the runtime it is
    /// registered with, and that one sleeps in `recvmmsg` while idle).
    idle: lanes::PerLane<Vec<Pooled>>,
    /// DNS over TLS or HTTPS instead of UDP and TCP.
    pub encrypted: Option<super::encrypted::Encrypted>,
    /// The UDP ports queries leave from.
    pub outgoing: super::outgoing::Outgoing,
}

impl Upstream {
    pub fn new(addr: SocketAddr) -> Upstream {
        Upstream {
            addr,
            fails: AtomicU32::new(0),
            down: AtomicBool::new(false),
            probing: AtomicBool::new(false),
            looping: AtomicBool::new(false),
            healthcheck_failures: AtomicU64::new(0),
            durations: Default::default(),
            idle: Default::default(),
            encrypted: None,
            outgoing: Default::default(),
        }
    }

    /// The upstream `target` names, over the transport it names.
    pub fn to(
        target: &crate::query::forward::setup::tls::Target,
        tls: &crate::query::forward::setup::tls::TlsSettings,
    ) -> Upstream {
        Upstream {
            encrypted: super::encrypted::Encrypted::of(target, tls),
            ..Upstream::new(target.addr)
        }
    }

    /// Whether queries may go here now.
    pub fn usable(&self) -> bool {
        !self.down.load(Ordering::Relaxed) && !self.looping.load(Ordering::Relaxed)
    }

    /// Sends `request` (whose ID is `id`) and waits for the matching answer
    /// until `deadline`.
    pub async fn exchange(
        &self,
        request: &[u8],
        id: u16,
        query: &Query,
        tcp: bool,
        deadline: tokio::time::Instant,
        cfg: &ForwardConfig,
    ) -> Result<Message, ExchangeError> {
        self.exchange_from(request, id, query, tcp, deadline, cfg).await.0
    }

    /// [`Upstream::exchange`], and the address of our end of the socket
    /// the query left on (plain UDP and TCP), for dnstap.
    pub async fn exchange_from(
        &self,
        request: &[u8],
        id: u16,
        query: &Query,
        tcp: bool,
        deadline: tokio::time::Instant,
        cfg: &ForwardConfig,
    ) -> (Result<Message, ExchangeError>, Option<SocketAddr>) {
        let mut local = None;
        let mut wrong = false;
        let result = if let Some(enc) = &self.encrypted {
            // The rare transports on the heap: a miss's task, which holds
            // this future, stays small (moved once per spawn, not 7 KB).
            timeout_at(deadline, Box::pin(enc.exchange(request, id, query, cfg))).await
        } else if tcp {
            timeout_at(deadline, Box::pin(self.tcp(request, id, query, cfg, &mut local))).await
        } else {
            let udp = self.outgoing.exchange(
                self.addr,
                cfg.source_address,
                request,
                id,
                query,
                &mut local,
                &mut wrong,
            );
            timeout_at(deadline, udp).await
        };
        let timed_out = if wrong {
            ExchangeError::Mismatch
        } else {
            ExchangeError::Timeout
        };
        (result.unwrap_or(Err(timed_out)), local)
    }

    async fn tcp(
        &self,
        request: &[u8],
        id: u16,
        query: &Query,
        cfg: &ForwardConfig,
        local: &mut Option<SocketAddr>,
    ) -> Result<Message, ExchangeError> {
        let pooled = self.take(cfg);
        let fresh = pooled.is_none();
        let (stream, opened) = match pooled {
            Some(s) => s,
            None => (self.connect(cfg.source_address).await?, Instant::now()),
        };
        *local = stream.local_addr().ok();
        match exchange_on(stream, request, id, query).await {
            Ok((m, stream)) => {
                self.give_back(stream, opened);
                Ok(m)
            }
            // A pooled connection the upstream closed meanwhile: once more, fresh.
            Err(_) if !fresh => {
                let stream = self.connect(cfg.source_address).await?;
                *local = stream.local_addr().ok();
                let (m, stream) = exchange_on(stream, request, id, query).await?;
                self.give_back(stream, Instant::now());
                Ok(m)
            }
            Err(e) => Err(e),
        }
    }

    async fn connect(&self, source: Option<IpAddr>) -> io::Result<TcpStream> {
        super::exchange::connect(self.addr, source).await
    }

    /// A pooled connection still fresh by `expire` and `max_age`, and when
    /// it was opened.
    fn take(&self, cfg: &ForwardConfig) -> Option<(TcpStream, Instant)> {
        let found = self.idle.with_of(lanes::owner_shared(), drop, |idle| {
            while let Some(p) = idle.pop() {
                if fresh(&p, cfg) {
                    return Some((p.0, p.2));
                }
            }
            None
        });
        found.flatten()
    }

    fn give_back(&self, stream: TcpStream, opened: Instant) {
        self.idle.with_of(lanes::owner_shared(), drop, |idle| {
            idle.push((stream, Instant::now(), opened))
        });
    }

    /// Closes pooled connections beyond `max_idle_conns` (0: no limit),
    /// idle for `expire` or older than `max_age`: those this thread's lane
    /// may use (each lane trims its own as it answers; a lock for each of
    /// them on every answer cost a miss 860 instructions).
    pub fn trim_pool(&self, cfg: &ForwardConfig) {
        let max = cfg.max_idle_conns;
        self.idle.with_of(lanes::owner_shared(), drop, |idle| {
            if idle.is_empty() {
                return;
            }
            idle.retain(|p| fresh(p, cfg));
            if max > 0 && idle.len() > max {
                let extra = idle.len() - max;
                idle.drain(..extra);
            }
        });
    }
}

/// Whether a pooled connection may carry another query.
fn fresh((_, used, opened): &Pooled, cfg: &ForwardConfig) -> bool {
    used.elapsed() < cfg.expire && (cfg.max_age.is_zero() || opened.elapsed() < cfg.max_age)
}

async fn exchange_on(
    mut stream: TcpStream,
    request: &[u8],
    id: u16,
    query: &Query,
) -> Result<(Message, TcpStream), ExchangeError> {
    let len = u16::try_from(request.len()).map_err(|_| io::Error::other("request too long"))?;
    let mut frame = Vec::with_capacity(request.len() + 2);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(request);
    stream.write_all(&frame).await?;
    loop {
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).await?;
        let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
        stream.read_exact(&mut buf).await?;
        if let Some(m) = matching(&buf, id, query) {
            return Ok((m, stream));
        }
    }
}
