//! Route a query to the server block with the longest matching zone, then
//! through that block's plugins in CoreDNS's order (its `plugin.cfg`, the
//! directive table's): the chain's early plugins (`query::plugins::chain`),
//! the plugin after the answer (around the rest: it looks at their result), `rewrite`
//! (the question changed here, the answer changed back), `autopath`, the guard (on the rewritten name, and on every
//! name `autopath` tries), then `cache` with the plugins answering data:
//! the chain's before the cluster (`template`, `hosts`, Services' external
//! addresses, zone files), `kubernetes`, `forward` (behind `cache`), the chain's last plugins; `bufsize` rides along in the answer. A CNAME whose
//! target lies outside (an ExternalName Service, a Service's external
//! ingress hostname, a `template` or `rewrite cname` answer) has the target's
//! records looked up and appended. A name no plugin takes is REFUSED: we
//! are not a server for it. A class other than IN goes to `forward` (with
//! `cache`) only.
//!
//! `Router::answer` reads as that order: `enter` (the block, `log`,
//! `bufsize`), `early` (the chain's early plugins), `rewrite`, the guard's
//! verdict, `autopath` or `through` (the early plugins that ask again, `loop`, `template`, the chain's before
//! the cluster (zone files too), `kubernetes`, `forward` with `cache`),
//! then `settle` (the outside CNAME target, the plugin after the answer, `rewrite` reverted,
//! `loadbalance`). What a block holds is in `route/block.rs`; the plugin
//! steps in their order in `route/order.rs`; the guard's gates (on a
//! decoded name, or on wire bytes before a replay) in `route/guard.rs`;
//! `autopath`'s search walk (walked on by the forwarding task when a name
//! it forwarded comes back NXDOMAIN) in `route/autopath.rs`; the lookups
//! of a second name (an outside CNAME target, the plugin after the answer's) in
//! `route/chase.rs`; which questions a
//! cache-hit replay may skip routing for in `route/shortcut.rs`; the short way for the
//! cluster zone's common answers, written straight from the snapshot when
//! no plugin of the block needs their records, in `route/direct.rs` (tried
//! first by [`super::Handler`]).

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{DNSClass, Name};

use super::plugins::rewrite::Revert;
use super::reply::Answer;
use super::settle;
use crate::metrics::ZoneStats;
use block::UNHANDLED;

mod asker;
pub mod autopath;
mod block;
mod chase;
mod direct;
mod guard;
mod notify;
mod order;
mod routed;
mod router;
mod shortcut;
#[cfg(test)]
mod tests;
pub mod view;

pub(crate) use crate::query::plugins::guard::{Asked, WireName};
pub(crate) use guard::{admission, Admission};

pub use asker::Asker;
pub use block::{Block, LoopProbe};
pub use routed::{Balance, Onward, Routed};
pub use router::Router;

impl Router {
    /// A router over `blocks` with the default TCP limits and in-flight
    /// cap (tests, benchmarks, the fuzzer).
    pub fn new(blocks: Vec<Block>, stats: Vec<Arc<ZoneStats>>) -> Router {
        Router {
            views: blocks.iter().any(|b| b.view.is_some()),
            subnets: blocks
                .iter()
                .any(|b| b.view.is_some() || b.metadata.as_ref().is_some_and(|m| m.reads_subnet())),
            blocks,
            epoch: 0,
            stats,
            tcp: Default::default(),
            in_flight: crate::query::limits::IN_FLIGHT,
            proxy: None,
            taps: Vec::new(),
            traces: Vec::new(),
            tsig: None,
        }
    }

    /// The `dnstap` taps of the block of stats slot `zone`.
    pub fn tap(&self, zone: u16) -> Option<&Arc<crate::dnstap::Taps>> {
        self.taps.get(usize::from(zone)).and_then(Option::as_ref)
    }

    /// The `trace` tracer of the block of stats slot `zone`.
    pub fn trace(&self, zone: u16) -> Option<&Arc<crate::query::plugins::trace::Tracer>> {
        self.traces.get(usize::from(zone)).and_then(Option::as_ref)
    }

