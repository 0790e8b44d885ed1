//! `acl`: the block's guard ([`Guard`]), judging one name, client and
//! type the same way on a decoded name (the full path) and on the name's
//! wire bytes (before a memo or cache-hit replay, without decoding or
//! allocating).
//!
//! A block's `acl` directives are tried in order; one whose zones do not
//! hold the name is skipped, and in one that does, the first policy that
//! matches the client and type decides (`allow` ends the search); a
//! directive where none matches passes on to the next; no decision means
//! allow. The router answers a denial (`Judgement`). Each judgement counts
//! in the block's `coredns_acl_*` ([`stats`]); an admission before a
//! replay only when the replay answers ([`Guard::allowed`]).

pub mod print;
pub mod setup;
mod stats;

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::Name;

use crate::corefile::words::Block;
use crate::metrics::exposed::Exposed;
use crate::query::plugins::chain::Setup;
use crate::query::plugins::guard::{Asked, Guard, Judgement};
use setup::{AclAction, AclConfig, AclRule};
pub use stats::FAMILIES;
use stats::{AclStats, Denial};

/// What `rules` decided, and which rule and zone of it (the longest
/// holding the name, CoreDNS's `zone` label) when it was a denial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decision {
    action: AclAction,
    rule: usize,
    zone: usize,
}

/// What `rules` decide for `client` asking `qtype` of `name`.
fn judge<N: Asked + ?Sized>(rules: &[AclRule], name: &N, qtype: u16, client: IpAddr) -> AclAction {
    decide(rules, name, qtype, client).action
}

/// [`judge`], with where a denial came from.
fn decide<N: Asked + ?Sized>(rules: &[AclRule], name: &N, qtype: u16, client: IpAddr) -> Decision {
    for (r, rule) in rules.iter().enumerate() {
        let zones = || rule.zones.iter().zip(&rule.wires).enumerate();
        if !zones().any(|(_, (z, w))| name.under(z, w)) {
            continue;
        }
        if let Some(p) = rule.policies.iter().find(|p| p.matches(client, qtype)) {
            let zone = match p.action {
                AclAction::Allow => 0,
                // zones holding the name: the longest in bytes has the most labels
                _ => (zones().filter(|(_, (z, w))| name.under(z, w)))
                    .max_by_key(|(_, (_, w))| w.len())
                    .map_or(0, |(i, _)| i),
            };
            return Decision {
                action: p.action,
                rule: r,
                zone,
            };
        }
    }
    Decision {
        action: AclAction::Allow,
        rule: 0,
        zone: 0,
    }
}

/// A block's `acl` directives with their counters.
struct Acl {
    rules: Vec<AclRule>,
    stats: Arc<AclStats>,
}

impl Guard for Acl {
    fn judge(&self, name: &Name, qtype: u16, client: IpAddr) -> Judgement {
        let decision = decide(&self.rules, &name, qtype, client);
        let how = match decision.action {
            AclAction::Allow => {
                self.stats.allowed();
                return decision.action;
            }
            AclAction::Block => Denial::Blocked,
            AclAction::Filter => Denial::Filtered,
            AclAction::Drop => Denial::Dropped,
        };
        self.stats.denied(decision.rule, decision.zone, how);
        decision.action
    }

    fn admits(&self, name: &dyn Asked, qtype: u16, client: IpAddr) -> bool {
        judge(&self.rules, name, qtype, client) == AclAction::Allow
    }

    #[inline]
    fn allowed(&self) {
        self.stats.allowed();
    }

    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        Some(self.stats.clone())
    }
}

impl Setup for AclConfig {
    fn name(&self) -> &'static str {
        "acl"
    }

    fn guard(&self, server: &str) -> Option<Box<dyn Guard>> {
        let zones: Vec<Vec<String>> = (self.0.iter())
            .map(|r| r.zones.iter().map(|z| z.to_string()).collect())
            .collect();
        Some(Box::new(Acl {
            rules: self.0.clone(),
            stats: Arc::new(AclStats::new(server, &zones)),
        }))
    }

    fn print(&self, b: &mut Block) {
        print::acl(b, &self.0);
    }
}

#[cfg(test)]
mod tests;
