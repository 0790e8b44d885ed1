//! Label values with a fixed set (rcodes, plugins, query types,
//! reasons) and histogram buckets.

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

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
pub const PLUGINS: [&str; 18] = [
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
    "secondary",
    "auto",
    "tls",
    "etcd",
    "grpc",
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
pub const TCP_CLOSE_REASONS: [&str; 8] = [
    "client",
    "idle_timeout",
    "read_timeout",
    "write_timeout",
    "evicted",
    "shutdown",
    "max_queries",
    "handshake",
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
