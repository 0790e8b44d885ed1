//! Every metric name, label and bucket in one file.
//!
//! CoreDNS's names, labels and buckets exactly (`coredns_dns_*` per server
//! block zone, `coredns_cache_*`, `coredns_proxy_*`, ...), and ours as
//! `clusterdns_*`. Every series is a plain atomic in an array registered
//! when the configuration is built ([`ZoneStats`] per server and zone): a
//! query indexes arrays by enum, never looks a label up, and adds to a
//! per-thread stripe so workers do not fight over cache lines. The
//! Prometheus text is rendered here, at scrape time.
//!
//! (DESIGN.md names the `metrics` crate with its Prometheus exporter; its
//! histograms keep every observation until the next scrape, which at
//! 200,000 queries per second is memory that grows with the scrape
//! interval. Fixed bucket arrays cost the same per query and nothing more.)

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

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

/// Why a watcher resumed its watch or relisted (`reason` label), in
/// `watch::follow::Reason` order.
pub const RESTART_REASONS: [&str; 6] = ["start", "watch_ended", "expired", "stalled", "error", "resync"];
/// The reasons a resume can have (a relist: the others, and `error`).
const RESUME_REASONS: [bool; 6] = [false, true, false, true, true, false];

/// The watch path's numbers, per kind (indexed as [`KINDS`]).
#[derive(Default)]
pub struct Watch {
    pub invalid: [AtomicU64; 4],
    /// Watches resumed from the last resourceVersion, by reason.
    pub resumes: [[AtomicU64; 6]; 4],
    /// Full lists, by reason.
    pub relists_by: [[AtomicU64; 6]; 4],
    /// Objects a `resync` relist found different from what was served.
    pub resync_corrections: [AtomicU64; 4],
    /// Unix ms when the state served from the `persist` file was written,
    /// while no list has confirmed it yet (0: nothing unconfirmed).
    pub unconfirmed_written_ms: AtomicU64,
    /// State file writes that failed.
    pub persist_failures: AtomicU64,
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

    /// `clusterdns_kubernetes_watch_restarts_total{kind,action,reason}`.
    fn render_restarts(&self, s: &mut String) {
        let name = "clusterdns_kubernetes_watch_restarts_total";
        let help = "Watches resumed (action=resume) and full lists (action=relist), by kind and reason.";
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter");
        for (k, kind) in KINDS.iter().enumerate() {
            for (action, counts) in [("resume", &self.resumes[k]), ("relist", &self.relists_by[k])] {
                for (r, reason) in RESTART_REASONS.iter().enumerate() {
                    let resume_only = RESUME_REASONS[r] && RESTART_REASONS[r] != "error";
                    if (action == "resume" && !RESUME_REASONS[r]) || (action == "relist" && resume_only) {
                        continue;
                    }
                    let n = counts[r].load(Relaxed);
                    let _ = writeln!(
                        s,
                        "{name}{{kind=\"{kind}\",action=\"{action}\",reason=\"{reason}\"}} {n}"
                    );
                }
            }
        }
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
        self.render_restarts(s);
        family(
            s,
            "clusterdns_kubernetes_resync_corrections_total",
            "counter",
            "Objects a periodic relist (resync) found different from what was served, and corrected.",
            "kind",
            by_kind(&self.resync_corrections),
        );
        let written = self.unconfirmed_written_ms.load(Relaxed);
        let age = if written == 0 {
            0.0
        } else {
            now_ms().saturating_sub(written) as f64 / 1000.0
        };
        let help = "Age in seconds of the state served from the persist file while the API has not confirmed it (0: confirmed, or none).";
        family(
            s,
            "clusterdns_kubernetes_unconfirmed_state_age_seconds",
            "gauge",
            help,
            "",
            [("", age)],
        );
        let help = "1 while the served state comes from the persist file and no full list has confirmed it.";
        let unconfirmed = [("", u8::from(written != 0))];
        family(
            s,
            "clusterdns_kubernetes_state_unconfirmed",
            "gauge",
            help,
            "",
            unconfirmed,
        );
        let help = "Writes of the persist file that failed.";
        let failures = [("", self.persist_failures.load(Relaxed))];
        family(
            s,
            "clusterdns_kubernetes_persist_failures_total",
            "counter",
            help,
            "",
            failures,
        );
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

/// Why a TCP connection ended (`clusterdns_tcp_closed_total{reason}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpClose {
    /// The client closed it (or reset it).
    Client,
    /// No query within the idle timeout.
    Idle,
    /// A query did not arrive whole within the read timeout.
    Read,
    /// The client did not take its replies within the write timeout.
    Write,
    /// Closed for a new connection at the connection cap (idle longest).
    Evicted,
    /// Server shutdown or reload.
    Shutdown,
}

impl TcpClose {
    pub const ALL: [TcpClose; 6] = [
        TcpClose::Client,
        TcpClose::Idle,
        TcpClose::Read,
        TcpClose::Write,
        TcpClose::Evicted,
        TcpClose::Shutdown,
    ];

