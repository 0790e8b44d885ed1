//! The block's plugins in CoreDNS's order, for a query the router has
//! taken: the chain's early plugins first ([`early`], before
//! `rewrite` and the guard), then [`Router::through`]: the early plugins
//! that ask again, `loop`'s probe, the chain's plugins before the cluster (zone files
//! among them), `kubernetes`, the
//! chain's data plugins (`etcd`), and `cache` then `forward`, then the
//! chain's last plugins.
//! Each step writes its answer into `out` and names its plugin.

use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::asker::Asker;
use super::block::Block;
use super::block::{self, UNHANDLED};
use super::routed::{Onward, Routed};
use super::router::Router;
use crate::metrics::Plugin;
use crate::query::forward::Forwarding;
use crate::query::plugins::chain::{took, Chain, Outcome};
use crate::query::reply::Answer;

impl Router {
    /// `query` through `block`'s plugins in order (no autopath, no plugin after the answer):
    /// the early plugins that ask again, `loop`'s probe, the chain's plugins before the cluster,
    /// `kubernetes`, then `cache` and `forward`.
    pub(super) fn through<'a>(&'a self, block: &'a Block, query: &Query, asker: Asker, out: &mut Answer) -> Routed<'a> {
        let (qname, qtype) = (query.name(), query.query_type());
        if !block.plugins.again.is_empty() {
            match block.plugins.run_again(query, &asker.of(), out) {
                Outcome::Passed => {}
                outcome => return settled(outcome),
            }
        }
        if let Some(probe) = &block.loop_probe {
            if probe.looped(query) {
                block::loop_detected(block, probe, qname);
            }
        }
        match Chain::run(&block.plugins.before_cluster, query, &asker.of(), out) {
            Outcome::Passed => {}
            outcome => return settled(outcome),
        }
        if kubernetes(block, qname, qtype, out) {
            return Routed::Done;
        }
        match Chain::run(&block.plugins.data, query, &asker.of(), out) {
            Outcome::Passed => forward(block, query, asker, out),
            outcome => settled(outcome),
        }
    }
}

/// The chain's early plugins, before anything
/// may change the question and before the guard: `Some` when one of them
/// settled the query.
pub(super) fn early<'a>(block: &Block, query: &Query, asker: Asker, out: &mut Answer) -> Option<Routed<'a>> {
    match Chain::run(&block.plugins.early, query, &asker.of(), out) {
        Outcome::Passed => None,
        outcome => Some(settled(outcome)),
    }
}

/// Where a query the chain took goes: its answer, or nowhere (dropped).
fn settled<'a>(outcome: Outcome) -> Routed<'a> {
    if outcome == Outcome::Dropped {
        Routed::Drop
    } else {
        Routed::Done
    }
}

/// `kubernetes`: true when the cluster zone answered (an NXDOMAIN notes
/// which store changes could make the name exist).
fn kubernetes(block: &Block, qname: &Name, qtype: RecordType, out: &mut Answer) -> bool {
    let Some(cluster) = &block.cluster else {
        return false;
    };
    let Some(zone) = cluster.zone_for(qname) else {
        return false;
    };
    if !took(cluster.answer(qname, qtype, zone, out), Plugin::Kubernetes, out) {
        return false;
    }
    if out.rcode == ResponseCode::NXDomain {
        out.tags.expansion = cluster.expansion(qname, zone, &mut out.tags.deps);
    }
    out.tags.memoizable = true;
    true
}

/// `cache` then `forward`, for a name no plugin before answered; then
/// the chain's last plugins; SERVFAIL when the block has neither for it (CoreDNS: the
/// chain ran out, "no next plugin found"), REFUSED when the block has no
/// plugin at all (as a name no block serves).
/// A question of another class than IN (`chaos` took CH before; or after
/// `rewrite class`): the block's `forward` takes it, through its `cache`
/// (keyed by class too), as CoreDNS's forward does; without one it is
/// REFUSED. The chain's other plugins serve class IN only.
pub(super) fn other_class<'a>(block: &'a Block, query: &Query, asker: Asker, out: &mut Answer) -> Routed<'a> {
    let Some(fwd) = block.forwarding.as_ref().filter(|f| f.handles(query.name())) else {
        out.error(UNHANDLED);
        return Routed::Done;
    };
    through_cache(block, fwd, query, asker, out)
}

fn forward<'a>(block: &'a Block, query: &Query, asker: Asker, out: &mut Answer) -> Routed<'a> {
    let qname = query.name();
    let Some(fwd) = block.forwarding.as_ref().filter(|f| f.handles(qname)) else {
        match Chain::run(&block.plugins.last, query, &asker.of(), out) {
            Outcome::Passed => {}
            outcome => return settled(outcome),
        }
        // A zone served with none found for the name, nothing after it: REFUSED, as CoreDNS.
        let unfound = block.plugins.unfound(qname);
        out.error(if block.chain && !unfound {
            ResponseCode::ServFail
        } else {
            UNHANDLED
        });
        // Not when a zone may appear for the name (a plugin of the chain serves it).
        out.tags.memoizable = !block.plugins.serves(qname);
        return Routed::Done;
    };
    through_cache(block, fwd, query, asker, out)
}

/// `query` answered from `fwd`'s cache, else handed to `fwd`.
fn through_cache<'a>(
    block: &'a Block,
    fwd: &'a Arc<Forwarding>,
    query: &Query,
    asker: Asker,
    out: &mut Answer,
) -> Routed<'a> {
    out.clear_records();
    if fwd.cached(query, asker.dnssec_ok, asker.cd, out) {
        out.tags.plugin = Plugin::Cache;
        return Routed::Done;
    }
    Routed::Forward(Onward::to(fwd, block.loadbalance.as_ref()))
}
