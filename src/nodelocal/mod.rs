//! Node-local mode (the `nodelocal` directive): what NodeLocal DNSCache's
//! `node-cache` does around CoreDNS, done by the same binary that answers.
//!
//! ```text
//!  start ── setup: NET_ADMIN? ─► interface (dummy, or the one named) up ─► addresses
//!    │                                                  (before the listeners bind)
//!    ├──── listeners bound ─► install: NOTRACK + ACCEPT rules (rules.rs)
//!    ├──── every `check`: verify ─► restore what is missing; log, count
//!    └──── SIGTERM ─► lameduck ─► teardown (unless `teardown off`) ─► stop
//! ```
//!
//! Rules go in only once the listeners are bound, as node-cache waits for
//! CoreDNS: a server that cannot start must not pull traffic (in
//! transparent mode, the kube-dns Service IP) away from the cluster DNS.
//! Setup errors count in node-cache's `coredns_nodecache_setup_errors_total
//! {errortype}`, repairs in `clusterdns_nodelocal_restored_total{what}`.

pub mod commands;
pub mod doctor;
pub mod firewall;
pub mod handover;
pub mod lease;
pub mod link;
pub mod nftables;
mod node;
pub mod rules;

pub use node::{has_net_admin, NodeLocal, NodeLocalError};