    fn label(self) -> &'static str {
        match self {
            TcpClose::Client => "client",
            TcpClose::Idle => "idle_timeout",
            TcpClose::Read => "read_timeout",
            TcpClose::Write => "write_timeout",
            TcpClose::Evicted => "evicted",
            TcpClose::Shutdown => "shutdown",
        }
    }
}

/// TCP connection counts.
#[derive(Default)]
pub struct Tcp {
    /// Open now.
    pub open: AtomicU64,
    closed: [AtomicU64; 6],
    /// Refused at the cap with no idle connection to close.
    rejected: AtomicU64,
}

impl Tcp {
    pub fn closed(&self, why: TcpClose) {
        self.closed[why as usize].fetch_add(1, Relaxed);
    }

    fn closed_count(&self, why: TcpClose) -> u64 {
        self.closed[why as usize].load(Relaxed)
    }

    /// A connection refused because the cap was reached and none was idle.
    pub fn rejected(&self) {
        self.rejected.fetch_add(1, Relaxed);
    }

    fn render(&self, s: &mut String) {
        family(
            s,
            "clusterdns_tcp_connections",
            "gauge",
            "Open TCP client connections.",
            "",
            [("", self.open.load(Relaxed))],
        );
        family(
            s,
            "clusterdns_tcp_closed_total",
            "counter",
            "TCP client connections closed, by reason.",
            "reason",
            TcpClose::ALL.map(|why| (why.label(), self.closed_count(why))),
        );
        family(
            s,
            "clusterdns_tcp_rejected_total",
            "counter",
            "TCP connections refused at the connection cap (no idle connection to close).",
            "",
            [("", self.rejected.load(Relaxed))],
        );
    }
}

/// Process-wide counters.
#[derive(Default)]
pub struct Metrics {
    /// Per server block zone (`coredns_dns_*`).
    pub registry: Registry,
    dropped: [AtomicU64; 2],
    pub tcp: Tcp,
    /// Forwarded queries dropped because the in-flight cap was reached.
    pub overload_dropped: AtomicU64,
    /// UDP queries dropped because they waited in the receive queue too long.
    pub udp_late_dropped: AtomicU64,
    /// Panics caught at a task or worker boundary.
    pub panics: AtomicU64,
    /// Corefile reloads that failed (the old configuration kept running).
    pub reload_failed: AtomicU64,
    /// Queries handed to tasks and not answered yet.
    pub in_flight: AtomicU64,
    /// `coredns_autopath_success_total`.
    pub autopath_success: AtomicU64,
    pub health: Health,
    pub clients: Clients,
    /// UDP ports we listen on (for kernel drop counts from /proc/net/udp).
    pub udp_ports: Mutex<Vec<u16>>,
    /// `clusterdns doctor` findings at start-up: `(check, severity)`.
    pub doctor: Mutex<Vec<(&'static str, &'static str)>>,
    pub watch: Watch,
    pub nodelocal: NodeLocal,
}

/// `errortype` values of node-cache's `coredns_nodecache_setup_errors_total`.
pub const NODECACHE_ERRORS: [&str; 5] = [
    "iptables",
    "iptables_lock",
    "interface_add",
    "interface_check",
    "configmap",
];
/// `what` values of `clusterdns_nodelocal_restored_total`.
pub const RESTORED: [&str; 3] = ["rule", "address", "interface"];

/// A counter family by one label: name, help, label, values, counters.
type Labelled<'a> = (&'a str, &'a str, &'a str, &'a [&'a str], &'a [AtomicU64]);

/// The `nodelocal` directive's counters (rendered only when it runs).
#[derive(Default)]
pub struct NodeLocal {
    pub enabled: std::sync::atomic::AtomicBool,
    pub setup_errors: [AtomicU64; 5],
    pub restored: [AtomicU64; 3],
}

