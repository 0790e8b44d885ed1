//! Every metric name, label and bucket: the one place to read or change
//! what `/metrics` exposes.
//!
//! Each family is a [`Family`]: its name, Prometheus type, help text and
//! label names, in CoreDNS's spelling where CoreDNS has the metric (so
//! dashboards and alerts keep working) and `clusterdns_*` for ours. Label
//! values with a fixed set (rcodes, plugins, query types, reasons) and
//! histogram buckets are here too. [`ALL`] lists every family; a test
//! renders a busy server's page and checks each series against it, so a
//! new metric is one entry here plus the counter that feeds it.

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

/// One metric family as `/metrics` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    pub name: &'static str,
    /// `counter`, `gauge` or `histogram`.
    pub kind: &'static str,
    pub help: &'static str,
    /// Label names in the order they are written (`le` of histograms aside).
    pub labels: &'static [&'static str],
}

const fn counter(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Family {
    Family {
        name,
        kind: "counter",
        help,
        labels,
    }
}

const fn gauge(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Family {
    Family {
        name,
        kind: "gauge",
        help,
        labels,
    }
}

const fn histogram(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Family {
    Family {
        name,
        kind: "histogram",
        help,
        labels,
    }
}

const ZONE: &[&str] = &["server", "zone", "view"];
const ZONE_PROTO: &[&str] = &["server", "zone", "view", "proto"];
const CACHE: &[&str] = &["server", "zones", "view"];
const CACHE_TYPE: &[&str] = &["server", "zones", "view", "type"];
const KIND: &[&str] = &["kind"];

// --- coredns_dns_*, per server block and zone (`ZoneStats`) ---
pub const DNS_REQUESTS: Family = counter(
    "coredns_dns_requests_total",
    "Counter of DNS requests made per zone, protocol and family.",
    &["server", "zone", "view", "proto", "family", "type"],
);
pub const DNS_RESPONSES: Family = counter(
    "coredns_dns_responses_total",
    "Counter of response status codes.",
    &["server", "zone", "view", "rcode", "plugin"],
);
pub const DNS_DURATION: Family = histogram(
    "coredns_dns_request_duration_seconds",
    "Histogram of the time (in seconds) each request took per zone.",
    ZONE,
);
pub const DNS_REQUEST_SIZE: Family = histogram(
    "coredns_dns_request_size_bytes",
    "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.",
    ZONE_PROTO,
);
pub const DNS_RESPONSE_SIZE: Family = histogram(
    "coredns_dns_response_size_bytes",
    "Size of the returned response in bytes.",
    ZONE_PROTO,
);
pub const DNS_DO_REQUESTS: Family = counter(
    "coredns_dns_do_requests_total",
    "Counter of DNS requests with DO bit set per zone.",
    ZONE,
);
pub const PLUGIN_ENABLED: Family = gauge(
    "coredns_plugin_enabled",
    "A metric that indicates whether a plugin is enabled on per server and zone basis.",
    &["server", "zone", "view", "name"],
);
pub const TRUNCATED: Family = counter(
    "clusterdns_truncated_responses_total",
    "Responses sent with TC set, by server, zone and transport.",
    ZONE_PROTO,
);
pub const SEARCH_EXPANSION_NXDOMAIN: Family = counter(
    "clusterdns_search_expansion_nxdomain_total",
    "NXDOMAIN answers to search-path expansions (an outside name with a search suffix appended), by suffix.",
    &["server", "zone", "view", "suffix"],
);
pub const NXDOMAIN: Family = counter(
    "clusterdns_nxdomain_total",
    "NXDOMAIN answers, all causes (the denominator of the search-expansion share).",
    ZONE,
);

// --- the server process (`Metrics`) ---
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

// --- the watch path (`Watch`) ---
pub const INVALID_OBJECTS: Family = counter(
    "clusterdns_kubernetes_invalid_objects_total",
    "Objects skipped as malformed.",
    KIND,
);
pub const RELISTS: Family = counter(
    "clusterdns_kubernetes_relists_total",
    "Full lists started (start-up, 410 Expired, reconnects).",
    KIND,
);
pub const WATCH_ERRORS: Family = counter(
    "clusterdns_kubernetes_watch_errors_total",
    "Failed lists and watches (each is retried with backoff).",
    KIND,
);
pub const WATCH_RESTARTS: Family = counter(
    "clusterdns_kubernetes_watch_restarts_total",
    "Watches resumed (action=resume) and full lists (action=relist), by kind and reason.",
    &["kind", "action", "reason"],
);
pub const RESYNC_CORRECTIONS: Family = counter(
    "clusterdns_kubernetes_resync_corrections_total",
    "Objects a periodic relist (resync) found different from what was served, and corrected.",
    KIND,
);
pub const UNCONFIRMED_AGE: Family = gauge(
    "clusterdns_kubernetes_unconfirmed_state_age_seconds",
    "Age in seconds of the state served from the persist file while the API has not confirmed it (0: confirmed, or none).",
    &[],
);
pub const STATE_UNCONFIRMED: Family = gauge(
    "clusterdns_kubernetes_state_unconfirmed",
    "1 while the served state comes from the persist file and no full list has confirmed it.",
    &[],
);
pub const PERSIST_FAILURES: Family = counter(
    "clusterdns_kubernetes_persist_failures_total",
    "Writes of the persist file that failed.",
    &[],
);
pub const API_REQUESTS: Family = counter(
    "clusterdns_kubernetes_api_requests_total",
    "Requests sent to the API server (lists, list pages, watches, retries).",
    &[],
);
pub const API_THROTTLED: Family = counter(
    "clusterdns_kubernetes_api_throttled_total",
    "Requests that waited for apiserver_qps/apiserver_burst or apiserver_max_inflight.",
    &[],
);
pub const API_THROTTLE_SECONDS: Family = counter(
    "clusterdns_kubernetes_api_throttle_seconds_total",
    "Seconds requests waited for apiserver_qps/apiserver_burst or apiserver_max_inflight.",
    &[],
);
pub const OBJECTS: Family = gauge("clusterdns_kubernetes_objects", "Objects served, by kind.", KIND);
pub const LAST_EVENT_AGE: Family = gauge(
    "clusterdns_kubernetes_last_event_age_seconds",
    "Seconds since the last event, by kind (-1: none yet).",
    KIND,
);
pub const PROGRAMMING_DURATION: Family = histogram(
    "coredns_kubernetes_dns_programming_duration_seconds",
    "Histogram of the time (in seconds) it took to program a dns instance.",
    &["service_kind"],
);

// --- the `nodelocal` directive (`NodeLocal`) ---
pub const NODECACHE_SETUP_ERRORS: Family = counter(
    "coredns_nodecache_setup_errors_total",
    "The number of errors during periodic network setup for node-cache",
    &["errortype"],
);
pub const NODELOCAL_RESTORED: Family = counter(
    "clusterdns_nodelocal_restored_total",
    "Node-local rules, addresses and interfaces found missing by the periodic check and restored.",
    &["what"],
);
pub const NODELOCAL_HANDOVERS: Family = counter(
    "clusterdns_nodelocal_handovers_total",
    "Hand-overs of this instance to a successor on the same node (surge upgrade).",
    &[],
);
pub const NODELOCAL_DRAINED: Family = counter(
    "clusterdns_nodelocal_drained_queries_total",
    "Queries answered by this instance while handing over, after it stopped taking new ones.",
    &[],
);
pub const NODELOCAL_PEERS: Family = gauge(
    "clusterdns_nodelocal_peer_instances",
    "Other clusterdns instances running on this node at the last look (2 during a surge upgrade means 1).",
    &[],
);

// --- query plugins, rendered beside their counters ---
pub const FORWARD_MAX_CONCURRENT_REJECTS: Family = counter(
    "coredns_forward_max_concurrent_rejects_total",
    "Queries refused because max_concurrent was reached.",
    &[],
);
pub const FORWARD_HEALTHCHECK_BROKEN: Family = counter(
    "coredns_forward_healthcheck_broken_total",
    "Times every upstream was down and one was tried anyway.",
    &[],
);
pub const LOOP_DETECTED: Family = counter(
    "clusterdns_loop_detected_total",
    "Forwarding loops detected by the loop probe.",
    &[],
);
pub const PROXY_HEALTHCHECK_FAILURES: Family = counter(
    "coredns_proxy_healthcheck_failures_total",
    "Failed health checks per upstream.",
    &["proxy_name", "to"],
);
pub const FORWARD_TLS_FAILURES: Family = counter(
    "clusterdns_forward_tls_failures_total",
    "Failed TLS handshakes with DNS over TLS or HTTPS upstreams.",
    &["proxy_name", "to"],
);
pub const PROXY_DURATION: Family = histogram(
    "coredns_proxy_request_duration_seconds",
    "Histogram of the time each request took.",
    &["proxy_name", "to", "rcode"],
);
pub const CACHE_ENTRIES: Family = gauge(
    "coredns_cache_entries",
    "The number of elements in the cache.",
    CACHE_TYPE,
);
pub const CACHE_HITS: Family = counter("coredns_cache_hits_total", "The count of cache hits.", CACHE_TYPE);
pub const CACHE_REQUESTS: Family = counter("coredns_cache_requests_total", "The count of cache requests.", CACHE);
pub const CACHE_MISSES: Family = counter("coredns_cache_misses_total", "The count of cache misses.", CACHE);
pub const CACHE_PREFETCH: Family = counter(
    "coredns_cache_prefetch_total",
    "The number of times the cache has prefetched a cached item.",
    CACHE,
);
pub const CACHE_SERVED_STALE: Family = counter(
    "coredns_cache_served_stale_total",
    "The number of requests served from stale cache entries.",
    CACHE,
);
pub const CACHE_EVICTIONS: Family = counter("coredns_cache_evictions_total", "The count of cache evictions.", CACHE);
const TEMPLATE: &[&str] = &["server", "zone", "view", "class", "type"];
const TEMPLATE_RECORD: &[&str] = &["server", "zone", "view", "class", "type", "section", "template"];
pub const TEMPLATE_MATCHES: Family = counter(
    "coredns_template_matches_total",
    "Counter of template regex matches.",
    TEMPLATE,
);
pub const TEMPLATE_FAILURES: Family = counter(
    "coredns_template_template_failures_total",
    "Counter of go template failures.",
    TEMPLATE_RECORD,
);
pub const TEMPLATE_RR_FAILURES: Family = counter(
    "coredns_template_rr_failures_total",
    "Counter of mis-templated RRs.",
    TEMPLATE_RECORD,
);
pub const DNS64_TRANSLATED: Family = counter(
    "coredns_dns64_requests_translated_total",
    "Counter of DNS requests translated by dns64.",
    &["server"],
);
const ACL: &[&str] = &["server", "zone", "view"];
pub const ACL_BLOCKED: Family = counter(
    "coredns_acl_blocked_requests_total",
    "Counter of DNS requests being blocked.",
    ACL,
);
pub const ACL_FILTERED: Family = counter(
    "coredns_acl_filtered_requests_total",
    "Counter of DNS requests being filtered.",
    ACL,
);
pub const ACL_DROPPED: Family = counter(
    "coredns_acl_dropped_requests_total",
    "Counter of DNS requests being dropped.",
    ACL,
);
pub const ACL_ALLOWED: Family = counter(
    "coredns_acl_allowed_requests_total",
    "Counter of DNS requests being allowed.",
    &["server", "view"],
);
const TRANSFER: &[&str] = &["server", "zone", "result"];
pub const TRANSFER_REQUESTS: Family = counter(
    "clusterdns_transfer_requests_total",
    "Zone transfer requests (AXFR, IXFR) by result: transferred, current (IXFR of the current serial), refused.",
    TRANSFER,
);
pub const TRANSFER_NOTIFIES: Family = counter(
    "clusterdns_transfer_notifies_total",
    "NOTIFY messages sent to secondaries by result: accepted, failed (no answer or an error after every try).",
    TRANSFER,
);

/// Every family, for the test that checks the rendered page against them.
#[rustfmt::skip]
pub const ALL: &[Family] = &[
    DNS_REQUESTS, DNS_RESPONSES, DNS_DURATION, DNS_REQUEST_SIZE, DNS_RESPONSE_SIZE, DNS_DO_REQUESTS,
    PLUGIN_ENABLED, TRUNCATED, SEARCH_EXPANSION_NXDOMAIN, NXDOMAIN, DROPPED, TCP_CONNECTIONS,
    TCP_CLOSED, TCP_REJECTED, OVERLOAD_DROPPED, UDP_LATE_DROPPED, IN_FLIGHT, UDP_KERNEL_DROPS,
    CLIENT_REQUESTS, DOCTOR_FINDINGS, LOG_DROPPED, MEMO_REVALIDATIONS, PANICS, LOCALHOST_REQUESTS, AUTOPATH_SUCCESS,
    DNSTAP_DROPPED, DNSTAP_SENT, DNSTAP_CONNECTS,
    HEALTH_DURATION, HEALTH_FAILURES, RELOAD_FAILED, SYNCED, BUILD_INFO, PROCESS[0], PROCESS[1],
    PROCESS[2], PROCESS[3], PROCESS[4], PROCESS[5], INVALID_OBJECTS, RELISTS, WATCH_ERRORS,
    WATCH_RESTARTS, RESYNC_CORRECTIONS, UNCONFIRMED_AGE, STATE_UNCONFIRMED, PERSIST_FAILURES, OBJECTS,
    API_REQUESTS, API_THROTTLED, API_THROTTLE_SECONDS,
    LAST_EVENT_AGE, PROGRAMMING_DURATION, NODECACHE_SETUP_ERRORS, NODELOCAL_RESTORED,
    NODELOCAL_HANDOVERS, NODELOCAL_DRAINED, NODELOCAL_PEERS,
    FORWARD_MAX_CONCURRENT_REJECTS, FORWARD_HEALTHCHECK_BROKEN, LOOP_DETECTED,
    PROXY_HEALTHCHECK_FAILURES, FORWARD_TLS_FAILURES, PROXY_DURATION, CACHE_ENTRIES, CACHE_HITS, CACHE_REQUESTS,
    CACHE_MISSES, CACHE_PREFETCH, CACHE_SERVED_STALE, CACHE_EVICTIONS, TEMPLATE_MATCHES,
    TEMPLATE_FAILURES, TEMPLATE_RR_FAILURES, DNS64_TRANSLATED, ACL_BLOCKED, ACL_FILTERED, ACL_DROPPED,
    ACL_ALLOWED, TRANSFER_REQUESTS, TRANSFER_NOTIFIES,
    super::fair::FAMILIES[0], super::fair::FAMILIES[1], super::fair::FAMILIES[2],
];

// --- label values and buckets ---

/// Rcodes with their own `rcode` value; every other one is `OTHER`.
pub const RCODES: [ResponseCode; 6] = [
    ResponseCode::NoError,
    ResponseCode::FormErr,
    ResponseCode::ServFail,
    ResponseCode::NXDomain,
    ResponseCode::NotImp,
    ResponseCode::Refused,
];
/// `rcode` label values, in [`RCODES`] order, then the rest.
pub const RCODE_NAMES: [&str; 7] = [
    "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "OTHER",
];
/// `proto` label values, in `Transport` order.
pub const PROTOS: [&str; 2] = ["udp", "tcp"];
/// `family` label values (IPv4, IPv6).
pub const FAMILIES: [&str; 2] = ["1", "2"];
/// `plugin` label values, in `Plugin` order.
pub const PLUGINS: [&str; 13] = [
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
    "transfer",
];
/// Query types CoreDNS reports by name (`type`); the rest are `other`.
pub const TYPES: [RecordType; 18] = [
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
/// `suffix` values of the search-expansion counter, in `Expansion` order.
pub const EXPANSIONS: [&str; 3] = ["namespace", "svc", "zone"];
/// `reason` values of `clusterdns_tcp_closed_total`, in `TcpClose` order.
pub const TCP_CLOSE_REASONS: [&str; 7] = [
    "client",
    "idle_timeout",
    "read_timeout",
    "write_timeout",
    "evicted",
    "shutdown",
    "max_queries",
];
/// Object kinds of the watch path (`kind`), in `store::Kind` order.
pub const KINDS: [&str; 5] = ["Namespace", "Service", "EndpointSlice", "Pod", "ServiceImport"];
/// `service_kind` label values of the programming-latency histogram.
pub const SERVICE_KINDS: [&str; 3] = ["cluster_ip", "headless_with_selector", "headless_without_selector"];
/// Why a watcher resumed its watch or relisted (`reason` label), in
/// `watch::follow::Reason` order.
pub const RESTART_REASONS: [&str; 6] = ["start", "watch_ended", "expired", "stalled", "error", "resync"];
/// The reasons a resume can have (a relist: the others, and `error`).
pub const RESUME_REASONS: [bool; 6] = [false, true, false, true, true, false];
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

/// CoreDNS's request-duration buckets: 0.25 ms · 2^k, k = 0..15.
pub const DURATION_BUCKETS: usize = 16;
/// The upper bound of request-duration bucket `k`, in seconds.
pub fn duration_bound(k: usize) -> f64 {
    0.00025 * f64::from(1u32 << k)
}
/// CoreDNS's size buckets (bytes).
pub const SIZES: [f64; 14] = [
    0.0, 100.0, 200.0, 300.0, 400.0, 511.0, 1023.0, 2047.0, 4095.0, 8291.0, 16e3, 32e3, 48e3, 64e3,
];
/// CoreDNS's programming-latency buckets: 1 ms · 2^k, k = 0..19.
pub const PROGRAMMING_BUCKETS: usize = 20;
/// The upper bound of programming-latency bucket `k`, in seconds.
pub fn programming_bound(k: usize) -> f64 {
    0.001 * f64::from(1u32 << k)
}
/// CoreDNS's health-duration buckets: 0.25 ms · 10^k, k = 0..4.
pub const HEALTH_BUCKETS: usize = 5;
/// The upper bound of health-duration bucket `k`, in seconds.
pub fn health_bound(k: usize) -> f64 {
    0.00025 * 10f64.powi(k as i32)
}
