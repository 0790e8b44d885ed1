//! `trace` (CoreDNS's `plugin/trace` with its Zipkin reporter): one query
//! in `every` of a block becomes a Zipkin span, `servedns` of kind
//! SERVER, tagged as CoreDNS tags it (`coredns.io/name`, `/type`,
//! `/proto`, `/remote`, `/rcode`), with a child span named after the
//! plugin that wrote the answer (`kubernetes`, `forward`, ...) where
//! CoreDNS has one span per plugin the query passed. Spans are sent as
//! Zipkin v2 JSON, batched, to the collector's `/api/v2/spans`.
//!
//! Off the query path: the worker (or the forwarding task) that tells of
//! a served query ([`Tracer::served`], from `settle::record`) counts it,
//! and for a sampled one builds the span and offers it to a bounded queue
//! (`zipkin_max_backlog_size`); a full queue drops the span
//! (`clusterdns_trace_spans_dropped_total{reason="backlog"}`). The
//! reporter task ([`zipkin`]) sends a batch when it holds
//! `zipkin_max_batch_size` spans or `zipkin_max_batch_interval` after its
//! first; a batch the collector does not take is dropped and counted
//! (`reason="send"`). A block without `trace` has no tracer: the router
//! holds none for its zones.

pub mod setup;
pub mod zipkin;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hickory_proto::op::{Message, ResponseCode};
use tokio::sync::mpsc;

use crate::metrics::catalogue::{counter, Family};
use crate::metrics::exposed::Exposed;
use crate::metrics::{rcode_name, Plugin};
use zipkin::Span;

/// What a block's `trace` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceConfig {
    /// The collector's URL (`http://HOST:PORT/api/v2/spans`).
    pub endpoint: String,
    /// One query in `every` is traced (0: none).
    pub every: u64,
    pub service: String,
    /// `client_server`: accepted and printed; a root span shares no
    /// client's span, so it changes nothing in what is sent.
    pub client_server: bool,
    /// Spans waiting to be sent, at most.
    pub backlog: usize,
    pub batch_size: usize,
    pub batch_interval: Duration,
    /// The block's first bound address and port (the spans' local endpoint).
    pub local: Option<SocketAddr>,
}

/// A block's tracer: the sampling count and the queue to its reporter.
#[derive(Debug)]
pub struct Tracer {
    pub cfg: Arc<TraceConfig>,
    count: AtomicU64,
    queue: Option<mpsc::Sender<Span>>,
    pub counters: Arc<Counters>,
}

impl Tracer {
    /// Starts the reporter task in the current runtime (none: spans are
    /// counted as dropped, as in the fuzzer and unit tests).
    pub fn start(cfg: Arc<TraceConfig>, counters: Arc<Counters>) -> Tracer {
        let queue = tokio::runtime::Handle::try_current().ok().map(|rt| {
            let (tx, rx) = mpsc::channel(cfg.backlog);
            rt.spawn(zipkin::report(rx, cfg.clone(), counters.clone()));
            tx
        });
        Tracer {
            cfg,
            count: AtomicU64::new(0),
            queue,
            counters,
        }
    }

    /// Tells the tracer of a served query: `request` from `peer` over TCP
    /// or not, answered with `rcode` written by `plugin`, arrived at
    /// `started`.
    pub fn served(
        &self,
        (peer, tcp): (SocketAddr, bool),
        request: &[u8],
        (rcode, plugin): (ResponseCode, Plugin),
        started: Instant,
    ) {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if self.cfg.every == 0 || !n.is_multiple_of(self.cfg.every) {
            return;
        }
        let Ok(msg) = Message::from_vec(request) else { return };
        let Some(q) = msg.queries.first() else { return };
        let took = started.elapsed();
        let begun = SystemTime::now().checked_sub(took).unwrap_or(UNIX_EPOCH);
        let tags = [
            ("coredns.io/name", q.name().to_string()),
            ("coredns.io/type", q.query_type().to_string()),
            ("coredns.io/proto", if tcp { "tcp" } else { "udp" }.to_string()),
            ("coredns.io/remote", peer.ip().to_string()),
            ("coredns.io/rcode", rcode_name(rcode)),
        ];
        let label = crate::metrics::catalogue::PLUGINS.get(plugin as usize).copied();
        let spans = Span::pair(&self.cfg, (begun, took), tags, label.filter(|l| !l.is_empty()));
        for span in spans {
            let offered = self.queue.as_ref().map(|q| q.try_send(span));
            if !matches!(offered, Some(Ok(()))) {
                self.counters.dropped_backlog.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A block's trace counters, for `/metrics`.
#[derive(Debug)]
pub struct Counters {
    server: String,
    pub sent: AtomicU64,
    pub dropped_backlog: AtomicU64,
    pub dropped_send: AtomicU64,
}

impl Counters {
    pub fn new(server: &str) -> Arc<Counters> {
        Arc::new(Counters {
            server: server.to_string(),
            sent: AtomicU64::new(0),
            dropped_backlog: AtomicU64::new(0),
            dropped_send: AtomicU64::new(0),
        })
    }
}

/// `trace`'s families (clusterdns's own: CoreDNS's reporter exports none).
pub const FAMILIES: [Family; 2] = [
    counter(
        "clusterdns_trace_spans_sent_total",
        "Spans the trace collector accepted.",
        &["server"],
    ),
    counter(
        "clusterdns_trace_spans_dropped_total",
        "Spans dropped: the backlog was full, or the collector did not take their batch.",
        &["server", "reason"],
    ),
];

impl Exposed for Counters {
    fn families(&self) -> &'static [Family] {
        &FAMILIES
    }

    fn series(&self, i: usize, s: &mut String) {
        let (name, server) = (FAMILIES[i].name, &self.server);
        let _ = match i {
            0 => writeln!(s, "{name}{{server=\"{server}\"}} {}", self.sent.load(Ordering::Relaxed)),
            _ => {
                let backlog = self.dropped_backlog.load(Ordering::Relaxed);
                let send = self.dropped_send.load(Ordering::Relaxed);
                writeln!(s, "{name}{{server=\"{server}\",reason=\"backlog\"}} {backlog}")
                    .and_then(|()| writeln!(s, "{name}{{server=\"{server}\",reason=\"send\"}} {send}"))
            }
        };
    }
}
