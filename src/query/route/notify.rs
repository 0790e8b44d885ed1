//! A NOTIFY (RFC 1996) for a zone a block keeps by transfer (`secondary`):
//! the block whose zones hold the name is found as for a query
//! (`Router::notified`), and its transferred zone of that name told
//! ([`ZoneFile::notify`]).

use std::net::IpAddr;

use hickory_proto::op::{Metadata, OpCode, Query};
use hickory_proto::rr::Name;

use crate::query::plugins::file::ZoneFile;
use crate::query::reply::Answer;
use crate::query::request::{edns::ClientEdns, Triage};

/// What a rejected request's reply echoes.
pub type Echoed = (Metadata, Option<Query>, Option<ClientEdns>);

/// `None`: none of `files` keeps a transferred zone named `zone`; else
/// whether the NOTIFY came from one of the zone's primaries.
pub fn notified(files: &[ZoneFile], zone: &Name, from: IpAddr) -> Option<bool> {
    files.iter().find_map(|f| f.notify(zone, from))
}

/// A rejected request's answer: its rcode; but a NOTIFY for a zone kept
/// by transfer (`kept` of its name: see [`notified`]) is answered NOERROR
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
