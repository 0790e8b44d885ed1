//! A block's tracer on the query path: the sampling count, the spans of
//! a sampled query built and offered to the reporter's bounded queue.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hickory_proto::op::{Message, ResponseCode};
use tokio::sync::mpsc;

use super::config::{Kind, TraceConfig};
use super::counters::Counters;
use super::report;
use super::span::{self, QueryTags, Recorded};
use crate::metrics::{rcode_name, Plugin};

/// A block's tracer: the sampling count and the queue to its reporter.
#[derive(Debug)]
pub struct Tracer {
    pub cfg: Arc<TraceConfig>,
    count: AtomicU64,
    queue: Option<mpsc::Sender<Recorded>>,
    pub counters: Arc<Counters>,
}

impl Tracer {
    /// Starts the reporter task in the current runtime (none: spans are
    /// counted as dropped, as in the fuzzer and unit tests).
    pub fn start(cfg: Arc<TraceConfig>, counters: Arc<Counters>) -> Tracer {
        let queue = tokio::runtime::Handle::try_current().ok().map(|rt| {
            let (tx, rx) = mpsc::channel(cfg.backlog);
            rt.spawn(report::report(rx, cfg.clone(), counters.clone()));
            tx
        });
        Tracer {
            cfg,
            count: AtomicU64::new(0),
            queue,
            counters,
        }
    }

    /// Counts a served query: the id of its trace when it is one of the
    /// `every` traced (CoreDNS counts from 1 and traces when N divides the
    /// count), else `None`.
    pub fn sample(&self) -> Option<u64> {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        (self.cfg.every != 0 && n.is_multiple_of(self.cfg.every)).then(span::new_id)
    }

    /// Trace `id` as the metadata label `trace/traceid` shows it: 16 hex
    /// digits as Zipkin's, 32 as the Datadog tracer's 128-bit ids.
    pub fn label(&self, id: u64) -> String {
        match self.cfg.kind {
            Kind::Zipkin => format!("{id:016x}"),
            Kind::Datadog => format!("{id:032x}"),
        }
    }

    /// Tells the tracer of a served query [`Tracer::sample`] chose as
    /// trace `id`: `request` from `peer` over TCP or not, answered with
    /// `rcode` written by `plugin`, arrived at `started`.
    pub fn served(
        &self,
        id: u64,
        (peer, tcp): (SocketAddr, bool),
        request: &[u8],
        (rcode, plugin): (ResponseCode, Plugin),
        started: Instant,
    ) {
        let Ok(msg) = Message::from_vec(request) else { return };
        let Some(q) = msg.queries.first() else { return };
        let took = started.elapsed();
        let begun = SystemTime::now().checked_sub(took).unwrap_or(UNIX_EPOCH);
        let tags = QueryTags {
            name: q.name().to_string(),
            qtype: q.query_type().to_string(),
            tcp,
            remote: peer.ip(),
            rcode: rcode_name(rcode),
        };
        // the plugins passed: up to the one that answered (all, when none did)
        let label = crate::metrics::catalogue::PLUGINS.get(plugin as usize).copied();
        let passes = &self.cfg.passes;
        let upto = label.and_then(|l| passes.iter().position(|p| *p == l));
        let plugins = passes[..upto.map_or(passes.len(), |i| i + 1)].iter().copied();
        let spans = span::family(id, (begun, took), tags, plugins);
        for span in spans {
            let offered = self.queue.as_ref().is_some_and(|q| q.try_send(span).is_ok());
            if !offered {
                self.counters.dropped_backlog.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
