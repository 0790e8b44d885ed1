//! The block's guard at the router's gates ([`Guard`]): its judgement of
//! the name a rewrite left and of every second name asked on the
//! client's behalf, its admission of the name as asked before a memo or
//! cache-hit replay ([`Router::admits`]), and the reply a denial writes.
//! A blocked query is REFUSED with extended error 15 (Blocked), a
//! filtered one NOERROR without records with 17 (Filtered), both with no
//! extra text and only to EDNS clients; a dropped one gets no reply. A
//! block without a guard costs each gate one empty check.

use std::net::IpAddr;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::asker::Asker;
use super::block::Block;
use super::routed::Routed;
use super::router::Router;
use crate::query::plugins::guard::{Asked, Guard, Judgement};
use crate::query::reply::Answer;

/// RFC 8914 info codes.
const EDE_BLOCKED: u16 = 15;
const EDE_FILTERED: u16 = 17;

/// What `block`'s guard says to `client` asking `qtype` of `name`,
/// counted by the guard (allowed without one).
pub(super) fn judge(block: &Block, name: &Name, qtype: u16, client: IpAddr) -> Judgement {
    match &block.plugins.guard {
        None => Judgement::Allow,
        Some(guard) => guard.judge(name, qtype, client),
    }
}

/// What [`Router::admits`] found: whether the client may be answered
/// without the full path, and the block's guard to credit when it is
/// (none when the block has none).
#[derive(Clone, Copy)]
pub(crate) struct Admission<'a> {
    pub allowed: bool,
    guard: Option<&'a dyn Guard>,
}

impl std::fmt::Debug for Admission<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("allowed", &self.allowed)
            .field("guarded", &self.guard.is_some())
            .finish()
    }
}

impl Admission<'_> {
    /// No guard stands in the way and none counts.
    const OPEN: Admission<'static> = Admission {
        allowed: true,
        guard: None,
    };

    /// Counts a reply given without the full path (a memo or cache-hit
    /// replay, the direct writer, a second question asked by the
    /// forwarding task) as allowed by the block's guard.
    #[inline]
    pub(crate) fn credit(self) {
        if let Some(guard) = self.guard.filter(|_| self.allowed) {
            guard.allowed();
        }
    }
}

/// Whether `block`'s guard lets `client` ask `qtype` of `name` (open when
/// it has none): [`Router::admits`] in a block already chosen.
pub(crate) fn admission<'a, N: Asked + Copy>(block: &'a Block, name: N, qtype: u16, client: IpAddr) -> Admission<'a> {
    match &block.plugins.guard {
        None => Admission::OPEN,
        Some(guard) => Admission {
            allowed: guard.admits(&name, qtype, client),
            guard: Some(&**guard),
        },
    }
}

/// Writes what `judgement` answers into `out`: `None` when the query goes on.
pub(super) fn deny<'a>(judgement: Judgement, out: &mut Answer) -> Option<Routed<'a>> {
    let (rcode, ede) = match judgement {
        Judgement::Allow => return None,
        Judgement::Drop => return Some(Routed::Drop),
        Judgement::Block => (ResponseCode::Refused, EDE_BLOCKED),
        Judgement::Filter => (ResponseCode::NoError, EDE_FILTERED),
    };
    out.error(rcode);
    (out.ede, out.tags.denied) = (Some((ede, String::new())), true);
    Some(Routed::Done)
}

impl Router {
    /// Whether `client` may ask `qtype` of `name` (decoded, or the wire
    /// bytes of a plain query) before any plugin changes the question: what allows a memo or cache-hit
    /// replay, or the cluster's direct writer, for this query. Cheap when
    /// no block has a guard; never allocates. Counts nothing: the caller
    /// credits the admission when it answers without the full path
    /// ([`Admission::credit`]), which else counts ([`Router::answer`]).
    pub(crate) fn admits<N: Asked + Copy>(&self, name: N, qtype: u16, client: IpAddr) -> Admission<'_> {
        if self.blocks.iter().all(|b| b.plugins.guard.is_none()) {
            return Admission::OPEN;
        }
        match self.block(name) {
            Some((block, _)) => admission(block, name, qtype, client),
            None => Admission::OPEN, // no block: REFUSED by the full path
        }
    }

    /// The `transfer` of the block serving zone `zone`, with its zone's
    /// stats, for a request (AXFR, IXFR) from `client` the block's guard
    /// lets through, as in CoreDNS's order (a denied one takes the query
    /// path, which answers it as the guard says).
    pub(crate) fn transfer(&self, zone: &Name, qtype: RecordType, client: IpAddr) -> crate::query::transfer::Found {
        let admitted = self.admits(zone, u16::from(qtype), client);
        let (block, slot) = self.block(zone).filter(|_| admitted.allowed)?;
        let transfer = block.transfer.clone()?;
        admitted.credit();
        Some((transfer, self.stats.get(usize::from(slot)).cloned()))
    }

    /// A second name asked on the client's behalf (an `autopath` search
    /// name, an outside CNAME target, the second question of the plugin
    /// after the answer) through
    /// `home`, the block that serves it: judged by `home`'s guard (and
    /// `entry`'s, the block the client asked, when it is another), then
    /// its plugins. Its answer is then never memoized when a guard judged
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
        let mut verdict = judge(home, query.name(), qtype, asker.client);
        if verdict == Judgement::Allow && !std::ptr::eq(entry, home) {
            verdict = judge(entry, query.name(), qtype, asker.client);
        }
        let judged = home.plugins.guard.is_some() || entry.plugins.guard.is_some();
        let routed = deny(verdict, out).unwrap_or_else(|| self.through(home, query, asker, out));
        if judged {
            out.tags.memoizable = false;
        }
        routed
    }
}
