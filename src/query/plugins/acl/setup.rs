//! `acl`: who may ask what, by client address and query type, per zone.
//!
//! ```text
//! acl [ZONES...] {                     ZONES: the block's zones when none
//!     allow|block|filter|drop [type QTYPE...|*] [net CIDR|ADDRESS...|*]
//! }
//! ```
//!
//! Each `acl` directive is one rule: its zones and its policies in order.
//! Rules are tried in the order written, and a rule whose zones do not hold
//! the name is skipped; in a rule, the first policy matching the client and
//! the query type decides. `allow` ends the search (the query goes on);
//! a rule where no policy matches passes on to the next rule; no decision
//! at all means allow (CoreDNS `plugin/acl`). A policy without `type`
//! matches every type, without `net` every address (IPv4 and IPv6); `*`
//! in either section means all, and the rest of that section is not read.

use std::any::Any;
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::{Name, RecordType};

use crate::corefile::args::{lower_wire, zone, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Word;
use crate::corefile::problem::ConfigError;
use crate::query::plugins::chain::Setup;

/// What a policy does with the queries it matches: what the guard says.
pub use crate::query::plugins::guard::Judgement as AclAction;

/// One policy line: `ACTION [type QTYPE...] [net CIDR...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclPolicy {
    pub action: AclAction,
    /// `None`: every type (`type *`, or no `type` section).
    pub types: Option<Vec<u16>>,
    /// `(network, prefix length)`; no `net` section and `net *` hold
    /// `0.0.0.0/0` and `::/0`.
    pub nets: Vec<(IpAddr, u8)>,
}

/// One `acl` directive: the zones it judges and its policies in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclRule {
    pub zones: Vec<Name>,
    /// Each zone's [`lower_wire`] form, for wire-name checks.
    pub wires: Vec<Box<[u8]>>,
    pub policies: Vec<AclPolicy>,
}

impl AclPolicy {
    /// Whether the policy applies to `client` asking `qtype`.
    pub fn matches(&self, client: IpAddr, qtype: u16) -> bool {
        let typed = self.types.as_ref().is_none_or(|t| t.contains(&qtype));
        typed && self.nets.iter().any(|(net, len)| in_net(client, *net, *len))
    }
}

/// Whether `ip` is in `net/len` (an IPv4-mapped IPv6 client counts as its
/// IPv4 address).
fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip.to_canonical(), net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len.min(32))).unwrap_or(0);
            a.to_bits() & mask == n.to_bits() & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len.min(128))).unwrap_or(0);
            a.to_bits() & mask == n.to_bits() & mask
        }
        _ => false,
    }
}

/// Every address, IPv4 and IPv6.
fn everyone() -> Vec<(IpAddr, u8)> {
    vec![(IpAddr::from([0u8; 4]), 0), (IpAddr::from([0u8; 16]), 0)]
}

/// A block's `acl` directives, in the order written: one guard that tries
/// them in turn.
#[derive(Debug, Clone)]
pub struct AclConfig(pub Vec<AclRule>);

/// The block's rules so far (`earlier`, the block's `acl` setup if it has
/// one) with `d`'s after them; `block_zones` are the server block's.
pub fn parse(
    d: &Directive,
    (block_zones, earlier): (&[Name], Option<&Arc<dyn Setup>>),
    errors: &mut Vec<ConfigError>,
) -> Arc<dyn Setup> {
    let mut rules = listed(earlier);
    rules.push(rule(d, block_zones, errors));
    Arc::new(AclConfig(rules))
}

/// The rules of a block's `acl` setup (none without one).
pub fn listed(setup: Option<&Arc<dyn Setup>>) -> Vec<AclRule> {
    let config = setup.and_then(|s| (&**s as &dyn Any).downcast_ref::<AclConfig>());
    config.map(|c| c.0.clone()).unwrap_or_default()
}

