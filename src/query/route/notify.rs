//! A NOTIFY (RFC 1996) for a zone a block keeps by transfer: the block
//! whose zones hold the name is found as for a query
//! (`Router::notified`), and the plugin of its chain keeping a zone of
//! that name told (`Chain::notified`).

use hickory_proto::op::{Metadata, OpCode, Query};
use hickory_proto::rr::Name;

use crate::query::reply::Answer;
use crate::query::request::{edns::ClientEdns, Triage};

/// What a rejected request's reply echoes.
pub type Echoed = (Metadata, Option<Query>, Option<ClientEdns>);

/// A rejected request's answer: its rcode; but a NOTIFY for a zone kept
/// by transfer (`kept` of its name: see `Router::notified`) is answered NOERROR
/// with AA when it comes from one of the zone's primaries, and dropped
/// (`None`) when not, as CoreDNS.
pub fn rejected(reject: Triage, answer: &mut Answer, kept: impl FnOnce(&Name) -> Option<bool>) -> Option<Echoed> {
    let Triage::Reject {
        meta,
        query,
        edns,
        rcode,
    } = reject
    else {
        return None;
    };
    let notify = query.as_ref().filter(|_| meta.op_code == OpCode::Notify);
    match notify.and_then(|q| kept(q.name())) {
        Some(true) => answer.authoritative = true,
        Some(false) => return None,
        None => answer.error(rcode),
    }
    Some((meta, query, edns))
}
