//! The `nodelocal` directive (a clusterdns extension): run as a node-local
//! DNS cache the way NodeLocal DNSCache's `node-cache` does, from the same
//! binary. Its options are node-cache's flags under Corefile names:
//!
//! ```text
//! nodelocal {
//!     interface NAME       -interfacename (default nodelocaldns); a dummy link is
//!                          created when missing, an existing link is used as is
//!     addresses IP...      -localip (default: the block's bind addresses)
//!     iptables on|off      -setupiptables (default on): install the rules at all
//!     rules iptables|nftables|auto
//!                          how (default auto: nftables when kube-proxy runs in its
//!                          nftables mode on the node, see `nodelocal::nftables`)
//!     teardown on|off      -skipteardown inverted (default on)
//!     check DURATION       -syncinterval (default 60s)
//!     lockdir DIR          where instances on one node see each other (default
//!                          /run/clusterdns/nodelocal; a hostPath in the DaemonSet)
//! }
//! ```
//!
//! One per Corefile: it sets up the node, not a zone. The DNS port of the
//! rules is the port of the block it is written in; the health port is the
//! `health` directive's (8080 without one, node-cache's default).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Pos;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

/// node-cache's default interface name.
pub const INTERFACE: &str = "nodelocaldns";
/// Where instances on one node coordinate (see `nodelocal::lease`).
pub const LOCKDIR: &str = "/run/clusterdns/nodelocal";

/// How the NOTRACK rules are programmed (`rules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RulesMode {
    Iptables,
    Nftables,
    /// As kube-proxy does on the node.
    Auto,
}

impl std::fmt::Display for RulesMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RulesMode::Iptables => "iptables",
            RulesMode::Nftables => "nftables",
            RulesMode::Auto => "auto",
        })
    }
}

/// Typed options of the `nodelocal` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLocalConfig {
    pub interface: String,
    /// Addresses put on the interface and matched by the rules (the
    /// link-local address, and in transparent mode the kube-dns Service IP).
    pub addresses: Vec<IpAddr>,
    pub iptables: bool,
    pub rules: RulesMode,
    pub teardown: bool,
    pub check: Duration,
    /// The directory of the instance leases and the node lock.
    pub lockdir: PathBuf,
    /// The DNS port of the block `nodelocal` is written in.
    pub port: u16,
    /// The `health` port (the liveness probe's connections skip conntrack too).
    pub health_port: u16,
    pub pos: Pos,
}

/// Parses `nodelocal` in a block listening on `port`; the addresses may
/// still be empty here (see [`resolve`]).
pub fn parse(d: &Directive, port: u16, errors: &mut Vec<ConfigError>) -> NodeLocalConfig {
    let a = Args::from(d);
    a.count(0, 0, errors);
    let mut cfg = NodeLocalConfig {
        interface: INTERFACE.to_string(),
        addresses: Vec::new(),
        iptables: true,
        rules: RulesMode::Auto,
        teardown: true,
        check: Duration::from_secs(60),
        lockdir: PathBuf::from(LOCKDIR),
        port,
        health_port: 8080,
        pos: a.pos().clone(),
    };
    options::read("nodelocal", &d.options, OPTIONS, &mut cfg, errors);
    cfg
}

/// The options of a `nodelocal` block.
const OPTIONS: &[Opt<NodeLocalConfig>] = &[
    Opt::new("interface", (1, 1), |o, cfg, errors| {
        let name = &o.args[0];
        if valid_interface(&name.text) {
            cfg.interface = name.text.clone();
        } else {
            errors.push(ConfigError::new(
                &name.pos,
                format!(
                    "nodelocal: '{}' is not an interface name (1 to 15 characters, no '/', ':' or spaces)",
                    name.text
                ),
            ));
        }
    }),
    Opt::new("addresses", (1, MANY), |o, cfg, errors| {
        cfg.addresses = (0..o.args.len())
            .filter_map(|i| o.parse::<IpAddr>(i, "an IP address", errors))
            .collect();
    }),
    Opt::new("iptables", (1, 1), |o, cfg, errors| {
        cfg.iptables = on_off(o, errors).unwrap_or(cfg.iptables)
    }),
    Opt::new("rules", (1, 1), |o, cfg, errors| match o.args[0].text.as_str() {
        "iptables" => cfg.rules = RulesMode::Iptables,
        "nftables" => cfg.rules = RulesMode::Nftables,
        "auto" => cfg.rules = RulesMode::Auto,
        other => errors.push(ConfigError::new(
            &o.args[0].pos,
            format!("nodelocal: rules takes iptables, nftables or auto, not '{other}'"),
        )),
    }),
    Opt::new("teardown", (1, 1), |o, cfg, errors| {
        cfg.teardown = on_off(o, errors).unwrap_or(cfg.teardown)
    }),
    Opt::new("check", (1, 1), |o, cfg, errors| match o.duration(0, errors) {
        Some(d) if d.is_zero() => errors.push(ConfigError::new(
            &o.args[0].pos,
            "nodelocal: check must be longer than 0",
        )),
        Some(d) => cfg.check = d,
        None => {}
    }),
    Opt::new("lockdir", (1, 1), |o, cfg, errors| {
        let dir = &o.args[0];
        if dir.text.starts_with('/') {
            cfg.lockdir = PathBuf::from(&dir.text);
        } else {
            errors.push(ConfigError::new(
                &dir.pos,
                format!("nodelocal: lockdir must be an absolute path, not '{}'", dir.text),
            ));
        }
    }),
];

