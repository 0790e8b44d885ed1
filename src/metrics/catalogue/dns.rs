//! `coredns_dns_*` and ours beside them, per server block and zone
//! (`ZoneStats`).

use super::family::*;

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
