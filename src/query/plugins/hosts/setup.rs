//! `hosts [FILE [ZONES...]] { ADDRESS NAME...; ttl SECONDS (3600, 1..65535);
//! no_reverse; reload DURATION (5s; 0 disables); fallthrough [ZONES...];
//! fallthrough_unsupported (needs fallthrough) }`. ZONES are names, or
//! CIDRs standing for the reverse zones that cover them.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::Name;

pub use crate::corefile::args::Net;
use crate::corefile::args::{zone, zones, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Pos;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::chain::Setup;

/// `hosts`.
#[derive(Debug, Clone)]
pub struct HostsConfig {
    /// `None`: inline entries only (an explicit file that is absent is
    /// reported at load time and retried on reload).
    pub file: Option<PathBuf>,
    pub zones: Vec<Name>,
    pub inline: Vec<(IpAddr, Vec<Name>)>,
    pub ttl: u32,
    pub no_reverse: bool,
    pub reload: Duration,
    pub fallthrough: Option<Vec<Name>>,
    /// Other types than A, AAAA and PTR for a name in the data fall
    /// through too (where `fallthrough` applies).
    pub fallthrough_unsupported: bool,
}

impl HostsConfig {
    /// Whether `fallthrough` applies to `qname`.
    pub fn falls_through(&self, qname: &Name) -> bool {
        self.fallthrough
            .as_ref()
            .is_some_and(|zs| zs.is_empty() || zs.iter().any(|z| z.zone_of(qname)))
    }
}

/// Reads `hosts` and its block (a later one replaces it).
pub fn parse(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    Arc::new(hosts(d, block_zones, dir, errors))
}

fn hosts(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> HostsConfig {
    let mut cfg = HostsConfig {
        file: Some(
            d.args
                .first()
                .map_or_else(|| PathBuf::from("/etc/hosts"), |w| dir.join(&w.text)),
        ),
        zones: zones(d.args.get(1..).unwrap_or_default(), errors),
        inline: Vec::new(),
        ttl: 3600,
        no_reverse: false,
        reload: Duration::from_secs(5),
        fallthrough: None,
        fallthrough_unsupported: false,
    };
    if cfg.zones.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    let mut read = (cfg, None);
    for line in &d.options {
        let a = Args::from(line);
        match a.name.text.parse::<IpAddr>() {
            Ok(ip) => inline(&a, ip, &mut read.0, errors),
            Err(_) => _ = options::read_line("hosts", line, HOSTS, &mut read, errors),
        }
    }
    let (cfg, unsupported_at) = read;
    if let (Some(at), None) = (unsupported_at, &cfg.fallthrough) {
        errors.push(ConfigError::new(
            &at,
            "hosts: fallthrough_unsupported requires fallthrough (add 'fallthrough' to the block)",
        ));
    }
    cfg
}

/// The options of a `hosts` block besides its `ADDRESS NAME...` lines,
/// read with where `fallthrough_unsupported` was written.
const HOSTS: &[Opt<(HostsConfig, Option<Pos>)>] = &[
    Opt::new("ttl", (1, 1), |a, (cfg, _), errors| {
        match a.parse::<u32>(0, "a number of seconds", errors) {
            Some(t) if (1..=65535).contains(&t) => cfg.ttl = t,
            Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "ttl: out of range 1..65535")),
            None => {}
        }
    }),
    Opt::new("no_reverse", (0, 0), |_, (cfg, _), _| cfg.no_reverse = true),
    Opt::new("reload", (1, 1), |a, (cfg, _), errors| {
        cfg.reload = a.duration(0, errors).unwrap_or(cfg.reload)
    }),
    Opt::new("fallthrough", (0, MANY), |a, (cfg, _), errors| {
        cfg.fallthrough = Some(zones(a.args, errors))
    }),
    Opt::new("fallthrough_unsupported", (0, 0), |a, (cfg, at), _| {
        cfg.fallthrough_unsupported = true;
        *at = Some(a.pos().clone());
    }),
];

/// An inline `ADDRESS NAME...` line: before `fallthrough` only, as CoreDNS
/// reads it (after it, CoreDNS refuses the line as an unknown property).
fn inline(a: &Args<'_>, ip: IpAddr, cfg: &mut HostsConfig, errors: &mut Vec<ConfigError>) {
    if cfg.fallthrough.is_some() {
        errors.push(ConfigError::new(
            a.pos(),
            "hosts: an inline entry after fallthrough is not read (move it above the fallthrough line)",
        ));
        return;
    }
    let names: Vec<Name> = a.args.iter().filter_map(|w| zone(w, errors)).collect();
    if names.is_empty() {
        errors.push(ConfigError::new(a.pos(), "hosts: an address needs at least one name"));
    }
    cfg.inline.push((ip, names));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(net: &str) -> Vec<String> {
        Net::parse(net)
            .expect("cidr")
            .reverse_zones()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn cidrs_become_the_reverse_zones_covering_them() {
        assert_eq!(names("10.0.0.9/8"), ["10.in-addr.arpa."]);
        assert_eq!(names("10.0.0.0/7"), ["10.in-addr.arpa.", "11.in-addr.arpa."]);
        assert_eq!(names("192.168.1.0/24"), ["1.168.192.in-addr.arpa."]);
        assert_eq!(names("172.16.0.0/14").len(), 4);
        assert_eq!(names("fd00::/8"), ["d.f.ip6.arpa."]);
        assert_eq!(names("fd00::/7"), ["c.f.ip6.arpa.", "d.f.ip6.arpa."]);
        assert!(Net::parse("10.0.0.0/33").is_none());
        let net = Net::parse("10.1.0.0/16").expect("cidr");
        assert!(net.contains("10.1.2.3".parse().expect("ip")) && !net.contains("10.2.0.1".parse().expect("ip")));
        assert!(Net::parse("0.0.0.0/0")
            .expect("cidr")
            .contains("1.2.3.4".parse().expect("ip")));
    }
}