impl NodeLocal {
    fn render(&self, s: &mut String) {
        if !self.enabled.load(Relaxed) {
            return;
        }
        let families: [Labelled<'_>; 2] = [
            (
                "coredns_nodecache_setup_errors_total",
                "The number of errors during periodic network setup for node-cache",
                "errortype",
                &NODECACHE_ERRORS,
                &self.setup_errors,
            ),
            (
                "clusterdns_nodelocal_restored_total",
                "Node-local rules, addresses and interfaces found missing by the periodic check and restored.",
                "what",
                &RESTORED,
                &self.restored,
            ),
        ];
        for (name, help, label, names, counters) in families {
            let series = names.iter().zip(counters).map(|(n, c)| (*n, c.load(Relaxed)));
            family(s, name, "counter", help, label, series);
        }
    }
}

/// `coredns_health_*`: the time to answer each `/health` request.
#[derive(Default)]
pub struct Health {
    duration: Hist<5>,
    pub failures: AtomicU64,
}

impl Health {
    pub fn observe(&self, nanos: u64) {
        let slot = (0..5)
            .find(|k| nanos as f64 <= 0.00025 * 10f64.powi(*k as i32) * 1e9)
            .unwrap_or(5);
        self.duration.add(slot, nanos, false);
    }
}

/// Requests by client namespace (client IP → pod → namespace, when pods
/// are watched). At most [`Clients::MAX`] namespaces get their own series;
/// the rest count as `other`, clients without a known pod as `unknown`.
#[derive(Default)]
pub struct Clients {
    named: std::sync::RwLock<Vec<(Arc<str>, AtomicU64)>>,
    other: AtomicU64,
}

impl Clients {
    pub const MAX: usize = 256;

    /// Counts a request from a client in `ns` (clients without a known
    /// pod are not counted here: `unknown` is the rest of all requests).
    pub fn count(&self, ns: &Arc<str>) {
        if let Ok(named) = self.named.read() {
            if let Some((_, n)) = named.iter().find(|(k, _)| Arc::ptr_eq(k, ns) || **k == **ns) {
                n.fetch_add(1, Relaxed);
                return;
            }
            if named.len() >= Self::MAX {
                self.other.fetch_add(1, Relaxed);
                return;
            }
        }
        if let Ok(mut named) = self.named.write() {
            match named.iter().find(|(k, _)| **k == **ns) {
                Some((_, n)) => n.fetch_add(1, Relaxed),
                None if named.len() < Self::MAX => {
                    named.push((ns.clone(), AtomicU64::new(1)));
                    0
                }
                None => self.other.fetch_add(1, Relaxed),
            };
        }
    }

    fn render(&self, s: &mut String, all_requests: u64) {
        head(
            s,
            "clusterdns_client_requests_total",
            "counter",
            "Requests by client namespace (from the client IP's pod; unknown without pods verified).",
        );
        let mut known = self.other.load(Relaxed);
        if let Ok(named) = self.named.read() {
            for (ns, n) in named.iter() {
                let n = n.load(Relaxed);
                known += n;
                let _ = writeln!(s, "clusterdns_client_requests_total{{namespace=\"{ns}\"}} {n}");
            }
        }
        let _ = writeln!(
            s,
            "clusterdns_client_requests_total{{namespace=\"other\"}} {}",
            self.other.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "clusterdns_client_requests_total{{namespace=\"unknown\"}} {}",
            all_requests.saturating_sub(known)
        );
    }
}

fn idx(t: Transport) -> usize {
    t as usize
}

