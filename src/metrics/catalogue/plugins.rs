//! The query plugins' own families (`forward`, `loop`, `cache`,
//! `transfer`), rendered beside their counters. The families a plugin keeps
//! per server block are its own, in its home (`query::plugins::PER_BLOCK`).

use super::family::*;

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
pub const SHED_DROPPED: Family = counter(
    "coredns_shed_dropped_total",
    "Queries dropped before the plugin chain under overload (reason query: waited too long, or shed for fairness; process-wide), and replies dropped at the write (reason response: none, nothing is evicted), in blocks with shed.",
    &["server", "reason"],
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
pub const FORWARD_STRAY_REPLIES: Family = counter(
    "clusterdns_forward_stray_replies_total",
    "Datagrams on an upstream's UDP ports that were not the reply awaited there, by reason (id, question, malformed, source, late), dropped.",
    &["proxy_name", "to", "reason"],
);
pub const FORWARD_UDP_PORTS: Family = gauge(
    "clusterdns_forward_udp_ports",
    "UDP ports open to an upstream, idle or carrying a query.",
    &["proxy_name", "to"],
);
pub const PROXY_DURATION: Family = histogram(
    "coredns_proxy_request_duration_seconds",
    "Histogram of the time each request took.",
    &["proxy_name", "to", "rcode"],
);
pub const GRPC_REQUESTS: Family = counter(
    "coredns_grpc_requests_total",
    "Counter of requests made per upstream.",
    &["to"],
);
pub const GRPC_RESPONSES: Family = counter(
    "coredns_grpc_responses_total",
    "Counter of requests made per upstream.",
    &["rcode", "to"],
);
pub const GRPC_DURATION: Family = histogram(
    "coredns_grpc_request_duration_seconds",
    "Histogram of the time each request took.",
    &["to"],
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
