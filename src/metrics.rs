//! Every metric name, label and value in one file.
//!
//! This release counts requests and responses by transport and rcode with
//! plain atomics (no label lookup per query) and renders the Prometheus
//! text format itself. The full CoreDNS-compatible set (`coredns_dns_*`
//! with CoreDNS's labels and buckets) is tracked in the operability issue;
//! until then everything here is named `clusterdns_*` so no CoreDNS
//! dashboard is fed numbers with the wrong meaning.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hickory_proto::op::ResponseCode;

/// The transport a query arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

impl Transport {
    pub fn label(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }
}

const RCODES: [ResponseCode; 6] = [
    ResponseCode::NoError,
    ResponseCode::FormErr,
    ResponseCode::ServFail,
    ResponseCode::NXDomain,
    ResponseCode::NotImp,
    ResponseCode::Refused,
];
const RCODE_NAMES: [&str; 7] = [
    "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "OTHER",
];
/// Slot for every other rcode (BADVERS, ...).
const OTHER: usize = RCODES.len();

/// An rcode as dig and CoreDNS print it: `NOERROR`, `NXDOMAIN`, ...
pub fn rcode_name(rcode: ResponseCode) -> String {
    match u16::from(rcode) {
        n @ 0..=5 => RCODE_NAMES[usize::from(n)].to_string(),
        16 => "BADVERS".into(),
        n => format!("RCODE{n}"),
    }
}

/// Writes one metric family whose series differ in one label's value
/// (`label` empty: one series without labels).
pub(crate) fn family<'a, V: std::fmt::Display>(
    s: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    label: &str,
    series: impl IntoIterator<Item = (&'a str, V)>,
) {
    let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (value, n) in series {
        if label.is_empty() {
            let _ = writeln!(s, "{name} {n}");
        } else {
            let _ = writeln!(s, "{name}{{{label}=\"{value}\"}} {n}");
        }
    }
}

/// Object kinds of the watch path, in `store::Kind` order.
pub const KINDS: [&str; 4] = ["Namespace", "Service", "EndpointSlice", "Pod"];
/// `service_kind` label values of the programming-latency histogram.
pub const SERVICE_KINDS: [&str; 3] = ["cluster_ip", "headless_with_selector", "headless_without_selector"];
/// CoreDNS's programming-latency buckets: 1 ms · 2^k, k = 0..19.
const PROGRAMMING_BUCKETS: usize = 20;

/// A histogram with CoreDNS's programming-latency buckets.
#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; PROGRAMMING_BUCKETS],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, seconds: f64) {
        for (k, bucket) in self.buckets.iter().enumerate() {
            if seconds <= 0.001 * f64::from(1u32 << k) {
                bucket.fetch_add(1, Relaxed);
            }
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros.fetch_add((seconds.max(0.0) * 1e6) as u64, Relaxed);
    }
}