impl Metrics {
    pub fn dropped(&self, t: Transport) {
        self.dropped[idx(t)].fetch_add(1, Relaxed);
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self, synced: bool) -> String {
        let mut s = String::new();
        self.registry.render(&mut s);
        let by_proto = |values: &[AtomicU64; 2]| {
            [Transport::Udp, Transport::Tcp].map(|t| (t.label(), values[idx(t)].load(Relaxed)))
        };
        let help = "Packets dropped without a reply (not a query, too short).";
        family(
            &mut s,
            "clusterdns_dropped_total",
            "counter",
            help,
            "proto",
            by_proto(&self.dropped),
        );
        self.tcp.render(&mut s);
        family(
            &mut s,
            "clusterdns_overload_dropped_total",
            "counter",
            "Queries dropped unanswered because the cap on forwarded queries in flight was reached.",
            "",
            [("", self.overload_dropped.load(Relaxed))],
        );
        family(
            &mut s,
            "clusterdns_udp_late_dropped_total",
            "counter",
            "UDP queries dropped unanswered because they waited in the receive queue longer than a client waits (over 1 s).",
            "",
            [("", self.udp_late_dropped.load(Relaxed))],
        );
        let help = "Queries being forwarded (handed to a task, not answered yet).";
        family(
            &mut s,
            "clusterdns_requests_in_flight",
            "gauge",
            help,
            "",
            [("", self.in_flight.load(Relaxed))],
        );
        let ports = self.udp_ports.lock().map(|p| p.clone()).unwrap_or_default();
        let help = "Datagrams the kernel dropped on our UDP sockets (full receive buffers), from /proc/net/udp.";
        family(
            &mut s,
            "clusterdns_udp_kernel_drops",
            "gauge",
            help,
            "",
            [("", udp_drops(&ports))],
        );
        self.clients.render(&mut s, self.registry.requests());
        head(
            &mut s,
            "clusterdns_doctor_findings",
            "gauge",
            "Settings that break cluster DNS found at start-up (clusterdns doctor), by check and severity.",
        );
        for (check, severity) in self.doctor.lock().map(|d| d.clone()).unwrap_or_default() {
            let _ = writeln!(
                s,
                "clusterdns_doctor_findings{{check=\"{check}\",severity=\"{severity}\"}} 1"
            );
        }
        let help = "Query log lines dropped because the log queue was full.";
        family(
            &mut s,
            "clusterdns_log_dropped_total",
            "counter",
            help,
            "",
            [("", crate::query::log::dropped())],
        );
        let (kept, dropped) = crate::query::memo::revalidations();
        let help = "Memoized replies checked after a store change: kept (nothing they depend on changed) or dropped.";
        family(
            &mut s,
            "clusterdns_memo_revalidations_total",
            "counter",
            help,
            "result",
            [("kept", kept), ("dropped", dropped)],
        );
        let help = "A metric that counts panics.";
        family(
            &mut s,
            "coredns_panics_total",
            "counter",
            help,
            "",
            [("", self.panics.load(Relaxed))],
        );
        let help = "The number of queries under .localhost. (or localhost.<domain>) seen by the local plugin.";
        family(
            &mut s,
            "coredns_local_localhost_requests_total",
            "counter",
            help,
            "",
            [("", crate::query::localhost::localhost_requests())],
        );
        let help = "Counter of requests made with autopath that were successful.";
        family(
            &mut s,
            "coredns_autopath_success_total",
            "counter",
            help,
            "",
            [("", self.autopath_success.load(Relaxed))],
        );
        head(
            &mut s,
            "coredns_health_request_duration_seconds",
            "histogram",
            "Histogram of the time (in seconds) each request took.",
        );
        let bounds: Vec<f64> = (0..5).map(|k| 0.00025 * 10f64.powi(k)).collect();
        let counts: Vec<u64> = self.health.duration.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let sum = self.health.duration.sum.load(Relaxed) as f64 / 1e9;
        histogram(
            &mut s,
            "coredns_health_request_duration_seconds",
            "",
            &bounds,
            &counts,
            self.health.duration.over.load(Relaxed),
            sum,
        );
        let help = "The number of times the health check failed.";
        family(
            &mut s,
            "coredns_health_request_failures_total",
            "counter",
            help,
            "",
            [("", self.health.failures.load(Relaxed))],
        );
        let help = "Counter of the number of failed reload attempts.";
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
        self.nodelocal.render(&mut s);
        process(&mut s);
        head(&mut s, "coredns_build_info", "gauge", "A metric with a constant '1' value labeled by version, revision, and goversion from which CoreDNS was built.");
        let _ = writeln!(
            s,
            "coredns_build_info{{version=\"{}\",revision=\"\",goversion=\"none\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        s
    }
}

/// Sums the `drops` column of /proc/net/udp{,6} for sockets on `ports`.
fn udp_drops(ports: &[u16]) -> u64 {
    let mut total = 0;
    for file in ["/proc/net/udp", "/proc/net/udp6"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = f
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if port.is_some_and(|p| ports.contains(&p)) {
                total += f.last().and_then(|d| d.parse::<u64>().ok()).unwrap_or(0);
            }
        }
    }
    total
}

