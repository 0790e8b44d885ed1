//! The plugins' side of the query path: what every plugin returns to the
//! router ([`verdict::Verdict`]). A plugin answers into the reply it is
//! handed (`reply::Answer`) and imports only the reply, the store and its
//! own config; which plugin runs when is the router's (`route/order.rs`).

pub mod acl;
pub mod acme;
pub mod after;
pub mod any;
pub mod auto;
pub mod autopath;
pub mod chain;
pub mod chaos;
pub mod cluster;
pub mod dns64;
pub mod dnssec;
pub mod erratic;
pub mod etcd;
pub mod file;
pub mod geoip;
pub mod guard;
pub mod hosts;
pub mod k8s_external;
pub mod local;
pub mod on;
pub mod rewrite;
pub mod secondary;
pub mod template;
pub mod trace;
pub mod verdict;
pub mod watched;
pub mod whoami;
pub mod zone_source;

use crate::metrics::catalogue::Family;

/// The families plugins keep per server block (each defined in its home,
/// fed by its `Exposed` counters), one list a plugin, in the order
/// `/metrics` writes them.
pub const PER_BLOCK: &[&[Family]] = &[
    &dns64::FAMILIES,
    &template::FAMILIES,
    &acl::FAMILIES,
    &dnssec::FAMILIES,
    &trace::FAMILIES,
];
