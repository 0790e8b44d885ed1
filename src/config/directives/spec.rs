//! The directive table's row type and what its rows share: the context a
//! parser reads and writes, the `enabled` of directives CoreDNS does not
//! report, the directives refused for good, and the one-per-block check.

use std::path::Path;

use crate::config::effective::print::Print;
use crate::config::server::{Config, Server};
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;

/// What a parser reads and writes: its server block, the directory
/// relative files resolve in, the process-wide configuration, the errors.
pub struct Ctx<'a> {
    pub server: &'a mut Server,
    pub dir: &'a Path,
    pub config: &'a mut Config,
    pub errors: &'a mut Vec<ConfigError>,
}

/// Reads one directive (its argument count and options) into `Ctx`.
pub type Parse = fn(&Directive, &mut Ctx<'_>);

/// One directive this build implements.
pub struct Spec {
    pub name: &'static str,
    /// Whether it takes an options block (`name args { ... }`).
    pub options: bool,
    pub parse: Parse,
    /// Whether server block `s` of configuration `c` holds the directive
    /// (`coredns_plugin_enabled`).
    pub enabled: fn(&Server, &Config) -> bool,
    /// Prints what the directive holds, for `clusterdns check`.
    pub(crate) print: Print,
}

/// `enabled` of the directives `coredns_plugin_enabled` does not list:
/// settings of the listeners and clusterdns's own (`bind`, `timeouts`,
/// `limits`, `nodelocal`), and the rows that say so.
pub(super) const NOT_REPORTED: fn(&Server, &Config) -> bool = |_, _| false;

/// A row for a setting of the block's listener (`https`, `quic`,
/// `https3`, `grpc_server`): an options block, not reported as a plugin.
pub(super) const fn listener(name: &'static str, parse: Parse, print: Print) -> Spec {
    Spec {
        name,
        options: true,
        parse,
        enabled: NOT_REPORTED,
        print,
    }
}

/// CoreDNS directives that a later release of clusterdns brings.
pub const NOT_YET: &[&str] = &[];

/// CoreDNS directives clusterdns refuses for good, with why and what to
/// write instead. The cloud providers' zone plugins read a vendor's API
/// that no test here can reach (nothing to check them against), so they
/// are refused rather than shipped untried.
pub const REFUSED: &[(&str, &str)] = &[
    (
        "route53",
        "route53: not supported; clusterdns does not read zones from the AWS Route 53 API (no AWS \
         endpoint to test it against); serve the zone from a file (`file`, or `auto` for a directory \
         an export job writes) or from a primary (`secondary`), or `forward` the zone to the Route 53 \
         Resolver (the VPC's .2 address)",
    ),
    (
        "azure",
        "azure: not supported; clusterdns does not read zones from the Azure DNS API (no Azure \
         endpoint to test it against); serve the zone from a file (`file`, `auto`) or a primary \
         (`secondary`), or `forward` the zone to Azure's resolver 168.63.129.16",
    ),
    (
        "clouddns",
        "clouddns: not supported; clusterdns does not read zones from the Google Cloud DNS API (no \
         Google endpoint to test it against); serve the zone from a file (`file`, `auto`) or a \
         primary (`secondary`), or `forward` the zone to the metadata server's resolver 169.254.169.254",
    ),
    (
        "nomad",
        "nomad: not supported; clusterdns answers for Kubernetes, not for Nomad's service registry \
         (no Nomad API to test it against); `forward` the Nomad zone to a Nomad or Consul DNS \
         endpoint, e.g. `forward service.consul 127.0.0.1:8600`",
    ),
];

/// `NAME: only one WHERE` when `present` (the directive was seen before).
pub(super) fn once(d: &Directive, present: bool, place: &str, errors: &mut Vec<ConfigError>) {
    if present {
        errors.push(ConfigError::new(
            &d.name.pos,
            format!("{}: only one {place}", d.name.text),
        ));
    }
}