/// `process_*` from /proc/self, as Prometheus client libraries export them.
fn process(s: &mut String) {
    const TICKS: f64 = 100.0; // USER_HZ on Linux
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // fields after the command name (which may contain spaces)
    let rest: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, r)| r.split_whitespace().collect());
    let field = |i: usize| rest.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let cpu = (field(11) + field(12)) / TICKS;
    let boot = std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    let start = boot + field(19) / TICKS;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
            * 1024.0
    };
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3)?.parse::<f64>().ok())
        .unwrap_or(0.0);
    for (name, kind, help, value) in [
        (
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            cpu,
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            kb("VmRSS:"),
        ),
        (
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
            kb("VmSize:"),
        ),
        (
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            fds as f64,
        ),
        (
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
            max_fds,
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
            start,
        ),
    ] {
        family(s, name, kind, help, "", [("", value)]);
    }
}

/// Which plugin wrote a response (`plugin` label of `coredns_dns_responses_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Plugin {
    /// Written by the server itself (header errors, no zone, no plugin).
    #[default]
    None,
    Kubernetes,
    Forward,
    Cache,
    Hosts,
    File,
    Autopath,
    Dns64,
    K8sExternal,
    Template,
    Chaos,
    Local,
}

const PLUGINS: [&str; 12] = [
    "",
    "kubernetes",
    "forward",
    "cache",
    "hosts",
    "file",
    "autopath",
    "dns64",
    "k8s_external",
    "template",
    "chaos",
    "local",
];

/// Query types CoreDNS reports by name; the rest are `other`.
const TYPES: [RecordType; 18] = [
    RecordType::A,
    RecordType::AAAA,
    RecordType::CNAME,
    RecordType::DNSKEY,
    RecordType::DS,
    RecordType::MX,
    RecordType::NSEC,
    RecordType::NSEC3,
    RecordType::NS,
    RecordType::PTR,
    RecordType::RRSIG,
    RecordType::SOA,
    RecordType::SRV,
    RecordType::TXT,
    RecordType::HTTPS,
    RecordType::IXFR,
    RecordType::AXFR,
    RecordType::ANY,
];

/// The `type` label slot of `qtype`.
pub fn type_slot(qtype: RecordType) -> u8 {
    TYPES.iter().position(|t| *t == qtype).unwrap_or(TYPES.len()) as u8
}

fn type_name(slot: usize) -> String {
    TYPES.get(slot).map_or("other".to_string(), ToString::to_string)
}

/// CoreDNS's request-duration buckets: 0.25 ms · 2^k, k = 0..15.
const DURATION_BUCKETS: usize = 16;
/// CoreDNS's size buckets (bytes).
const SIZES: [f64; 14] = [
    0.0, 100.0, 200.0, 300.0, 400.0, 511.0, 1023.0, 2047.0, 4095.0, 8291.0, 16e3, 32e3, 48e3, 64e3,
];

fn duration_bound(k: usize) -> f64 {
    0.00025 * f64::from(1u32 << k)
}

/// A histogram with fixed bounds; buckets hold counts per bucket (made
/// cumulative when rendered), the last one is +Inf.
#[derive(Debug)]
struct Hist<const N: usize> {
    buckets: [AtomicU64; N],
    over: AtomicU64,
    /// Nanoseconds or bytes.
    sum: AtomicU64,
}

