//! A block's tracer on the query path: the sampling count, the spans of
//! a sampled query built and offered to the reporter's bounded queue.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hickory_proto::op::{Message, ResponseCode};
use tokio::sync::mpsc;

use super::config::TraceConfig;
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
        let tags = QueryTags {
            name: q.name().to_string(),
            qtype: q.query_type().to_string(),
            tcp,
            remote: peer.ip(),
            rcode: rcode_name(rcode),
        };
        let label = crate::metrics::catalogue::PLUGINS.get(plugin as usize).copied();
        let plugins = label.filter(|l| !l.is_empty()).into_iter();
        let spans = span::family(span::new_id(), (begun, took), tags, plugins);
        for span in spans {
            let offered = self.queue.as_ref().is_some_and(|q| q.try_send(span).is_ok());
            if !offered {
                self.counters.dropped_backlog.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
