//! The `dnstap` plugin: every query a server block answers, and every
//! exchange its `forward` has with an upstream, sent to a collector as
//! dnstap messages over Frame Streams.
//!
//! ```text
//!  query path (worker, forwarding task)        one writer task per `dnstap`
//!  Taps::served / Taps::forwarded ─► queue ─► encode a batch (message.rs)
//!    (one clock read, a fixed-size  (slots;   ─► Frame Streams (frame.rs)
//!     record, a locked push;         full:    ─► unix / tcp / tls (sink.rs),
//!     never waits)                   drop and    or each connected collector
//!                                    count)      of `dnstap listen` (listen.rs)
//! ```
//!
//! The query path only stamps what happened into a [`Record`] and pushes
//! it onto each tap's [`queue`]; a full queue drops it and counts it in
//! `coredns_dnstap_dropped_total`, so a slow or absent collector never
//! slows an answer. Times travel as [`Instant`]s and become wall-clock
//! times on the writer, once per batch. Encoding, connecting,
//! reconnecting with backoff and the handshake all happen on the writer
//! task.

pub mod print;
pub mod setup;

mod frame;
mod listen;
mod message;
pub mod proto;
mod queue;
mod record;
mod sink;

pub(crate) use record::Record;
pub use record::Side;

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use crate::dnstap::setup::DnstapConfig;
use crate::metrics::Metrics;

/// One `dnstap` directive's end of the queue.
struct Tap {
    full: bool,
    queue: Arc<queue::Queue>,
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

impl Drop for Taps {
    /// The writers end (STOP, FINISH) once they have written what is queued.
    fn drop(&mut self) {
        for tap in &self.taps {
            tap.queue.close();
        }
    }
}

impl Taps {
    /// Starts a writer task per directive; `None` when there is none. Must
    /// be called inside the runtime. The writers end when the last holder
    /// of the returned `Taps` drops it (a reload).
    pub fn start(configs: &[DnstapConfig], metrics: &Arc<Metrics>) -> Option<Arc<Taps>> {
        if configs.is_empty() {
            return None;
        }
        let taps: Vec<Tap> = configs
            .iter()
            .map(|cfg| {
                // Each slot may hold the whole queue: a burst on one worker
                // is not dropped for want of the others' room.
                let queue = Arc::new(queue::Queue::new(cfg.queue_len().div_ceil(2)));
                if cfg.listen.is_some() {
                    tokio::spawn(listen::run(cfg.clone(), queue.clone(), metrics.clone()));
                } else {
                    tokio::spawn(sink::run(cfg.clone(), queue.clone(), metrics.clone()));
                }
                Tap { full: cfg.full, queue }
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
        let mut r = Record::new(Side::Client, peer, tcp, started);
        r.answered = Some(Instant::now());
        self.offer(r, query, reply);
    }

    /// One exchange with `upstream` from our socket `local` (when known)
    /// that started at `started`: `reply` encodes its answer (called with
    /// `full` only), `None` when none came.
    pub fn forwarded(
        &self,
        upstream: SocketAddr,
        local: Option<SocketAddr>,
        tcp: bool,
        query: &[u8],
        reply: Option<&dyn Fn() -> Vec<u8>>,
        started: Instant,
    ) {
        let mut r = Record::new(Side::Forwarder, upstream, tcp, started);
        r.local = local;
        r.answered = reply.map(|_| Instant::now());
        let encoded = reply.filter(|_| self.full).map(|r| r()).unwrap_or_default();
        self.offer(r, query, &encoded);
    }

    /// Queues `r` for every tap (with the wire messages for a tap with
    /// `full`), counting what a full queue refuses.
    fn offer(&self, r: Record, query: &[u8], reply: &[u8]) {
        for tap in &self.taps {
            let pushed = if tap.full {
                tap.queue.push(r, query, reply)
            } else {
                tap.queue.push(r, &[], &[])
            };
            if !pushed {
                self.metrics.dnstap.dropped.fetch_add(r.messages(), Relaxed);
            }
        }
    }
}