impl<const N: usize> Default for Hist<N> {
    fn default() -> Self {
        Hist {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            over: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Hist<N> {
    fn add(&self, slot: usize, sum: u64, owned: bool) {
        bump(self.buckets.get(slot).unwrap_or(&self.over), 1, owned);
        bump(&self.sum, sum, owned);
    }
}

/// The smallest k with `nanos` ≤ 0.25 ms · 2^k (integer arithmetic).
fn duration_slot(nanos: u64) -> usize {
    let quarters = nanos.div_ceil(250_000);
    if quarters <= 1 {
        0
    } else {
        (64 - (quarters - 1).leading_zeros()) as usize
    }
}

fn size_slot(bytes: usize) -> usize {
    SIZES.partition_point(|b| *b < bytes as f64)
}

/// One stripe of a zone's counters.
#[derive(Default, Debug)]
struct Stripe {
    /// `[proto][family][type]`.
    requests: [[[AtomicU64; TYPES.len() + 1]; 2]; 2],
    /// `[plugin][rcode]`.
    responses: [[AtomicU64; OTHER + 1]; PLUGINS.len()],
    duration: Hist<DURATION_BUCKETS>,
    request_size: [Hist<{ SIZES.len() }>; 2],
    response_size: [Hist<{ SIZES.len() }>; 2],
    do_requests: AtomicU64,
    truncated: [AtomicU64; 2],
    /// Search-path expansions answered NXDOMAIN, by [`Expansion`].
    expansions: [AtomicU64; 3],
    nxdomain: AtomicU64,
    /// Padding: stripes of different threads never share a cache line.
    _pad: [u64; 8],
}

/// Stripes owned by one thread each; threads beyond them share the last
/// one.
const OWNED_STRIPES: usize = 64;
const STRIPES: usize = OWNED_STRIPES + 1;

thread_local! {
    /// This thread's stripe, and whether it is the only writer of it.
    static STRIPE: (usize, bool) = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let i = NEXT.fetch_add(1, Relaxed);
        if i < OWNED_STRIPES { (i, true) } else { (OWNED_STRIPES, false) }
    };
}

/// Adds `n`: a plain load and store when this thread is the counter's
/// only writer (no locked instruction), else an atomic add.
#[inline]
fn bump(counter: &AtomicU64, n: u64, owned: bool) {
    if owned {
        counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
    } else {
        counter.fetch_add(n, Relaxed);
    }
}

/// The kind of search-path expansion a query was: an outside name with
/// one of the kubelet's search suffixes appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Expansion {
    /// `<name>.<ns>.svc.<zone>`
    Namespace,
    /// `<name>.svc.<zone>`
    Svc,
    /// `<name>.<zone>`
    Zone,
}

const EXPANSIONS: [&str; 3] = ["namespace", "svc", "zone"];

/// What one answered query reports.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    pub transport: Transport,
    pub ipv6: bool,
    pub qtype: u8,
    pub dnssec_ok: bool,
    pub request_size: usize,
    pub response_size: usize,
    pub rcode: ResponseCode,
    pub plugin: Plugin,
    pub truncated: bool,
    pub expansion: Option<Expansion>,
    pub nanos: u64,
}

/// The `coredns_dns_*` series of one server and zone.
#[derive(Debug)]
pub struct ZoneStats {
    pub server: String,
    pub zone: String,
    stripes: Box<[Stripe]>,
}

impl ZoneStats {
    fn new(server: &str, zone: &str) -> ZoneStats {
        ZoneStats {
            server: server.to_string(),
            zone: zone.to_string(),
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }

    /// Counts one answered query.
    pub fn record(&self, q: &Served) {
        let (stripe, owned) = STRIPE.with(|i| *i);
        let s = &self.stripes[stripe];
        let (proto, family) = (q.transport as usize, usize::from(q.ipv6));
        bump(
            &s.requests[proto][family][usize::from(q.qtype).min(TYPES.len())],
            1,
            owned,
        );
        let slot = RCODES.iter().position(|r| *r == q.rcode).unwrap_or(OTHER);
        bump(&s.responses[q.plugin as usize][slot], 1, owned);
        s.duration.add(duration_slot(q.nanos), q.nanos, owned);
        s.request_size[proto].add(size_slot(q.request_size), q.request_size as u64, owned);
        s.response_size[proto].add(size_slot(q.response_size), q.response_size as u64, owned);
        if q.dnssec_ok {
            bump(&s.do_requests, 1, owned);
        }
        if q.truncated {
            bump(&s.truncated[proto], 1, owned);
        }
        if q.rcode == ResponseCode::NXDomain {
            bump(&s.nxdomain, 1, owned);
            if let Some(e) = q.expansion {
                bump(&s.expansions[e as usize], 1, owned);
            }
        }
    }

    fn sum(&self, f: impl Fn(&Stripe) -> &AtomicU64) -> u64 {
        self.stripes.iter().map(|s| f(s).load(Relaxed)).sum()
    }

    fn labels(&self) -> String {
        format!("server=\"{}\",zone=\"{}\",view=\"\"", self.server, self.zone)
    }
}

/// Writes a histogram's series: cumulative buckets, sum, count.
fn histogram(s: &mut String, name: &str, labels: &str, bounds: &[f64], counts: &[u64], over: u64, sum: f64) {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut cumulative = 0;
    for (bound, n) in bounds.iter().zip(counts) {
        cumulative += n;
        let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
    }
    cumulative += over;
    let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cumulative}");
    if labels.is_empty() {
        let _ = writeln!(s, "{name}_sum {sum}\n{name}_count {cumulative}");
    } else {
        let _ = writeln!(s, "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {cumulative}");
    }
}