/// Completes `cfg` once its block is read: addresses default to the
/// block's `bind`, and each must be one the block listens on.
pub fn resolve(cfg: &mut NodeLocalConfig, bind: &[IpAddr], errors: &mut Vec<ConfigError>) {
    if cfg.addresses.is_empty() {
        cfg.addresses = bind.to_vec();
    }
    if cfg.addresses.is_empty() {
        errors.push(ConfigError::new(
            &cfg.pos,
            "nodelocal: no addresses (write `addresses 169.254.20.10`, or `bind` them in this block)",
        ));
    }
    for ip in &cfg.addresses {
        if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() {
            errors.push(ConfigError::new(
                &cfg.pos,
                format!("nodelocal: {ip} cannot be a node-local address"),
            ));
        } else if !bind.is_empty() && !bind.contains(ip) {
            errors.push(ConfigError::new(
                &cfg.pos,
                format!("nodelocal: {ip} is not among this block's bind addresses, so nothing would answer there"),
            ));
        }
    }
}

fn on_off(o: &Args<'_>, errors: &mut Vec<ConfigError>) -> Option<bool> {
    match o.args[0].text.as_str() {
        "on" => Some(true),
        "off" => Some(false),
        other => {
            errors.push(ConfigError::new(
                &o.args[0].pos,
                format!("nodelocal: {} takes on or off, not '{other}'", o.name.text),
            ));
            None
        }
    }
}

/// A Linux interface name: at most 15 bytes, none of `/`, `:`, spaces.
fn valid_interface(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name != "."
        && name != ".."
        && !name.chars().any(|c| c == '/' || c == ':' || c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;
    use std::path::Path;

    fn load(text: &str) -> Result<crate::config::Config, String> {
        load_str(Path::new("/tmp/Corefile"), text, 53).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_follow_node_cache_and_the_block() {
        let c =
            load(".:53 {\n bind 169.254.20.10 10.96.0.10\n health 169.254.20.10:8081\n nodelocal\n}\n").expect("loads");
        let n = c.nodelocal.expect("nodelocal");
        assert_eq!(n.interface, "nodelocaldns");
        assert_eq!(n.addresses.len(), 2);
        assert!(n.iptables && n.teardown && n.rules == super::RulesMode::Auto);
        assert_eq!(n.check, std::time::Duration::from_secs(60));
        assert_eq!((n.port, n.health_port), (53, 8081));
    }

    #[test]
    fn options_parse_and_every_mistake_is_reported_with_its_place() {
        let c = load(".:1053 {\n bind 169.254.20.10\n nodelocal {\n  interface eth1\n  addresses 169.254.20.10\n  iptables off\n  teardown off\n  check 2s\n  lockdir /var/run/dns\n  rules nftables\n }\n}\n").expect("loads");
        let n = c.nodelocal.expect("nodelocal");
        assert_eq!(
            (n.interface.as_str(), n.iptables, n.teardown, n.port),
            ("eth1", false, false, 1053)
        );
        assert_eq!(n.lockdir, std::path::Path::new("/var/run/dns"));
        assert_eq!(n.rules, super::RulesMode::Nftables);
        let e = load(".:53 {\n bind 169.254.20.10\n nodelocal {\n  interface a/b\n  addresses 10.0.0.9 nope\n  iptables maybe\n  check 0s\n  ebtables on\n  lockdir run\n  rules ebpf\n }\n}\n.:54 {\n nodelocal {\n  addresses 169.254.20.11\n }\n}\n")
            .expect_err("errors");
        for want in [
            "Corefile:4:13: nodelocal: 'a/b' is not an interface name",
            "Corefile:5:22: 'addresses': 'nope' is not an IP address",
            "Corefile:6:12: nodelocal: iptables takes on or off, not 'maybe'",
            "Corefile:7:9: nodelocal: check must be longer than 0",
            "Corefile:8:3: nodelocal: unknown option 'ebtables'",
            "Corefile:9:11: nodelocal: lockdir must be an absolute path, not 'run'",
            "Corefile:10:9: nodelocal: rules takes iptables, nftables or auto, not 'ebpf'",
            "Corefile:3:2: nodelocal: 10.0.0.9 is not among this block's bind addresses",
            "Corefile:14:2: nodelocal: only one per Corefile",
        ] {
            assert!(e.contains(want), "missing {want:?} in:\n{e}");
        }
        let e = load(".:53 {\n nodelocal\n}\n").expect_err("no addresses");
        assert!(e.contains("Corefile:2:2: nodelocal: no addresses"), "{e}");
    }
}
