//! The watch path (`Watch`): objects, relists, API requests, DNS
//! programming latency.

use super::family::*;

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
