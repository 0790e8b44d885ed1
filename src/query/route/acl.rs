//! `acl` on the query path: the decision for one name, client and type,
//! taken the same way on a decoded name (the full path) and on the name's
//! wire bytes (before a memo or cache-hit replay, without decoding or
//! allocating), and the reply a denial writes.
//!
//! A block's `acl` directives are tried in order; one whose zones do not
//! hold the name is skipped, and in one that does, the first policy that
//! matches the client and type decides (`allow` ends the search); a
//! directive where none matches passes on to the next; no decision means
//! allow. A blocked query is REFUSED with extended error 15 (Blocked), a
//! filtered one NOERROR without records with 17 (Filtered), both with no
//! extra text and only to EDNS clients; a dropped one gets no reply.
//! Each judgement counts in the block's `coredns_acl_*` ([`tally`]); an
//! admission before a replay only when the replay answers
//! ([`Admission::credit`]).

pub mod print;
pub mod setup;

use std::net::IpAddr;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::{Asker, Block, Routed, Router};
#[cfg(doc)]
use crate::corefile::args::lower_wire;
use crate::metrics::{AclStats, Denial};
use crate::query::reply::Answer;
use crate::query::route::acl::setup::{AclAction, AclRule};

/// RFC 8914 info codes.
const EDE_BLOCKED: u16 = 15;
const EDE_FILTERED: u16 = 17;

/// A question name the router can place under a zone: decoded, or as the
/// client's wire bytes.
pub(crate) trait Asked: Copy {
    /// Whether the name is `zone` or below it (ASCII case ignored); `wire`
    /// is the zone's [`lower_wire`] form.
    fn under(self, zone: &Name, wire: &[u8]) -> bool;
}

impl Asked for &Name {
    fn under(self, zone: &Name, _wire: &[u8]) -> bool {
        zone.zone_of(self)
    }
}

/// A question name in wire form, uncompressed, as [`crate::query::request::parse`]
/// accepted it (labels of at most 63 bytes, ending in the root label).
#[derive(Clone, Copy)]
pub(crate) struct WireName<'a>(pub &'a [u8]);

impl Asked for WireName<'_> {
    /// The zone's bytes must end the name and start at one of its labels:
    /// a walk over the name's length bytes, then one comparison (length
    /// bytes are below 64, never letters, so ignoring case leaves them be).
    fn under(self, _zone: &Name, wire: &[u8]) -> bool {
        if wire.len() == 1 {
            return true; // the root: every name ends in its label
        }
        let name = self.0;
        let Some(at) = name.len().checked_sub(wire.len()) else {
            return false;
        };
        let mut label = 0;
        while label < at {
            label += usize::from(name[label]) + 1;
        }
        label == at && name[at..].eq_ignore_ascii_case(wire)
    }
}

/// What `rules` decided, and which rule and zone of it (the longest
/// holding the name, CoreDNS's `zone` label) when it was a denial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub action: AclAction,
    rule: usize,
    zone: usize,
}

/// What `rules` decide for `client` asking `qtype` of `name`.
pub(crate) fn judge<N: Asked>(rules: &[AclRule], name: N, qtype: u16, client: IpAddr) -> AclAction {
    decide(rules, name, qtype, client).action
}

/// [`judge`], with where a denial came from.
pub(crate) fn decide<N: Asked>(rules: &[AclRule], name: N, qtype: u16, client: IpAddr) -> Verdict {
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
            return Verdict {
                action: p.action,
                rule: r,
                zone,
            };
        }
    }
    Verdict {
        action: AclAction::Allow,
        rule: 0,
        zone: 0,
    }
}

/// Counts `verdict` in `block`'s `coredns_acl_*` (when it has an `acl`).
pub(super) fn tally(block: &Block, verdict: Verdict) {
    let Some(stats) = &block.acl_stats else {
        return;
    };
    let how = match verdict.action {
        AclAction::Allow => return stats.allowed(),
        AclAction::Block => Denial::Blocked,
        AclAction::Filter => Denial::Filtered,
        AclAction::Drop => Denial::Dropped,
    };
    stats.denied(verdict.rule, verdict.zone, how);
}

/// What [`Router::admits`] found: whether the client may be answered
/// without the full path, and the block's `acl` counters to credit when it
/// is (none when the block has no `acl`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Admission<'a> {
    pub allowed: bool,
    stats: Option<&'a AclStats>,
}

