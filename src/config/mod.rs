//! The Corefile: lexer → server blocks → one typed struct per directive.
//!
//! Start at [`load`]: it reads the file, groups it into server blocks
//! ([`blocks`]), and turns each directive into typed options
//! ([`kubernetes`], [`plugins`], read by the table in [`directives`]). Every error carries `FILE:LINE:COL`; all of
//! them are collected before failing, so one `clusterdns check` run lists
//! everything wrong with a file.

pub mod acme;
pub mod bufsize;
pub mod debug;
pub mod directives;
pub mod effective;
pub mod listeners;
pub mod r#loop;
pub mod multisocket;
pub mod nodelocal;
pub mod plugins;
pub mod reload;
pub mod root;
pub mod server;
pub mod serving;
pub mod transport;

use std::fmt;
use std::path::Path;

use hickory_proto::rr::Name;

use crate::corefile::blocks;
use crate::corefile::lexer::Pos;
pub use crate::corefile::problem::{ConfigError, ConfigErrors};
pub use server::{Config, Server};

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
        pprof: None,
        prometheus_tls: None,
        reload: None,
        in_flight: crate::query::limits::IN_FLIGHT,
        nodelocal: None,
    };
    let raw = split_ports(raw);
    for block in &raw {
        if let Some(server) = plugins::server(block, default_port, &dir, &mut config, &mut errors) {
            config.servers.push(server);
        }
    }
    multisocket::share(&mut config.servers);
    let opens: Vec<&Pos> = raw.iter().map(|b| &b.open).collect();
    plugins::acme_challenges(&mut config.servers, &opens, &mut errors);
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
    listeners::check_metrics_shared(&config, &mut errors);
    serving::check_shared(&config.servers, &opens, &mut errors);
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors(errors))
    }
}

/// A block whose keys name several ports is a block per port, with the
/// same directives (as CoreDNS serves it: one server per address).
fn split_ports(raw: Vec<blocks::RawBlock>) -> Vec<blocks::RawBlock> {
    let mut out = Vec::with_capacity(raw.len());
    for block in raw {
        let ports: Option<Vec<Option<u16>>> = (block.keys.iter())
            .map(|k| listeners::key_zone_port(k, &mut Vec::new()).map(|(_, p)| p))
            .collect();
        let mut order: Vec<Option<u16>> = Vec::new();
        for p in ports.iter().flatten() {
            if !order.contains(p) {
                order.push(*p);
            }
        }
        let Some(ports) = ports.filter(|_| order.len() > 1) else {
            out.push(block); // one port, or a key reported as it is
            continue;
        };
        for p in order {
            let keys = (block.keys.iter().zip(&ports))
                .filter(|(_, q)| **q == p)
                .map(|(k, _)| k.clone())
                .collect();
            out.push(blocks::RawBlock { keys, ..block.clone() });
        }
    }
    out
}

/// Two blocks may share a port, but not a zone on that port and transport,
/// unless one has a `view` (tried in the order written, as CoreDNS).
fn check_overlaps(raw: &[blocks::RawBlock], config: &Config, errors: &mut Vec<ConfigError>) {
    let mut seen: Vec<(&Name, u16, transport::Scheme)> = Vec::new();
    for (server, block) in config.servers.iter().zip(raw).filter(|(s, _)| s.view.is_none()) {
        let scheme = server.listen.scheme;
        for zone in &server.zones {
            if seen.contains(&(zone, server.port, scheme)) && server.port != 0 {
                errors.push(ConfigError::new(
                    &block.open,
                    format!("zone '{zone}' is served twice on port {}", server.port),
                ));
            }
            seen.push((zone, server.port, scheme));
        }
    }
}

/// What `clusterdns check` prints: every server block with the directives
/// it holds in the table's order (see [`effective`]).
impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# effective configuration of {}", self.path.display())?;
        writeln!(
            f,
            "# directives in the order their plugins run; options at their defaults written out"
        )?;
        for (i, s) in self.servers.iter().enumerate() {
            let scheme = match s.listen.scheme {
                transport::Scheme::Dns => String::new(),
                other => format!("{}://", other.name()),
            };
            let keys: Vec<String> = s.zones.iter().map(|z| format!("{scheme}{z}:{}", s.port)).collect();
            writeln!(f, "{} {{", keys.join(" "))?;
            let mut b = effective::Block(String::new());
            for spec in directives::DIRECTIVES {
                (spec.print)(&mut b, s, (i == 0).then_some(self));
            }
            f.write_str(&b.0)?;
            writeln!(f, "}}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
