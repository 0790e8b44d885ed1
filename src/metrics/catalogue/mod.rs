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
//!
//! The families are grouped by what feeds them: [`dns`], [`process`],
//! [`watch`], [`nodelocal`], [`plugins`]; [`labels`] holds label values
//! and buckets.

mod dns;
mod family;
mod labels;
mod nodelocal;
mod plugins;
mod process;
mod watch;

pub use dns::*;
pub use family::{counter, gauge, Family};
pub use labels::*;
pub use nodelocal::*;
pub use plugins::*;
pub use process::*;
pub use watch::*;

/// Every family but those a plugin keeps per server block (in its home:
/// `query::plugins::PER_BLOCK`), for the test that checks the rendered
/// page against them.
#[rustfmt::skip]
pub const ALL: &[Family] = &[
    DNS_REQUESTS, DNS_RESPONSES, DNS_DURATION, DNS_REQUEST_SIZE, DNS_RESPONSE_SIZE, DNS_DO_REQUESTS,
    PLUGIN_ENABLED, TRUNCATED, SEARCH_EXPANSION_NXDOMAIN, NXDOMAIN, DROPPED, TCP_CONNECTIONS,
    TCP_CLOSED, TCP_REJECTED, OVERLOAD_DROPPED, UDP_LATE_DROPPED, SHED_DROPPED, IN_FLIGHT, UDP_KERNEL_DROPS,
    CLIENT_REQUESTS, DOCTOR_FINDINGS, LOG_DROPPED, MEMO_REVALIDATIONS, PANICS, LOCALHOST_REQUESTS, AUTOPATH_SUCCESS,
    DNSTAP_DROPPED, DNSTAP_SENT, DNSTAP_CONNECTS, TLS_CERT_RELOADS, DOH_REFUSED, DOQ_REFUSED, PROXYPROTO_REFUSED, GRPC_REFUSED,
    HEALTH_DURATION, HEALTH_FAILURES, RELOAD_FAILED, SYNCED, BUILD_INFO, PROCESS[0], PROCESS[1],
    PROCESS[2], PROCESS[3], PROCESS[4], PROCESS[5], INVALID_OBJECTS, RELISTS, WATCH_ERRORS,
    WATCH_RESTARTS, RESYNC_CORRECTIONS, UNCONFIRMED_AGE, STATE_UNCONFIRMED, PERSIST_FAILURES, OBJECTS,
    API_REQUESTS, API_THROTTLED, API_THROTTLE_SECONDS,
    LAST_EVENT_AGE, PROGRAMMING_DURATION, NODECACHE_SETUP_ERRORS, NODELOCAL_RESTORED,
    NODELOCAL_HANDOVERS, NODELOCAL_DRAINED, NODELOCAL_PEERS,
    FORWARD_MAX_CONCURRENT_REJECTS, FORWARD_HEALTHCHECK_BROKEN, LOOP_DETECTED,
    PROXY_HEALTHCHECK_FAILURES, FORWARD_TLS_FAILURES, FORWARD_STRAY_REPLIES, FORWARD_UDP_PORTS, PROXY_DURATION, GRPC_REQUESTS, GRPC_RESPONSES, GRPC_DURATION, CACHE_ENTRIES, CACHE_HITS, CACHE_REQUESTS,
    CACHE_MISSES, CACHE_PREFETCH, CACHE_SERVED_STALE, CACHE_EVICTIONS,
    TRANSFER_REQUESTS, TRANSFER_NOTIFIES, FAIR_SHED, FAIR_LIMITED, FAIR_TOP_TALKERS,
];