/// Parses one `acl` directive.
fn rule(d: &Directive, block_zones: &[Name], errors: &mut Vec<ConfigError>) -> AclRule {
    let mut zones: Vec<Name> = d.args.iter().filter_map(|w| zone(w, errors)).collect();
    if zones.is_empty() {
        zones = block_zones.to_vec();
    }
    let policies = d
        .options
        .iter()
        .filter_map(|line| policy(&Args::from(line), errors))
        .collect();
    let wires = zones.iter().map(lower_wire).collect();
    AclRule { zones, wires, policies }
}

/// The values after `type` (`types`) or `net` into `p`; `*` stands for
/// all and ends the section.
fn section_values(p: &mut AclPolicy, types: bool, tokens: &[Word], errors: &mut Vec<ConfigError>) -> Option<()> {
    for w in tokens {
        let t = w.text.as_str();
        let ok = match (types, t) {
            (true, "*") => {
                p.types = None;
                break;
            }
            (false, "*") => {
                p.nets = everyone();
                break;
            }
            (true, _) => qtype(t).map(|q| p.types.iter_mut().for_each(|v| v.push(q))),
            (false, _) => cidr(t).map(|n| p.nets.push(n)),
        };
        if ok.is_none() {
            let what = if types { "a query type" } else { "an address or CIDR" };
            errors.push(ConfigError::new(&w.pos, format!("acl: '{t}' is not {what}")));
            return None;
        }
    }
    Some(())
}

/// One policy line.
fn policy(a: &Args<'_>, errors: &mut Vec<ConfigError>) -> Option<AclPolicy> {
    let action = match a.name.text.to_ascii_lowercase().as_str() {
        "allow" => AclAction::Allow,
        "block" => AclAction::Block,
        "filter" => AclAction::Filter,
        "drop" => AclAction::Drop,
        _ => {
            errors.push(ConfigError::new(
                a.pos(),
                format!(
                    "acl: unknown action '{}' (supported: allow, block, filter, drop)",
                    a.name.text
                ),
            ));
            return None;
        }
    };
    let mut p = AclPolicy {
        action,
        types: Some(Vec::new()),
        nets: Vec::new(),
    };
    let (mut typed, mut netted) = (false, false);
    let mut rest = a.args;
    while let Some((head, tail)) = rest.split_first() {
        let section = head.text.to_ascii_lowercase();
        let len = tail.iter().position(|w| is_section(&w.text)).unwrap_or(tail.len());
        let (tokens, after) = tail.split_at(len);
        rest = after;
        if section != "type" && section != "net" {
            errors.push(ConfigError::new(
                &head.pos,
                format!("acl: unexpected '{}': expected 'type' or 'net'", head.text),
            ));
            return None;
        }
        if tokens.is_empty() {
            errors.push(ConfigError::new(&head.pos, format!("acl: no value after '{section}'")));
            return None;
        }
        section_values(&mut p, section == "type", tokens, errors)?;
        typed |= section == "type";
        netted |= section == "net";
    }
    if !typed {
        p.types = None;
    }
    if !netted {
        p.nets = everyone();
    }
    Some(p)
}

fn is_section(text: &str) -> bool {
    text.eq_ignore_ascii_case("type") || text.eq_ignore_ascii_case("net")
}

/// A query type as CoreDNS spells it (upper case: `A`, `AAAA`, `ANY`;
/// `IXFR`, which hickory does not parse, as its README restricts transfers).
fn qtype(t: &str) -> Option<u16> {
    if t == "IXFR" {
        return Some(u16::from(RecordType::IXFR));
    }
    match t.parse::<RecordType>() {
        Ok(RecordType::Unknown(_)) | Err(_) => None,
        Ok(rt) => Some(u16::from(rt)),
    }
}

/// `ADDRESS` (a /32 or /128) or `NETWORK/LEN`; host bits are ignored.
fn cidr(t: &str) -> Option<(IpAddr, u8)> {
    let (ip, len) = t.split_once('/').unwrap_or((t, ""));
    let ip: IpAddr = ip.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = if len.is_empty() { max } else { len.parse::<u8>().ok()? };
    (len <= max).then_some((ip, len))
}

#[cfg(test)]
mod tests;