    /// What memo entries are checked against: the config epoch plus the
    /// chain's memoized data changes (`chain::changes`), the sum of the stores' generations (it changes
    /// whenever any store publishes), and the store when there is exactly
    /// one (whose change table then keeps entries a publish did not touch).
    pub fn memo_view(&self) -> super::replay::memo::View<'_> {
        let mut stores = self.blocks.iter().filter_map(|b| b.cluster.as_ref()).map(|c| &*c.store);
        let first = stores.next();
        let mut view = super::replay::memo::View {
            epoch: self.epoch.wrapping_add(super::plugins::chain::changes()),
            generation: first.map_or(0, |s| s.generation()),
            store: first,
        };
        for other in stores.filter(|s| first.is_some_and(|f| !std::ptr::eq(f, *s))) {
            view.generation = view.generation.wrapping_add(other.generation());
            view.store = None;
        }
        view
    }

    /// Whether any block logs queries (so the clock is read per query
    /// only when a log line needs the duration).
    pub fn logs(&self) -> bool {
        self.blocks.iter().any(|b| b.log.is_some())
    }

    /// The block with the longest zone containing `qname`, and that
    /// zone's stats slot.
    pub(crate) fn block<N: Asked + Copy>(&self, qname: N) -> Option<(&Block, u16)> {
        // Zones holding the name are suffixes of it: the longest in bytes
        // has the most labels.
        self.blocks
            .iter()
            .filter_map(|b| {
                (b.zones.iter().zip(&b.zone_wires).zip(&b.zone_stats))
                    .filter(|((z, w), _)| qname.under(z, w))
                    .map(|((_, w), slot)| (w.len(), b, *slot))
                    .max_by_key(|(n, _, _)| *n)
            })
            .max_by_key(|(n, _, _)| *n)
            .map(|(_, b, slot)| (b, slot))
    }

    /// The block serving `query` from `asker` when blocks have views
    /// ([`view`]): of those with the longest zone holding the name whose
    /// view passes, the first written; with its zone's stats slot.
    pub(crate) fn viewed(&self, query: &Query, asker: &Asker) -> Option<(&Block, u16)> {
        let (mut facts, mut best) = (None, None::<(usize, &Block, u16)>);
        for block in &self.blocks {
            let Some((n, slot)) = block.longest(query.name()) else {
                continue;
            };
            let own = (block.view.as_deref(), block.metadata.as_deref());
            // an earlier block serving a zone as long wins
            if best.is_none_or(|(m, _, _)| m < n) && view::admits(own, &mut facts, query, asker) {
                best = Some((n, block, slot));
            }
        }
        best.map(|(_, b, slot)| (b, slot))
    }

    /// `None`: no block keeps a transferred zone named `zone` (the NOTIFY
    /// is answered NOTIMP, as any other opcode); else whether it came
    /// from one of the zone's primaries (answered) or not (dropped).
    pub fn notified(&self, zone: &Name, from: IpAddr) -> Option<bool> {
        let (block, _) = self.block(zone)?;
        block.plugins.notified(zone, from)
    }

    /// A rejected request's answer, or `None` for a NOTIFY dropped (see
    /// `route/notify.rs`).
    pub fn rejected(
        &self,
        reject: super::request::Triage,
        from: IpAddr,
        answer: &mut Answer,
    ) -> Option<notify::Echoed> {
        notify::rejected(reject, answer, |zone| self.notified(zone, from))
    }

    /// Counts a request by its client's namespace in `clients` (when pods
    /// are verified): the address is resolved once per worker (`slots`)
    /// and generation.
    pub fn count_client(&self, clients: &crate::metrics::Clients, ip: IpAddr, slots: &mut crate::metrics::ClientSlots) {
        if !self.counts_clients() {
            return;
        }
        let view = self.memo_view();
        let generation = view.generation.wrapping_add(view.epoch << 40);
        if let Some(slot) = slots.slot(generation, ip, clients, || self.client_namespace(ip)) {
            clients.count_slot(slot);
        }
    }

    /// Whether requests are counted by client namespace: a block watches
    /// pods (`pods verified`).
    pub fn counts_clients(&self) -> bool {
        self.blocks
            .iter()
            .filter_map(|b| b.cluster.as_ref())
            .any(|c| c.cfg.pods == crate::kubernetes::PodMode::Verified)
    }

    /// The namespace of the one running pod with `ip`, when a block
    /// watches pods (`pods verified`).
    pub fn client_namespace(&self, ip: std::net::IpAddr) -> Option<Arc<str>> {
        self.blocks
            .iter()
            .filter_map(|b| b.cluster.as_ref())
            .find(|c| c.cfg.pods == crate::kubernetes::PodMode::Verified)
            .and_then(|c| c.store.load().pod_namespace(ip))
    }

    /// Answers `query` from `asker` into `out`, or says it must be
    /// forwarded: the steps of the order in this file's head, in turn.
    pub fn answer(&self, query: &Query, asker: Asker, out: &mut Answer) -> Routed<'_> {
        match self.enter(query, || asker, out) {
            Some(block) => self.answer_in(block, query, asker, out),
            None => Routed::Done,
        }
    }

    /// [`Router::answer`] in the block [`Router::enter`] found for `query`.
    pub fn answer_in<'a>(&'a self, block: &'a Block, query: &Query, asker: Asker, out: &mut Answer) -> Routed<'a> {
        if let Some(routed) = order::early(block, query, asker, out) {
            return routed;
        }
        let rewritten = match block.rewrite.as_ref().map(|rw| rw.apply(query)).transpose() {
            Ok(r) => r.flatten(),
            Err(e) => {
                tracing::debug!(target: "rewrite", "{e}");
                out.error(ResponseCode::ServFail);
                return Routed::Done;
            }
        };
        let asked = rewritten.as_ref().map_or(query, |(q, _)| q);
        // The guard judges the name `rewrite` made (GHSA-c9v3-4pv7-87pr), before `cache`.
        let verdict = guard::judge(block, asked.name(), u16::from(asked.query_type()), asker.client);
        let routed = if let Some(denied) = guard::deny(verdict, out) {
            denied
        } else if asked.query_class() != DNSClass::IN {
            order::other_class(block, asked, asker, out)
        } else {
            match self.autopath(block, asked, asker, out) {
                Some(routed) => routed,
                None => self.through(block, asked, asker, out),
            }
        };
        if rewritten.is_some() && block.plugins.guard.is_some() {
            out.tags.memoizable = false; // the replay's check sees the client's name, not this one
        }
        // An ACME challenge presented later must be seen: not memoized.
        out.tags.memoizable = out.tags.memoizable && !block.plugins.may_answer_later(query);
        self.settle(block, query, asker, rewritten, routed, out)
    }

    /// The block serving `query`, with its zone's stats slot, `bufsize` and
    /// `log` style set in `out`; `None` (REFUSED written): no block does.
    /// `asker` is called only when blocks have views.
    pub fn enter(&self, query: &Query, asker: impl FnOnce() -> Asker, out: &mut Answer) -> Option<&Block> {
        let qname = query.name();
        let found = if self.views {
            self.viewed(query, &asker())
        } else {
            self.block(qname)
        };
        let Some((block, slot)) = found else {
            out.error(UNHANDLED);
            return None;
        };
        out.tags.zone = slot;
        out.tags.bufsize = block.bufsize;
        if block.nsid.is_some() {
            out.tags.nsid = block.nsid.clone();
        }
        out.tags.log = block
            .log
            .as_ref()
            .filter(|l| l.names.is_empty() || l.names.iter().any(|n| n.zone_of(qname)))
            .map(|l| l.style);
        Some(block)
    }

    /// What follows the plugins: a CNAME's target outside has its records
    /// chased, the plugin after the answer amends, `rewrite` is reverted (now, or by the
    /// forwarding task) and `loadbalance` shuffles. `query` is the one
    /// asked, before any `rewrite`.
    fn settle<'a>(
        &'a self,
        block: &'a Block,
        query: &Query,
        asker: Asker,
        rewritten: Option<(Query, Revert)>,
        routed: Routed<'a>,
        out: &mut Answer,
    ) -> Routed<'a> {
        if let (Some((_, revert)), Routed::Done) = (&rewritten, &routed) {
            if let Some(target) = revert.cname(out) {
                out.tags.outside = Some(target);
            }
        }
        let asked = rewritten.as_ref().map_or(query, |(q, _)| q);
        let routed = match (routed, out.tags.outside.take()) {
            (Routed::Done, Some(target)) => self.outside(block, target, asked, asker, out),
            (routed, _) => routed,
        };
        let mut routed = self.after_answer(block, asked, asker, routed, out);
        let mut revert = None;
        if let Some((q, r)) = rewritten {
            match &mut routed {
                Routed::Done => revert = Some(r),
                Routed::Forward(onward) => {
                    let metadata = block.metadata.as_ref().filter(|m| m.covers(query.name()));
                    onward.left.metadata = metadata.cloned();
                    onward.left.rewrite = Some(Box::new((q, r)));
                }
                Routed::Drop => {}
            }
        }
        if matches!(routed, Routed::Done) {
            // the step the forwarding task does to an upstream's answer
            // (`weighted` reorders A, AAAA and SRV answers only)
            let lb = block.loadbalance.as_deref().filter(|lb| lb.touches(query.query_type()));
            out.tags.memoizable &= !settle::apply(out, lb, None, revert.as_ref());
            if block.minimal {
                settle::minimal::minimize(out);
            }
            if block.header.is_some() && !out.tags.denied {
                // after the guard and `cache`, where CoreDNS runs it; never replayed
                (out.tags.header, out.tags.memoizable) = (block.header.clone(), false);
            }
        } else if let Routed::Forward(onward) = &mut routed {
            (onward.left.minimal, onward.left.header) = (block.minimal, block.header.clone());
        }
        // `dnssec` signs what the block answered, as its place after `minimal` does in CoreDNS
        let signer = block.plugins.signer.as_ref();
        match (signer.filter(|s| asker.dnssec_ok && s.signs(query.name())), &mut routed) {
            (Some(signer), Routed::Done) => signer.sign(query, out),
            (Some(signer), Routed::Forward(onward)) => onward.left.sign = Some(signer.clone()),
            _ => {}
        }
        routed
    }
}