/// A histogram with CoreDNS's request-duration buckets, for use outside
/// this file (`coredns_proxy_request_duration_seconds`).
#[derive(Debug, Default)]
pub struct Durations(Hist<DURATION_BUCKETS>);

impl Durations {
    pub fn observe(&self, nanos: u64) {
        self.0.add(duration_slot(nanos), nanos, false);
    }

    fn total(&self) -> u64 {
        self.0.buckets.iter().map(|b| b.load(Relaxed)).sum::<u64>() + self.0.over.load(Relaxed)
    }

    /// Writes its series under `name{labels}`, if it has any observation.
    pub fn render(&self, s: &mut String, name: &str, labels: &str) {
        if self.total() == 0 {
            return;
        }
        let bounds: Vec<f64> = (0..DURATION_BUCKETS).map(duration_bound).collect();
        let counts: Vec<u64> = self.0.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let sum = self.0.sum.load(Relaxed) as f64 / 1e9;
        histogram(s, name, labels, &bounds, &counts, self.0.over.load(Relaxed), sum);
    }
}

/// The rcode slot of `rcode` and the names of the slots.
pub fn rcode_slot(rcode: ResponseCode) -> usize {
    RCODES.iter().position(|r| *r == rcode).unwrap_or(OTHER)
}

pub const RCODE_LABELS: [&str; 7] = RCODE_NAMES;

