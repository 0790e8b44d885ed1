//! One server block from its directives, and the one place that decides
//! which directives exist at all (the listeners' directives and the block
//! keys are read in `listeners.rs`).

use std::path::Path;

use super::args::Args;
use super::blocks::{Directive, RawBlock};
pub use super::listeners::Health;
use super::listeners::{addr_or, bind, health, key_zone_port, ready_monitor};
use super::{cache, chaos, dns64, forward, k8s_external, kubernetes, local, nodelocal, Config, ConfigError, Server};

/// Directives this build implements.
pub const SUPPORTED: &[&str] = &[
    "bind",
    "errors",
    "log",
    "health",
    "ready",
    "prometheus",
    "kubernetes",
    "forward",
    "cache",
    "loop",
    "reload",
    "loadbalance",
    "hosts",
    "file",
    "autopath",
    "acl",
    "any",
    "timeouts",
    "limits",
    "dns64",
    "k8s_external",
    "template",
    "rewrite",
    "bufsize",
    "chaos",
    "local",
    "nodelocal",
    "dnstap",
    "transfer",
];

/// CoreDNS directives that a later release of clusterdns brings.
pub const NOT_YET: &[&str] = &[];

/// Directives that take an options block.
const WITH_OPTIONS: &[&str] = &[
    "bind",
    "kubernetes",
    "health",
    "ready",
    "errors",
    "log",
    "forward",
    "cache",
    "hosts",
    "file",
    "loop",
    "acl",
    "timeouts",
    "limits",
    "dns64",
    "k8s_external",
    "template",
    "rewrite",
    "local",
    "nodelocal",
    "loadbalance",
    "dnstap",
    "transfer",
];

/// Builds one server block, recording process-wide listeners in `config`.
pub fn server(
    block: &RawBlock,
    default_port: u16,
    dir: &Path,
    config: &mut Config,
    errors: &mut Vec<ConfigError>,
) -> Option<Server> {
    let mut zones = Vec::new();
    let mut port = None;
    for key in &block.keys {
        let Some((z, p)) = key_zone_port(key, errors) else {
            continue;
        };
        zones.push(z);
        match (port, p) {
            (None, _) => port = Some(p),
            (Some(a), b) if a != b => {
                let show = |p: Option<u16>| p.map_or("default".to_string(), |p| p.to_string());
                errors.push(ConfigError::new(
                    &key.pos,
                    format!("keys of one block must share a port ({} and {})", show(a), show(b)),
                ));
            }
            _ => {}
        }
    }
    let mut server = Server {
        zones,
        port: port.flatten().unwrap_or(default_port),
        bind: Vec::new(),
        errors: None,
        log: None,
        kubernetes: None,
        forward: Vec::new(),
        cache: None,
        hosts: None,
        files: Vec::new(),
        loop_detect: None,
        loadbalance: None,
        autopath: None,
        acl: Vec::new(),
        any: false,
        tcp: local::TcpLimits::default(),
        dns64: None,
        k8s_external: None,
        templates: Vec::new(),
        rewrites: Vec::new(),
        bufsize: None,
        chaos: None,
        local: None,
        dnstap: Vec::new(),
        transfers: Vec::new(),
    };
    let had_nodelocal = config.nodelocal.is_some();
    for d in &block.directives {
        directive(d, &mut server, dir, config, errors);
    }
    if let Some(n) = config.nodelocal.as_mut().filter(|_| !had_nodelocal) {
        nodelocal::resolve(n, &server, errors);
    }
    if let Some((_, pos)) = &server.autopath {
        let verified = server
            .kubernetes
            .as_ref()
            .is_some_and(|k| k.pods == super::PodMode::Verified);
        if !verified {
            errors.push(ConfigError::new(
                pos,
                "autopath: needs a kubernetes directive with `pods verified` in this server block (it maps client IPs to pods)",
            ));
        }
    }
    super::transfer::check(&server.transfers, server.kubernetes.as_ref(), errors);
    if let Some(e) = server.k8s_external.as_ref().filter(|_| server.kubernetes.is_none()) {
        errors.push(ConfigError::new(
            &e.pos,
            "k8s_external: needs a kubernetes directive in this server block (it serves that plugin's Services)",
        ));
    }
    Some(server)
}

