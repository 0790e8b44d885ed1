//! clusterdns: the DNS server for Kubernetes clusters.
//!
//! Two paths meet at one store:
//!
//! ```text
//!            QUERY PATH (hot, never awaits the API)              WATCH PATH (never sees a query)
//!
//!   UDP/TCP socket ─► request ─► check ─► route ──► hosts, file, cluster ─┐   kube API / snapshot file
//!                                           │                             │              │
//!                                           └──► forward ◄─┐ (a task:     │        watch ─► convert
//!                                                (cache)   │  upstreams)  │              │
//!                                                          ▼              ▼              ▼
//!                                     finish (flags, EDNS, TC, rcode) ◄──────────── STORE
//!                                                                      (immutable snapshot, atomic swap)
//! ```
//!
//! Modules in reading order:
//! 1. [`corefile`]: the Corefile's syntax (lexer, blocks, `import`, arguments,
//!    options, errors with `FILE:LINE:COL`); [`config`]: what its directives mean.
//! 2. [`store`]: compact records and the immutable [`store::Snapshot`].
//! 3. [`watch`]: cluster objects → records → a new snapshot, swapped in whole.
//! 4. [`query`]: sockets, header checks, routing, the cluster zone, local
//!    data (`hosts`, `file`, whose zones [`zonefile`] loads and looks up),
//!    forwarding and its cache, the reply.
//! 5. [`admin`] and [`metrics`]: `/health`, `/ready`, `/metrics`.
//! 6. [`app`]: wiring and lifecycle; [`nodelocal`]: the node's interface and
//!    NOTRACK rules when running as a node-local cache.
#![deny(unsafe_code)]

pub mod admin;
pub mod app;
pub mod config;
pub mod corefile;
pub mod dnstap;
pub mod doctor;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod kubernetes;
pub mod metrics;
pub mod migrate;
pub mod nodelocal;
pub mod profile;
pub mod query;
pub mod serve;
pub mod store;
pub mod tls;
pub mod watch;
pub mod zonefile;
