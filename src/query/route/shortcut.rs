//! Which questions have a route to the `cache` that the config alone
//! fixes, so that a worker may replay the cache's answer as bytes next
//! time without routing (`replay::hits`): a block with no `rewrite`,
//! `template` or `autopath RESOLV-CONF` (whose walk starts from any
//! client's NXDOMAIN), a name outside its `kubernetes` zones and those of
//! the chain's plugins that answer from the store or serve zones (those
//! change with the store, or at run time), not one the plugin after the
//! answer takes, not ANY
//! or the loop probe's HINFO, not one a plugin of the chain may answer
//! later (an ACME challenge), and past the chain's plugins whose data
//! changes at run time (a reloaded file) with their data as loaded now.

use hickory_proto::op::Query;
use hickory_proto::rr::RecordType;

use super::block::Block;
use super::router::Router;
use crate::query::replay::hits::HitRoute;

impl Router {
    /// What the entries of `replay::hits` are learned under: the config
    /// epoch and this router's address (a reload makes another).
    pub fn hits_id(&self) -> (u64, usize) {
        (self.epoch, std::ptr::from_ref(self) as usize)
    }

    /// The route of `query` to its block's cache, when the config alone
    /// fixes it; `None` when a replay could answer differently.
    pub fn hit_route(&self, query: &Query) -> Option<HitRoute<'_>> {
        let (block, _) = self.block(query.name())?;
        let forwarding = fixed_route(block, query)?;
        let changes = block.plugins.passed_as_loaded(query)?;
        Some(HitRoute {
            forwarding,
            changes,
            loadbalance: block.loadbalance.as_deref(),
        })
    }
}

/// The block's forwarding, when the route of `query` through `block` to its
/// cache depends on the config alone (see the file's head).
fn fixed_route<'a>(block: &'a Block, query: &Query) -> Option<&'a std::sync::Arc<crate::query::forward::Forwarding>> {
    let (qname, qtype) = (query.name(), query.query_type());
    let config_only = block.rewrite.is_none()
        && block.plugins.replayable()
        && block.autopath.as_ref().is_none_or(|a| a.resolv.is_none())
        && block.header.is_none() // a replay echoes RD and CD from the request
        && !matches!(qtype, RecordType::ANY | RecordType::HINFO)
        && block.plugins.after.as_ref().is_none_or(|a| !a.takes(query))
        && block.plugins.signer.as_ref().is_none_or(|s| !s.signs(qname)) // signed on the whole way
        && !block.plugins.may_answer_later(query);
    let store_free = block.cluster.as_ref().is_none_or(|c| c.zone_for(qname).is_none())
        && !block.plugins.reads_store(qname)
        && !block.plugins.serves(qname);
    let forwarding = block.forwarding.as_ref()?;
    (config_only && store_free && forwarding.cache.is_some() && forwarding.handles(qname)).then_some(forwarding)
}
