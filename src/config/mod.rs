//! The Corefile: lexer → server blocks → one typed struct per directive.
//!
//! Start at [`load`]: it reads the file, groups it into server blocks
//! ([`blocks`]), and turns each directive into typed options
//! ([`kubernetes`], [`plugins`], read by the table in [`directives`]). Every error carries `FILE:LINE:COL`; all of
//! them are collected before failing, so one `clusterdns check` run lists
//! everything wrong with a file.

pub mod acl;
pub mod args;
pub mod autopath;
pub mod blocks;
pub mod bufsize;
pub mod cache;
pub mod chaos;
pub mod directives;
pub mod dns64;
pub mod dnstap;
pub mod effective;
pub mod errors;
pub mod expr;
pub mod file;
pub mod forward;
pub mod forward_tls;
pub mod forward_to;
pub mod gotmpl;
pub mod hosts;
pub mod k8s_external;
pub mod kube_client;
pub mod kubernetes;
pub mod labels;
pub mod lexer;
pub mod limits;
pub mod listeners;
pub mod loadbalance;
pub mod local;
pub mod log;
pub mod r#loop;
pub mod nodelocal;
pub mod options;
pub mod plugins;
pub mod reload;
pub mod rewrite;
pub mod rewrite_edns;
pub mod rewrite_rule;
pub mod template;
pub mod timeouts;
pub mod transfer;
pub mod weights;

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use hickory_proto::rr::Name;

pub use kubernetes::{KubernetesConfig, Persist, PodMode, Source};
use lexer::Pos;

/// One configuration problem, displayed as `FILE:LINE:COL: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub pos: Pos,
    pub message: String,
}

impl ConfigError {
    pub fn new(pos: &Pos, message: impl Into<String>) -> Self {
        ConfigError {
            pos: pos.clone(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pos, self.message)
    }
}

/// All errors of one load, in file order.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct ConfigErrors(pub Vec<ConfigError>);

/// The effective configuration of the whole process.
#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    /// The port of keys that name none (`-dns.port`), kept for reloads.
    pub default_port: u16,
    pub servers: Vec<Server>,
    /// `health [ADDR]`, with its lameduck duration.
    pub health: Option<plugins::Health>,
    pub ready: Option<SocketAddr>,
    /// `ready { monitor continuously }` (default `until-ready`).
    pub ready_continuously: bool,
    pub prometheus: Option<SocketAddr>,
    /// `reload INTERVAL JITTER`.
    pub reload: Option<(std::time::Duration, std::time::Duration)>,
    /// `limits { in_flight N }`: queries being forwarded at once.
    pub in_flight: usize,
    /// `nodelocal`: the node's interface and NOTRACK rules (one per Corefile).
    pub nodelocal: Option<nodelocal::NodeLocalConfig>,
}

/// One server block: the zones it serves on a port and its plugin chain.
#[derive(Debug, Clone)]
pub struct Server {
    pub zones: Vec<Name>,
    pub port: u16,
    /// Addresses from `bind`; empty means every address.
    pub bind: Vec<IpAddr>,
    /// `errors`: plugin errors logged, alike ones consolidated.
    pub errors: Option<errors::ErrorsConfig>,
    pub log: Option<log::LogConfig>,
    pub kubernetes: Option<KubernetesConfig>,
    /// `forward` directives, tried in order (`next` passes on to the next).
    pub forward: Vec<forward::ForwardConfig>,
    pub cache: Option<cache::CacheConfig>,
    pub hosts: Option<hosts::HostsConfig>,
    pub files: Vec<file::FileConfig>,
    /// `loop`: `Some(exit)` when loops are detected.
    pub loop_detect: Option<bool>,
    /// `loadbalance`: shuffled answers, `prefer`red networks first.
    pub loadbalance: Option<loadbalance::LoadbalanceConfig>,
    /// `autopath`, with where it was written (for errors).
    pub autopath: Option<(autopath::AutopathConfig, lexer::Pos)>,
    /// `acl` directives in order (see [`acl`]).
    pub acl: Vec<acl::AclRule>,
    /// `any`: ANY queries get RFC 8482's minimal answer.
    pub any: bool,
    /// `whoami`: what no plugin before answered gets the client's address.
    pub whoami: bool,
    /// Whether a directive of the block takes part in answering (CoreDNS's
    /// plugin chain is not empty): a name the chain leaves unanswered is
    /// SERVFAIL, a block without one answers REFUSED.
    pub chain: bool,
    /// `timeouts` and `limits` for TCP clients.
    pub tcp: timeouts::TcpLimits,
    /// `dns64`: AAAA synthesized from A records.
    pub dns64: Option<dns64::Dns64Config>,
    /// `k8s_external`: Services' external addresses under other zones.
    pub k8s_external: Option<k8s_external::K8sExternalConfig>,
    /// `template` directives, in order.
    pub templates: Vec<template::TemplateConfig>,
    /// `rewrite` rules, in order.
    pub rewrites: Vec<rewrite_rule::RewriteRule>,
    /// `bufsize`: the largest EDNS payload a request may advertise.
    pub bufsize: Option<u16>,
    /// `chaos`: CH TXT `version.bind` and friends.
    pub chaos: Option<chaos::ChaosConfig>,
    /// `local`, with whether the `localhost.<anything>` prefix form is on.
    pub local: Option<bool>,
    /// `dnstap` directives: where queries and replies are sent as dnstap.
    pub dnstap: Vec<dnstap::DnstapConfig>,
    /// `transfer` directives: who may take the cluster zones by AXFR, and
    /// who is sent NOTIFY.
    pub transfers: Vec<transfer::TransferConfig>,
}