fn directive(d: &Directive, server: &mut Server, dir: &Path, config: &mut Config, errors: &mut Vec<ConfigError>) {
    let a = Args::from(d);
    let name = d.name.text.as_str();
    if !d.options.is_empty() && SUPPORTED.contains(&name) && !WITH_OPTIONS.contains(&name) {
        errors.push(ConfigError::new(
            &d.options[0].name.pos,
            format!("{name}: takes no options block"),
        ));
    }
    match name {
        "bind" if a.count(1, usize::MAX, errors) => bind(d, &mut server.bind, errors),
        "errors" => {
            if server.errors.is_some() {
                errors.push(ConfigError::new(a.pos(), "errors: only one per server block"));
            }
            server.errors = Some(super::errors::parse(d, errors));
        }
        "log" => server.log = Some(super::log::parse(d, errors)),
        "forward" => server.forward.extend(forward::parse(d, dir, errors)),
        "cache" => {
            if server.cache.is_some() {
                errors.push(ConfigError::new(a.pos(), "cache: only one per server block"));
            }
            server.cache = cache::parse(d, errors);
        }
        "hosts" => {
            if server.hosts.is_some() {
                errors.push(ConfigError::new(a.pos(), "hosts: only one per server block"));
            }
            server.hosts = super::hosts::hosts(d, &server.zones, dir, errors);
        }
        "file" => server.files.extend(local::file(d, &server.zones, dir, errors)),
        "loop" => server.loop_detect = Some(local::loop_exit(d, errors)),
        "loadbalance" => {
            server.loadbalance = Some(super::hosts::loadbalance(d, errors));
        }
        "reload" => config.reload = local::reload(d, errors).or(config.reload),
        "acl" => server.acl.push(super::acl::parse(d, &server.zones, errors)),
        "any" => {
            a.count(0, 0, errors);
            server.any = true;
        }
        "dns64" => {
            if server.dns64.is_some() {
                errors.push(ConfigError::new(a.pos(), "dns64: only one per server block"));
            }
            server.dns64 = Some(dns64::parse(d, errors));
        }
        "k8s_external" => {
            if server.k8s_external.is_some() {
                errors.push(ConfigError::new(a.pos(), "k8s_external: only one per server block"));
            }
            server.k8s_external = Some(k8s_external::parse(d, &server.zones, errors));
        }
        "template" => server
            .templates
            .extend(super::template::parse(d, &server.zones, errors)),
        "rewrite" => server.rewrites.extend(super::rewrite::parse(d, errors)),
        "bufsize" => server.bufsize = chaos::bufsize(d, errors).or(server.bufsize),
        "chaos" => server.chaos = Some(chaos::chaos(d)),
        "dnstap" => server.dnstap.extend(super::dnstap::parse(d, errors)),
        "transfer" => server.transfers.push(super::transfer::parse(d, &server.zones, errors)),
        "local" => server.local = Some(chaos::local(d, errors)),
        "timeouts" => local::timeouts(d, &mut server.tcp, errors),
        "limits" => local::limits(d, &mut server.tcp, &mut config.in_flight, errors),
        "nodelocal" => {
            if config.nodelocal.is_some() {
                errors.push(ConfigError::new(a.pos(), "nodelocal: only one per Corefile"));
            } else {
                config.nodelocal = Some(nodelocal::parse(d, server.port, errors));
            }
        }
        "autopath" => server.autopath = local::autopath(d, dir, errors).map(|c| (c, a.pos().clone())),
        "health" if a.count(0, 1, errors) => config.health = health(d, errors).or(config.health.take()),
        "ready" if a.count(0, 1, errors) => {
            config.ready = addr_or(d, 8181, errors).or(config.ready);
            config.ready_continuously = ready_monitor(d, errors);
        }
        "prometheus" if a.count(0, 1, errors) => {
            config.prometheus = addr_or(d, 9153, errors).or(config.prometheus);
        }
        "kubernetes" => {
            if server.kubernetes.is_some() {
                errors.push(ConfigError::new(a.pos(), "kubernetes: only one per server block"));
            }
            server.kubernetes = kubernetes::parse(d, &server.zones, dir, errors);
        }
        "shed" => errors.push(ConfigError::new(
            a.pos(),
            "shed: not supported; clusterdns sheds load its own way: forwarded queries beyond \
             `limits { in_flight N }` are shed (clusterdns_overload_dropped_total), see Hardening in the \
             README; remove the directive or write `limits { in_flight N }`",
        )),
        n if SUPPORTED.contains(&n) => {} // argument count already reported
        n if NOT_YET.contains(&n) => errors.push(ConfigError::new(
            a.pos(),
            format!(
                "directive '{n}' is not supported yet by this version of clusterdns (supported: {})",
                SUPPORTED.join(", ")
            ),
        )),
        n => errors.push(ConfigError::new(
            a.pos(),
            format!("unknown directive '{n}' (supported: {})", SUPPORTED.join(", ")),
        )),
    }
}
