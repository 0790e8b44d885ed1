//! Where a query went: answered, dropped, or forwarded with what its
//! answer goes through on the way back.

use std::sync::Arc;

use hickory_proto::op::Query;
use hickory_proto::rr::Name;

use super::asker::Asker;
use crate::query::forward::Forwarding;
use crate::query::reply::Answer;
use crate::query::settle::Left;

/// `loadbalance` of the block a forwarded answer goes back through.
pub type Balance<'a> = Option<&'a Arc<crate::query::reply::loadbalance::setup::LoadbalanceConfig>>;

/// Where a query went.
pub enum Routed<'a> {
    /// `out` holds the answer.
    Done,
    /// The guard says: no reply at all.
    Drop,
    /// Not answered here (not cached): forward it, and do what [`Onward`]
    /// says to its answer.
    Forward(Onward<'a>),
}

/// A query the router forwards: where to, and what its answer goes
/// through on the way back.
pub struct Onward<'a> {
    pub forwarding: &'a Arc<Forwarding>,
    /// `loadbalance` of the block the answer goes back through.
    pub balance: Balance<'a>,
    /// The chase, the plugin after the answer and `rewrite` left for the answer.
    pub left: Left,
    /// The rest of an `autopath` walk, when a later name of it goes.
    pub walk: Option<Box<Rest>>,
}

impl<'a> Onward<'a> {
    /// To `forwarding`, with nothing to do to the answer but `balance`.
    pub fn to(forwarding: &'a Arc<Forwarding>, balance: Balance<'a>) -> Onward<'a> {
        Onward {
            forwarding,
            balance,
            left: Left::default(),
            walk: None,
        }
    }
}

/// What a walk has still to do after a name it forwarded: carried by that
/// query ([`Job::walk`]), walked when the name comes back NXDOMAIN.
#[derive(Debug)]
pub struct Rest {
    /// The block the client's query entered (its place in the router's).
    pub(crate) entry: Option<usize>,
    pub(crate) base: Name,
    /// The search domains not tried yet.
    pub(crate) domains: std::vec::IntoIter<Name>,
    /// The question walked (after `rewrite`).
    pub(crate) asked: Query,
    pub(crate) asker: Asker,
    /// The asked name itself went upstream (a RESOLV-CONF walk of a name
    /// not answered here): its NXDOMAIN is the first one walked on.
    pub(crate) asked_went: bool,
    /// The asked name's NXDOMAIN from upstream: the answer when every
    /// name of the walk is NXDOMAIN (CoreDNS writes its first reply).
    pub(crate) first: Option<Box<Answer>>,
}