pub fn head(s: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Every server block zone's stats, kept across reloads so counters stay
/// monotonic, and the plugins each block enables.
#[derive(Default)]
pub struct Registry {
    zones: Mutex<Vec<Arc<ZoneStats>>>,
    plugins: Mutex<Vec<(String, String, &'static str)>>,
}

impl Registry {
    /// The stats of `server`/`zone`, created on first use.
    pub fn zone(&self, server: &str, zone: &str) -> Arc<ZoneStats> {
        let Ok(mut zones) = self.zones.lock() else {
            return Arc::new(ZoneStats::new(server, zone));
        };
        if let Some(z) = zones.iter().find(|z| z.server == server && z.zone == zone) {
            return z.clone();
        }
        let z = Arc::new(ZoneStats::new(server, zone));
        zones.push(z.clone());
        z
    }

    /// All requests counted, every zone.
    fn requests(&self) -> u64 {
        let zones = self.zones.lock().map(|z| z.clone()).unwrap_or_default();
        zones
            .iter()
            .map(|z| {
                z.stripes
                    .iter()
                    .flat_map(|s| s.requests.iter().flatten().flatten())
                    .map(|a| a.load(Relaxed))
                    .sum::<u64>()
            })
            .sum()
    }

    /// Replaces the `coredns_plugin_enabled` set (at start and reload).
    pub fn set_plugins(&self, enabled: Vec<(String, String, &'static str)>) {
        if let Ok(mut p) = self.plugins.lock() {
            *p = enabled;
        }
    }

    fn render(&self, s: &mut String) {
        let zones = self.zones.lock().map(|z| z.clone()).unwrap_or_default();
        head(
            s,
            "coredns_dns_requests_total",
            "counter",
            "Counter of DNS requests made per zone, protocol and family.",
        );
        for z in &zones {
            for (p, proto) in ["udp", "tcp"].iter().enumerate() {
                for (f, family) in ["1", "2"].iter().enumerate() {
                    for t in 0..=TYPES.len() {
                        let n = z.sum(|s| &s.requests[p][f][t]);
                        if n > 0 {
                            let _ = writeln!(
                                s,
                                "coredns_dns_requests_total{{{},proto=\"{proto}\",family=\"{family}\",type=\"{}\"}} {n}",
                                z.labels(),
                                type_name(t)
                            );
                        }
                    }
                }
            }
        }
        head(
            s,
            "coredns_dns_responses_total",
            "counter",
            "Counter of response status codes.",
        );
        for z in &zones {
            for (p, plugin) in PLUGINS.iter().enumerate() {
                for (r, rcode) in RCODE_NAMES.iter().enumerate() {
                    let n = z.sum(|s| &s.responses[p][r]);
                    if n > 0 {
                        let _ = writeln!(
                            s,
                            "coredns_dns_responses_total{{{},rcode=\"{rcode}\",plugin=\"{plugin}\"}} {n}",
                            z.labels()
                        );
                    }
                }
            }
        }
        head(
            s,
            "coredns_dns_request_duration_seconds",
            "histogram",
            "Histogram of the time (in seconds) each request took per zone.",
        );
        let bounds: Vec<f64> = (0..DURATION_BUCKETS).map(duration_bound).collect();
        for z in &zones {
            let counts: Vec<u64> = (0..DURATION_BUCKETS)
                .map(|k| z.sum(|s| &s.duration.buckets[k]))
                .collect();
            let sum = z.sum(|s| &s.duration.sum) as f64 / 1e9;
            histogram(
                s,
                "coredns_dns_request_duration_seconds",
                &z.labels(),
                &bounds,
                &counts,
                z.sum(|s| &s.duration.over),
                sum,
            );
        }
        for (name, help, pick) in [
            (
                "coredns_dns_request_size_bytes",
                "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.",
                (|s: &Stripe, p: usize| &s.request_size[p]) as fn(&Stripe, usize) -> &Hist<{ SIZES.len() }>,
            ),
            (
                "coredns_dns_response_size_bytes",
                "Size of the returned response in bytes.",
                |s, p| &s.response_size[p],
            ),
        ] {
            head(s, name, "histogram", help);
            for z in &zones {
                for (p, proto) in ["udp", "tcp"].iter().enumerate() {
                    let counts: Vec<u64> = (0..SIZES.len()).map(|k| z.sum(|s| &pick(s, p).buckets[k])).collect();
                    let over = z.sum(|s| &pick(s, p).over);
                    let sum = z.sum(|s| &pick(s, p).sum) as f64;
                    histogram(
                        s,
                        name,
                        &format!("{},proto=\"{proto}\"", z.labels()),
                        &SIZES,
                        &counts,
                        over,
                        sum,
                    );
                }
            }
        }
        head(
            s,
            "coredns_dns_do_requests_total",
            "counter",
            "Counter of DNS requests with DO bit set per zone.",
        );
        for z in &zones {
            let _ = writeln!(
                s,
                "coredns_dns_do_requests_total{{{}}} {}",
                z.labels(),
                z.sum(|s| &s.do_requests)
            );
        }
        head(
            s,
            "coredns_plugin_enabled",
            "gauge",
            "A metric that indicates whether a plugin is enabled on per server and zone basis.",
        );
        for (server, zone, name) in self.plugins.lock().map(|p| p.clone()).unwrap_or_default() {
            let _ = writeln!(
                s,
                "coredns_plugin_enabled{{server=\"{server}\",zone=\"{zone}\",view=\"\",name=\"{name}\"}} 1"
            );
        }
        head(
            s,
            "clusterdns_truncated_responses_total",
            "counter",
            "Responses sent with TC set, by server, zone and transport.",
        );
        for z in &zones {
            for (p, proto) in ["udp", "tcp"].iter().enumerate() {
                let _ = writeln!(
                    s,
                    "clusterdns_truncated_responses_total{{{},proto=\"{proto}\"}} {}",
                    z.labels(),
                    z.sum(|s| &s.truncated[p])
                );
            }
        }
        head(
            s,
            "clusterdns_search_expansion_nxdomain_total",
            "counter",
            "NXDOMAIN answers to search-path expansions (an outside name with a search suffix appended), by suffix.",
        );
        for z in &zones {
            for (e, suffix) in EXPANSIONS.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "clusterdns_search_expansion_nxdomain_total{{{},suffix=\"{suffix}\"}} {}",
                    z.labels(),
                    z.sum(|s| &s.expansions[e])
                );
            }
        }
        head(
            s,
            "clusterdns_nxdomain_total",
            "counter",
            "NXDOMAIN answers, all causes (the denominator of the search-expansion share).",
        );
        for z in &zones {
            let _ = writeln!(
                s,
                "clusterdns_nxdomain_total{{{}}} {}",
                z.labels(),
                z.sum(|s| &s.nxdomain)
            );
        }
    }
}