impl Admission<'_> {
    /// No `acl` stands in the way and none counts.
    const OPEN: Admission<'static> = Admission {
        allowed: true,
        stats: None,
    };

    /// Counts a reply given without the full path (a memo or cache-hit
    /// replay, the direct writer, `dns64`'s A question asked by the
    /// forwarding task) as allowed by the block's `acl`: one per-thread
    /// counter store.
    #[inline]
    pub(crate) fn credit(self) {
        if let Some(stats) = self.stats.filter(|_| self.allowed) {
            stats.allowed();
        }
    }
}

/// Whether `block`'s `acl` lets `client` ask `qtype` of `name` (open when
/// it has none): [`Router::admits`] in a block already chosen.
pub(crate) fn admission<'a, N: Asked>(block: &'a Block, name: N, qtype: u16, client: IpAddr) -> Admission<'a> {
    if block.acl.is_empty() {
        return Admission::OPEN;
    }
    Admission {
        allowed: judge(&block.acl, name, qtype, client) == AclAction::Allow,
        stats: block.acl_stats.as_deref(),
    }
}

/// Writes what `action` answers into `out`: `None` when the query goes on.
pub(super) fn deny<'a>(action: AclAction, out: &mut Answer) -> Option<Routed<'a>> {
    let (rcode, ede) = match action {
        AclAction::Allow => return None,
        AclAction::Drop => return Some(Routed::Drop),
        AclAction::Block => (ResponseCode::Refused, EDE_BLOCKED),
        AclAction::Filter => (ResponseCode::NoError, EDE_FILTERED),
    };
    out.error(rcode);
    (out.ede, out.tags.denied) = (Some((ede, String::new())), true);
    Some(Routed::Done)
}

impl Router {
    /// Whether `client` may ask `qtype` of `name` (decoded, or the wire
    /// bytes of a plain query) before any plugin changes the question: what allows a memo or cache-hit
    /// replay, or the cluster's direct writer, for this query. Cheap when
    /// no block has an `acl`; never allocates. Counts nothing: the caller
    /// credits the admission when it answers without the full path
    /// ([`Admission::credit`]), which else counts ([`Router::answer`]).
    pub(crate) fn admits<N: Asked>(&self, name: N, qtype: u16, client: IpAddr) -> Admission<'_> {
        if self.blocks.iter().all(|b| b.acl.is_empty()) {
            return Admission::OPEN;
        }
        match self.block(name) {
            Some((block, _)) => admission(block, name, qtype, client),
            None => Admission::OPEN, // no block: REFUSED by the full path
        }
    }

    /// The `transfer` of the block serving zone `zone`, with its zone's
    /// stats, for a request (AXFR, IXFR) from `client` the block's `acl`
    /// lets through, as in CoreDNS's order (a denied one takes the query
    /// path, which answers it as the acl says).
    pub(crate) fn transfer(&self, zone: &Name, qtype: RecordType, client: IpAddr) -> crate::query::transfer::Found {
        let admitted = self.admits(zone, u16::from(qtype), client);
        let (block, slot) = self.block(zone).filter(|_| admitted.allowed)?;
        let transfer = block.transfer.clone()?;
        admitted.credit();
        Some((transfer, self.stats.get(usize::from(slot)).cloned()))
    }

    /// A second name asked on the client's behalf (an `autopath` search
    /// name, an outside CNAME target, `dns64`'s A question) through
    /// `home`, the block that serves it: judged by `home`'s `acl` (and
    /// `entry`'s, the block the client asked, when it is another), then
    /// its plugins. Its answer is then never memoized when an `acl` judged
    /// it: the memo's check before a replay sees only the client's name.
    pub(crate) fn guarded<'a>(
        &'a self,
        entry: &Block,
        home: &'a Block,
        query: &Query,
        asker: Asker,
        out: &mut Answer,
    ) -> Routed<'a> {
        let qtype = u16::from(query.query_type());
        let mut verdict = decide(&home.acl, query.name(), qtype, asker.client);
        tally(home, verdict);
        if verdict.action == AclAction::Allow && !std::ptr::eq(entry, home) {
            verdict = decide(&entry.acl, query.name(), qtype, asker.client);
            tally(entry, verdict);
        }
        let judged = !home.acl.is_empty() || !entry.acl.is_empty();
        let routed = deny(verdict.action, out).unwrap_or_else(|| self.through(home, query, asker, out));
        if judged {
            out.tags.memoizable = false;
        }
        routed
    }
}

#[cfg(test)]
mod tests;
