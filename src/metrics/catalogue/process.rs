//! The server process (`Metrics`): drops, TCP, overload, dnstap, health,
//! reload, build info and `process_*`.

use super::family::*;

pub const DROPPED: Family = counter(
    "clusterdns_dropped_total",
    "Packets dropped without a reply (not a query, too short).",
    &["proto"],
);
pub const TCP_CONNECTIONS: Family = gauge("clusterdns_tcp_connections", "Open TCP client connections.", &[]);
pub const TCP_CLOSED: Family = counter(
    "clusterdns_tcp_closed_total",
    "TCP client connections closed, by reason.",
    &["reason"],
);
pub const TCP_REJECTED: Family = counter(
    "clusterdns_tcp_rejected_total",
    "TCP connections refused at the connection cap (no idle connection to close).",
    &[],
);
pub const OVERLOAD_DROPPED: Family = counter(
    "clusterdns_overload_dropped_total",
    "Queries dropped unanswered because the cap on forwarded queries in flight was reached.",
    &[],
);
pub const UDP_LATE_DROPPED: Family = counter(
    "clusterdns_udp_late_dropped_total",
    "UDP queries dropped unanswered because they waited in the receive queue too long: over 1 s (longer than a client waits), or queued before the worker detected overload.",
    &[],
);
pub const IN_FLIGHT: Family = gauge(
    "clusterdns_requests_in_flight",
    "Queries being forwarded (handed to a task, not answered yet).",
    &[],
);
pub const UDP_KERNEL_DROPS: Family = gauge(
    "clusterdns_udp_kernel_drops",
    "Datagrams the kernel dropped on our UDP sockets (full receive buffers), from /proc/net/udp.",
    &[],
);
pub const CLIENT_REQUESTS: Family = counter(
    "clusterdns_client_requests_total",
    "Requests by client namespace (from the client IP's pod; unknown without pods verified).",
    &["namespace"],
);
pub const DOCTOR_FINDINGS: Family = gauge(
    "clusterdns_doctor_findings",
    "Settings that break cluster DNS found at start-up (clusterdns doctor), by check and severity.",
    &["check", "severity"],
);
pub const LOG_DROPPED: Family = counter(
    "clusterdns_log_dropped_total",
    "Query log lines dropped because the log queue was full.",
    &[],
);
pub const MEMO_REVALIDATIONS: Family = counter(
    "clusterdns_memo_revalidations_total",
    "Memoized replies checked after a store change: kept (nothing they depend on changed) or dropped.",
    &["result"],
);
pub const PANICS: Family = counter("coredns_panics_total", "A metric that counts panics.", &[]);
pub const LOCALHOST_REQUESTS: Family = counter(
    "coredns_local_localhost_requests_total",
    "The number of queries under .localhost. (or localhost.<domain>) seen by the local plugin.",
    &[],
);
pub const DNSTAP_DROPPED: Family = counter(
    "coredns_dnstap_dropped_total",
    "Counter of dnstap messages dropped: the queue to the collector was full, or no collector was connected.",
    &[],
);
pub const DNSTAP_SENT: Family = counter(
    "clusterdns_dnstap_sent_total",
    "dnstap messages written to a collector.",
    &[],
);
pub const DNSTAP_CONNECTS: Family = counter(
    "clusterdns_dnstap_connects_total",
    "Frame Streams sessions opened to a dnstap collector (the first, and each reconnect).",
    &[],
);
pub const AUTOPATH_SUCCESS: Family = counter(
    "coredns_autopath_success_total",
    "Counter of requests made with autopath that were successful.",
    &[],
);
pub const HEALTH_DURATION: Family = histogram(
    "coredns_health_request_duration_seconds",
    "Histogram of the time (in seconds) each request took.",
    &[],
);
pub const HEALTH_FAILURES: Family = counter(
    "coredns_health_request_failures_total",
    "The number of times the health check failed.",
    &[],
);
pub const RELOAD_FAILED: Family = counter(
    "coredns_reload_failed_total",
    "Counter of the number of failed reload attempts.",
    &[],
);
pub const SYNCED: Family = gauge(
    "clusterdns_kubernetes_synced",
    "Whether every watched kind has been listed once.",
    &[],
);
pub const BUILD_INFO: Family = gauge(
    "coredns_build_info",
    "A metric with a constant '1' value labeled by version, revision, and goversion from which CoreDNS was built.",
    &["version", "revision", "goversion"],
);
/// `process_*` as Prometheus client libraries export them.
pub const PROCESS: [Family; 6] = [
    counter(
        "process_cpu_seconds_total",
        "Total user and system CPU time spent in seconds.",
        &[],
    ),
    gauge("process_resident_memory_bytes", "Resident memory size in bytes.", &[]),
    gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", &[]),
    gauge("process_open_fds", "Number of open file descriptors.", &[]),
    gauge("process_max_fds", "Maximum number of open file descriptors.", &[]),
    gauge(
        "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.",
        &[],
    ),
];

// --- fairness under overload (`query/udp/fair.rs`, `Fair`) ---
pub const FAIR_SHED: Family = counter(
    "clusterdns_fair_shed_total",
    "Queries of clients limited for fairness dropped unanswered (at their own receive queue, or too late), by the client's namespace (unknown: not a pod's address).",
    &["namespace"],
);
pub const FAIR_LIMITED: Family = gauge(
    "clusterdns_fair_limited_clients",
    "Clients limited for fairness now (each sent more than its share while a UDP worker was overloaded).",
    &[],
);
pub const FAIR_TOP_TALKERS: Family = gauge(
    "clusterdns_fair_top_talkers",
    "Queries per second of the heaviest clients seen by busy UDP workers in the last 10 s (at most 8 series).",
    &["client", "namespace"],
);
pub const TLS_CERT_RELOADS: Family = counter(
    "clusterdns_tls_certificate_reloads_total",
    "Server certificates (tls CERT KEY [CA]) read again after their files changed, by result (a failed read keeps the old certificate).",
    &["result"],
);
pub const DOH_REFUSED: Family = counter(
    "clusterdns_doh_refused_total",
    "DNS over HTTPS (https:// and https3://) requests answered with an HTTP error before reaching the DNS path, by reason.",
    &["reason"],
);
pub const DOQ_REFUSED: Family = counter(
    "clusterdns_doq_refused_total",
    "DNS over QUIC connections and streams refused or reset, by reason.",
    &["reason"],
);
pub const PROXYPROTO_REFUSED: Family = counter(
    "clusterdns_proxyproto_refused_total",
    "Datagrams dropped and connections closed for their PROXY protocol header (invalid, from a source not allowed, cut short, or a UDP session's header alone), by transport.",
    &["transport"],
);
pub const GRPC_REFUSED: Family = counter(
    "clusterdns_grpc_refused_total",
    "gRPC (grpc://) requests answered with an error before reaching the DNS path, and connections closed at grpc_server { max_connections }, by reason.",
    &["reason"],
);
