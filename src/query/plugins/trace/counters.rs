//! A block's trace counters and their families on `/metrics`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::metrics::catalogue::{counter, Family};
use crate::metrics::exposed::Exposed;

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
