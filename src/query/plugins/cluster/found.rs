//! What a lookup in a zone of ours found, and how its answer ends: shared
//! by the cluster zone's name kinds and by the plugins that answer from the
//! cluster's data elsewhere.

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::Name;

use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;

/// What a lookup found for one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Records,
    NoData,
    NxDomain,
}

/// How a lookup in a zone of ours ends (the cluster zone and the zones of
/// Services' external addresses alike): records found but none of the type asked is
/// NODATA; an NXDOMAIN under `fallthrough` passes the query on (`out`
/// emptied); otherwise the answer is authoritative, a negative one with
/// nothing but the zone's `soa` in authority, and an outside CNAME target
/// is left to the router to chase.
pub fn conclude(
    found: Found,
    falls_through: bool,
    chase: Option<Name>,
    out: &mut Answer,
    soa: impl FnOnce() -> hickory_proto::rr::Record,
) -> Verdict {
    let found = match found {
        Found::Records if out.answers.is_empty() => Found::NoData,
        f => f,
    };
    if found == Found::NxDomain && falls_through {
        let nsid = out.tags.nsid.take();
        out.clear();
        out.tags.nsid = nsid; // the block's `nsid` still answers
        return Verdict::Next;
    }
    out.authoritative = true;
    if found != Found::Records {
        out.answers.clear();
        out.additional.clear();
        out.rcode = match found {
            Found::NxDomain => ResponseCode::NXDomain,
            _ => ResponseCode::NoError,
        };
        out.authority.push(soa());
    }
    chase.map_or(Verdict::Answered, Verdict::Chase)
}

/// NODATA for a name that exists, NXDOMAIN otherwise.
pub(crate) fn exists(yes: bool) -> Found {
    if yes {
        Found::NoData
    } else {
        Found::NxDomain
    }
}
