//! The `dnstap` plugin: every query a server block answers, and every
//! exchange its `forward` has with an upstream, sent to a collector as
//! dnstap messages over Frame Streams.
//!
//! ```text
//!  query path (worker, forwarding task)          one writer task per `dnstap`
//!  Taps::served / Taps::forwarded ─► bounded queue ─► encode (message.rs)
//!       (a few copies, no I/O;          (full: drop      ─► Frame Streams (frame.rs)
//!        never waits)                    and count)       ─► unix / tcp / tls (sink.rs)
//! ```
//!
//! The query path only stamps what happened into an [`Exchange`] and
//! offers it to each tap's queue; a full queue drops it and counts it in
//! `coredns_dnstap_dropped_total`, so a slow or absent collector never
//! slows an answer. Encoding, connecting, reconnecting with backoff and
//! the handshake all happen on the writer task ([`sink`]).

mod frame;
mod message;
pub mod proto;
mod sink;
mod tls;

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use crate::config::dnstap::DnstapConfig;
use crate::metrics::Metrics;

/// Which pair of dnstap messages an [`Exchange`] becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// CLIENT_QUERY and CLIENT_RESPONSE: `peer` is the client.
    Client,
    /// FORWARDER_QUERY, and FORWARDER_RESPONSE when an answer came: `peer`
    /// is the upstream.
    Forwarder,
}

/// One query and its answer, as queued for the writer.
#[derive(Debug)]
pub struct Exchange {
    pub side: Side,
    pub peer: SocketAddr,
    pub tcp: bool,
    pub asked: SystemTime,
    /// When the answer was sent (client) or came (forwarder); `None`: no
    /// answer came.
    pub answered: Option<SystemTime>,
    /// The wire messages, with `full` only.
    pub query: Option<Vec<u8>>,
    pub reply: Option<Vec<u8>>,
}

impl Exchange {
    /// How many dnstap messages this becomes.
    fn messages(&self) -> u64 {
        1 + u64::from(self.answered.is_some())
    }
}

/// One `dnstap` directive's end of the queue.
struct Tap {
    full: bool,
    tx: mpsc::Sender<Exchange>,
}

/// The `dnstap` directives of one server block.
pub struct Taps {
    taps: Vec<Tap>,
    /// Some tap wants the wire messages.
    full: bool,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Taps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Taps({})", self.taps.len())
    }
}

impl Taps {
    /// Starts a writer task per directive; `None` when there is none. Must
    /// be called inside the runtime. The writers end (STOP, FINISH) when
    /// the last holder of the returned `Taps` drops it (a reload).
    pub fn start(configs: &[DnstapConfig], metrics: &Arc<Metrics>) -> Option<Arc<Taps>> {
        if configs.is_empty() {
            return None;
        }
        let taps: Vec<Tap> = configs
            .iter()
            .map(|cfg| {
                let (tx, rx) = mpsc::channel(cfg.queue_len());
                tokio::spawn(sink::run(cfg.clone(), rx, metrics.clone()));
                Tap { full: cfg.full, tx }
            })
            .collect();
        Some(Arc::new(Taps {
            full: taps.iter().any(|t| t.full),
            taps,
            metrics: metrics.clone(),
        }))
    }

    /// A query answered to `peer`: `query` came in at `started`, `reply`
    /// is going out now.
    pub fn served(&self, peer: SocketAddr, tcp: bool, query: &[u8], reply: &[u8], started: Instant) {
        let (asked, now) = times(started);
        self.offer(|full| Exchange {
            side: Side::Client,
            peer,
            tcp,
            asked,
            answered: Some(now),
            query: full.then(|| query.to_vec()),
            reply: full.then(|| reply.to_vec()),
        });
    }

    /// One exchange with `upstream` that started at `started`: `reply`
    /// encodes its answer (called with `full` only), `None` when none came.
    pub fn forwarded(
        &self,
        upstream: SocketAddr,
        tcp: bool,
        query: &[u8],
        reply: Option<&dyn Fn() -> Vec<u8>>,
        started: Instant,
    ) {
        let (asked, now) = times(started);
        let encoded = reply.filter(|_| self.full).map(|r| r());
        self.offer(|full| Exchange {
            side: Side::Forwarder,
            peer: upstream,
            tcp,
            asked,
            answered: reply.map(|_| now),
            query: full.then(|| query.to_vec()),
            reply: encoded.clone().filter(|_| full),
        });
    }

    /// Offers one exchange to every tap (`make(full)` builds it, with the
    /// wire messages for a tap with `full`), counting what a full queue
    /// refuses.
    fn offer(&self, make: impl Fn(bool) -> Exchange) {
        for tap in &self.taps {
            let exchange = make(tap.full);
            let messages = exchange.messages();
            if tap.tx.try_send(exchange).is_err() {
                self.metrics.dnstap.dropped.fetch_add(messages, Relaxed);
            }
        }
    }
}

/// The wall-clock time of `started`, and now.
fn times(started: Instant) -> (SystemTime, SystemTime) {
    let now = SystemTime::now();
    (now.checked_sub(started.elapsed()).unwrap_or(now), now)
}
