//! CoreDNS's `acl` counters of one server block ([`AclStats`]): requests
//! blocked, filtered and dropped by the zone of the rule that denied them,
//! and requests that passed the block's `acl`, in per-thread stripes
//! ([`Slots`]) indexed by slots fixed when the configuration is built, so
//! a query neither looks a label up nor allocates. Blocks sharing a
//! listener share the `server` label: their series are summed at a scrape.

use std::fmt::Write as _;

use crate::metrics::catalogue::{self as c, Family};
use crate::metrics::exposed::Exposed;
use crate::metrics::Slots;

/// Its families, as the catalogue lists them: the denials in [`Denial`]
/// order, then the allowed requests.
const FAMILIES: [Family; 4] = [c::ACL_BLOCKED, c::ACL_FILTERED, c::ACL_DROPPED, c::ACL_ALLOWED];

/// The denial each of the first [`FAMILIES`] counts.
const DENIALS: [Denial; 3] = [Denial::Blocked, Denial::Filtered, Denial::Dropped];

/// What a denial did (the family it counts in), in slot order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    Blocked,
    Filtered,
    Dropped,
}

/// The `coredns_acl_*` counters of one server block with an `acl`.
#[derive(Debug)]
pub struct AclStats {
    pub server: String,
    /// `zone` label values, each once.
    zones: Vec<String>,
    /// Per rule, per zone of it: its index in `zones`.
    slots: Vec<Vec<usize>>,
    /// Slot 0: allowed; then 3 per zone label, in [`Denial`] order.
    counts: Slots,
}

impl AclStats {
    /// Counters for `rules`, each given as its zones' labels in order.
    pub fn new(server: &str, rules: &[Vec<String>]) -> AclStats {
        let mut zones: Vec<String> = Vec::new();
        let slots = rules
            .iter()
            .map(|rule| {
                rule.iter()
                    .map(|z| {
                        zones.iter().position(|known| known == z).unwrap_or_else(|| {
                            zones.push(z.clone());
                            zones.len() - 1
                        })
                    })
                    .collect()
            })
            .collect();
        let counts = Slots::new(1 + 3 * zones.len());
        AclStats {
            server: server.to_string(),
            zones,
            slots,
            counts,
        }
    }

    /// A request that passed the `acl` without a denial.
    #[inline]
    pub fn allowed(&self) {
        self.counts.bump(0);
    }

    /// A request denied by zone `zone` of rule `rule`.
    pub fn denied(&self, rule: usize, zone: usize, how: Denial) {
        if let Some(z) = self.slots.get(rule).and_then(|r| r.get(zone)) {
            self.counts.bump(1 + 3 * z + how as usize);
        }
    }
}

impl Exposed for AclStats {
    fn families(&self) -> &'static [Family] {
        &FAMILIES
    }

    /// Each denial family by zone, then the allowed one; blocks sharing a
    /// listener share the `server` label, and `render` sums their series.
    fn series(&self, i: usize, s: &mut String) {
        let server = &self.server;
        match (DENIALS.get(i), FAMILIES.get(i)) {
            (Some(how), Some(family)) => {
                for (z, zone) in self.zones.iter().enumerate() {
                    let n = self.counts.get(1 + 3 * z + *how as usize);
                    let _ = writeln!(
                        s,
                        "{}{{server=\"{server}\",zone=\"{zone}\",view=\"\"}} {n}",
                        family.name
                    );
                }
            }
            (None, Some(family)) => {
                let n = self.counts.get(0);
                let _ = writeln!(s, "{}{{server=\"{server}\",view=\"\"}} {n}", family.name);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_one_server_sum_and_rules_share_a_zone_label() {
        let rules = |zones: &[&str]| vec![zones.iter().map(|z| z.to_string()).collect::<Vec<_>>()];
        let a = AclStats::new("dns://:53", &[rules(&["a.", "b."]), rules(&["b."])].concat());
        let b = AclStats::new("dns://:53", &rules(&["b."]));
        a.denied(0, 1, Denial::Blocked);
        a.denied(1, 0, Denial::Blocked);
        a.denied(0, 0, Denial::Dropped);
        a.denied(7, 0, Denial::Dropped); // no such rule: ignored
        b.denied(0, 0, Denial::Blocked);
        a.allowed();
        b.allowed();
        let mut s = String::new();
        let all: [std::sync::Arc<dyn Exposed>; 2] = [std::sync::Arc::new(a), std::sync::Arc::new(b)];
        crate::metrics::exposed::render(&all, &mut s);
        for line in [
            "coredns_acl_blocked_requests_total{server=\"dns://:53\",zone=\"a.\",view=\"\"} 0",
            "coredns_acl_blocked_requests_total{server=\"dns://:53\",zone=\"b.\",view=\"\"} 3",
            "coredns_acl_dropped_requests_total{server=\"dns://:53\",zone=\"a.\",view=\"\"} 1",
            "coredns_acl_filtered_requests_total{server=\"dns://:53\",zone=\"b.\",view=\"\"} 0",
            "coredns_acl_allowed_requests_total{server=\"dns://:53\",view=\"\"} 2",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} missing from:\n{s}");
        }
    }
}