/// The watch path's numbers, per kind (indexed as [`KINDS`]).
#[derive(Default)]
pub struct Watch {
    pub invalid: [AtomicU64; 4],
    pub relists: [AtomicU64; 4],
    pub errors: [AtomicU64; 4],
    pub objects: [AtomicU64; 4],
    /// Unix time in milliseconds of the last event or bookmark seen.
    pub last_event_ms: [AtomicU64; 4],
    pub programming: [Histogram; 3],
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Watch {
    /// Records that `kind` saw an event now.
    pub fn event(&self, kind: usize) {
        self.last_event_ms[kind].store(now_ms(), Relaxed);
    }

    fn render(&self, s: &mut String) {
        let by_kind = |values: &[AtomicU64; 4]| -> Vec<(&str, u64)> {
            KINDS
                .iter()
                .zip(values.iter())
                .map(|(k, v)| (*k, v.load(Relaxed)))
                .collect()
        };
        let counters = [
            (
                "clusterdns_kubernetes_invalid_objects_total",
                "Objects skipped as malformed.",
                &self.invalid,
            ),
            (
                "clusterdns_kubernetes_relists_total",
                "Full lists started (start-up, 410 Expired, reconnects).",
                &self.relists,
            ),
            (
                "clusterdns_kubernetes_watch_errors_total",
                "Failed lists and watches (each is retried with backoff).",
                &self.errors,
            ),
        ];
        for (name, help, values) in counters {
            family(s, name, "counter", help, "kind", by_kind(values));
        }
        family(
            s,
            "clusterdns_kubernetes_objects",
            "gauge",
            "Objects served, by kind.",
            "kind",
            by_kind(&self.objects),
        );
        let now = now_ms();
        let ages = KINDS.iter().zip(self.last_event_ms.iter()).map(|(kind, v)| {
            let last = v.load(Relaxed);
            (
                *kind,
                if last == 0 {
                    -1.0
                } else {
                    now.saturating_sub(last) as f64 / 1000.0
                },
            )
        });
        let help = "Seconds since the last event, by kind (-1: none yet).";
        family(
            s,
            "clusterdns_kubernetes_last_event_age_seconds",
            "gauge",
            help,
            "kind",
            ages,
        );
        let name = "coredns_kubernetes_dns_programming_duration_seconds";
        let help = "Histogram of the time (in seconds) it took to program a dns instance.";
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (kind, h) in SERVICE_KINDS.iter().zip(self.programming.iter()) {
            for (k, b) in h.buckets.iter().enumerate() {
                let le = 0.001 * f64::from(1u32 << k);
                let _ = writeln!(
                    s,
                    "{name}_bucket{{service_kind=\"{kind}\",le=\"{le}\"}} {}",
                    b.load(Relaxed)
                );
            }
            let count = h.count.load(Relaxed);
            let _ = writeln!(s, "{name}_bucket{{service_kind=\"{kind}\",le=\"+Inf\"}} {count}");
            let _ = writeln!(
                s,
                "{name}_sum{{service_kind=\"{kind}\"}} {}",
                h.sum_micros.load(Relaxed) as f64 / 1e6
            );
            let _ = writeln!(s, "{name}_count{{service_kind=\"{kind}\"}} {count}");
        }
    }
}

/// Process-wide counters.
#[derive(Default)]
pub struct Metrics {
    responses: [[AtomicU64; OTHER + 1]; 2],
    truncated: [AtomicU64; 2],
    dropped: [AtomicU64; 2],
    tcp_rejected: AtomicU64,
    /// Corefile reloads that failed (the old configuration kept running).
    pub reload_failed: AtomicU64,
    pub watch: Watch,
}

fn idx(t: Transport) -> usize {
    t as usize
}

impl Metrics {
    pub fn answered(&self, t: Transport, rcode: ResponseCode, truncated: bool) {
        let slot = RCODES.iter().position(|r| *r == rcode).unwrap_or(OTHER);
        self.responses[idx(t)][slot].fetch_add(1, Relaxed);
        if truncated {
            self.truncated[idx(t)].fetch_add(1, Relaxed);
        }
    }

    pub fn dropped(&self, t: Transport) {
        self.dropped[idx(t)].fetch_add(1, Relaxed);
    }

    /// A TCP connection refused because the connection cap was reached.
    pub fn tcp_rejected(&self) {
        self.tcp_rejected.fetch_add(1, Relaxed);
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self, synced: bool) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# HELP clusterdns_responses_total Responses sent, by transport and rcode."
        );
        let _ = writeln!(s, "# TYPE clusterdns_responses_total counter");
        for t in [Transport::Udp, Transport::Tcp] {
            for (rcode, counter) in RCODE_NAMES.iter().zip(self.responses[idx(t)].iter()) {
                let (proto, n) = (t.label(), counter.load(Relaxed));
                let _ = writeln!(
                    s,
                    "clusterdns_responses_total{{proto=\"{proto}\",rcode=\"{rcode}\"}} {n}"
                );
            }
        }
        let by_proto = |values: &[AtomicU64; 2]| {
            [Transport::Udp, Transport::Tcp].map(|t| (t.label(), values[idx(t)].load(Relaxed)))
        };
        let help = "Responses sent with TC set.";
        family(
            &mut s,
            "clusterdns_truncated_total",
            "counter",
            help,
            "proto",
            by_proto(&self.truncated),
        );
        let help = "Packets dropped without a reply (not a query, too short).";
        family(
            &mut s,
            "clusterdns_dropped_total",
            "counter",
            help,
            "proto",
            by_proto(&self.dropped),
        );
        let help = "TCP connections closed at the connection cap.";
        family(
            &mut s,
            "clusterdns_tcp_rejected_total",
            "counter",
            help,
            "",
            [("", self.tcp_rejected.load(Relaxed))],
        );
        let help = "Corefile reloads that failed; the previous configuration keeps running.";
        family(
            &mut s,
            "coredns_reload_failed_total",
            "counter",
            help,
            "",
            [("", self.reload_failed.load(Relaxed))],
        );
        let help = "Whether every watched kind has been listed once.";
        family(
            &mut s,
            "clusterdns_kubernetes_synced",
            "gauge",
            help,
            "",
            [("", u8::from(synced))],
        );
        self.watch.render(&mut s);
        let _ = writeln!(
            s,
            "# HELP coredns_build_info A metric with a constant '1' value labeled by version, revision, and goversion."
        );
        let _ = writeln!(s, "# TYPE coredns_build_info gauge");
        let _ = writeln!(
            s,
            "coredns_build_info{{version=\"{}\",revision=\"\",goversion=\"none\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        s
    }
}
