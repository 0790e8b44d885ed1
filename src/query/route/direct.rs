//! The short way for the cluster zone's common answers: when the block that
//! takes the question has no plugin before `kubernetes` that could take it
//! and none after that reads or changes the answer's records, the cluster
//! writes the reply straight from the snapshot
//! ([`crate::query::plugins::cluster::direct`]); `loadbalance` shuffles the
//! addresses it writes. Everything else goes the whole way
//! ([`Router::answer`]).

use hickory_proto::rr::{DNSClass, RecordType};

use super::block::Block;
use super::router::Router;
use crate::metrics::Transport;
use crate::query::plugins::cluster::direct::Direct;
use crate::query::reply::echo::Echo;
use crate::query::reply::Answer;
use crate::query::request::{self, edns::ClientEdns, Request};

impl Router {
    /// Writes the reply to `req` into `out` the short way, with `answer`
    /// holding what the memo and metrics need; `block` is the one
    /// [`Router::enter`] found for it. `admitted`: the block's
    /// guard lets this client ask this question ([`Router::admits`]).
    /// Returns whether it was truncated and the EDNS it answered with;
    /// `None`: it takes the whole way, and `answer` is to be restarted
    /// first ([`Answer::restart`]).
    pub(crate) fn write_direct(
        &self,
        block: &Block,
        req: &Request,
        admitted: bool,
        transport: Transport,
        answer: &mut Answer,
        out: &mut Vec<u8>,
    ) -> Option<(bool, Option<ClientEdns>)> {
        let query = &req.query;
        let asked = matches!(query.query_type(), RecordType::A | RecordType::AAAA);
        // a request carrying NSID comes decoded whole: the whole way adds it
        let nsid = req.edns.is_some_and(|e| e.nsid);
        if !admitted || !asked || nsid || query.query_class() != DNSClass::IN {
            return None;
        }
        let cluster = block.cluster.as_ref().filter(|c| c.direct && writes_direct(block))?;
        if !block.plugins.passes_address(query.name()) {
            return None;
        }
        if block.plugins.after.as_ref().is_some_and(|a| a.takes(query)) {
            return None;
        }
        let dnssec_ok = req.edns.is_some_and(|e| e.dnssec_ok);
        if dnssec_ok && block.plugins.signer.as_ref().is_some_and(|s| s.signs(query.name())) {
            return None; // signed on the whole way
        }
        let zone = cluster.zone_for(query.name())?;
        let edns = request::edns::capped(req.edns, answer.tags.bufsize);
        let echo = Echo {
            meta: &req.meta,
            query: Some(query),
            edns,
        };
        let how = Direct {
            echo: &echo,
            limit: request::edns::limit(transport, edns),
            shuffle: block.loadbalance.is_some(),
        };
        let truncated = cluster.write_direct(query, zone, &how, answer, out)?;
        Some((truncated, edns))
    }
}

/// Whether `block`'s cluster answers to A and AAAA questions may be
/// written straight: no `rewrite` or `autopath` before `kubernetes`
/// (`loop` never takes A or AAAA of class IN; the chain's
/// plugins, as `local` and the zones' plugin, are checked per name; the guard per query, by the caller, on the name the client asked,
/// which with no `rewrite` or `autopath` is the name judged). After it, a plugin after the answer takes some questions only (checked
/// per question), `loadbalance` is done by the writer (not its `prefer`: the full
/// path orders those records), and an
/// ExternalName, the one outside chase, takes the whole way.
fn writes_direct(block: &Block) -> bool {
    block.loadbalance.as_ref().is_none_or(|lb| lb.plain())
        && block.rewrite.is_none()
        && block.autopath.is_none()
        && block.header.is_none() // its rules change what the short way echoes
}
