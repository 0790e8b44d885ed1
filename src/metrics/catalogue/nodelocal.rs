//! The `nodelocal` directive (`NodeLocal`), with node-cache's names.

use super::family::*;

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