/// Loads and validates a Corefile. `default_port` applies to keys that name
/// no port (CoreDNS's `-dns.port`).
pub fn load(path: &Path, default_port: u16) -> Result<Config, ConfigErrors> {
    let mut errors = Vec::new();
    let raw = blocks::parse_file(path, &mut errors);
    build(path, raw, errors, default_port)
}

/// Loads Corefile text as if it were the file `path` (for the fuzzer and
/// tests; `import` and relative files resolve beside `path`).
pub fn load_str(path: &Path, text: &str, default_port: u16) -> Result<Config, ConfigErrors> {
    let mut errors = Vec::new();
    let name: std::sync::Arc<str> = std::sync::Arc::from(path.display().to_string());
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let raw = blocks::parse_str(&name, text, dir, &mut errors);
    build(path, raw, errors, default_port)
}

fn build(
    path: &Path,
    raw: Vec<blocks::RawBlock>,
    mut errors: Vec<ConfigError>,
    default_port: u16,
) -> Result<Config, ConfigErrors> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut config = Config {
        path: path.to_path_buf(),
        default_port,
        servers: Vec::new(),
        health: None,
        ready: None,
        ready_continuously: false,
        prometheus: None,
        reload: None,
        in_flight: limits::IN_FLIGHT,
        nodelocal: None,
    };
    for block in &raw {
        if let Some(server) = plugins::server(block, default_port, &dir, &mut config, &mut errors) {
            config.servers.push(server);
        }
    }
    if raw.is_empty() && errors.is_empty() {
        let pos = Pos {
            file: path.display().to_string().into(),
            line: 1,
            col: 1,
        };
        errors.push(ConfigError::new(
            &pos,
            "no server blocks (expected e.g. '.:53 { ... }')",
        ));
    }
    if let (Some(n), Some(h)) = (config.nodelocal.as_mut(), &config.health) {
        n.health_port = h.addr.port();
    }
    check_overlaps(&raw, &config, &mut errors);
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors(errors))
    }
}

/// Two blocks may share a port, but not a zone on that port.
fn check_overlaps(raw: &[blocks::RawBlock], config: &Config, errors: &mut Vec<ConfigError>) {
    let mut seen: Vec<(&Name, u16)> = Vec::new();
    for (server, block) in config.servers.iter().zip(raw) {
        for zone in &server.zones {
            if seen.contains(&(zone, server.port)) && server.port != 0 {
                errors.push(ConfigError::new(
                    &block.open,
                    format!("zone '{zone}' is served twice on port {}", server.port),
                ));
            }
            seen.push((zone, server.port));
        }
    }
}

/// `items` separated by spaces, or `empty` when there are none (for log
/// lines and `clusterdns doctor`).
pub(crate) fn spaced<T: fmt::Display>(items: &[T], empty: &str) -> String {
    if items.is_empty() {
        return empty.to_string();
    }
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
pub(crate) mod tests;
