//! A plugin that acts after the answer instead of in the chain: it looks
//! at what the block answered and, for a question it takes, may amend that
//! answer from the answer to a second question asked the same way (as a
//! plugin that rewrites AAAA answers from the name's A records).
//!
//! A block has at most one ([`super::chain::Chain::after`], built from its
//! setup by [`super::chain::Setup::after_answer`]). The router amends an
//! answer made here at once, asking the second question through the block
//! (`route/chase.rs`); a forwarded question carries the plugin in its
//! continuation and the forwarding task asks and amends before replying.
//! The short ways (the cluster's direct writer, the cache-hit replay)
//! leave every question it takes to the whole way.

use std::fmt::Debug;
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::Query;

use crate::metrics::exposed::Exposed;
use crate::query::reply::Answer;

/// A block's plugin that acts after the answer.
pub trait AfterAnswer: Debug + Send + Sync {
    /// Whether `query` is one whose answer it may amend (so that no short
    /// way answers it).
    fn takes(&self, query: &Query) -> bool;

    /// Whether it amends answers for `client` at all.
    fn serves(&self, client: IpAddr) -> bool;

    /// Whether that depends on the client's address (an answer it may
    /// amend is then not memoized).
    fn reads_client(&self) -> bool;

    /// Whether `answer` (to a question it takes) calls for amending.
    fn wanted(&self, answer: &Answer) -> bool;

    /// The second question asked for `query`, whose answer amends its own.
    fn second(&self, query: &Query) -> Query;

    /// Amends `out` from `second`, the answer to [`AfterAnswer::second`];
    /// returns whether it changed it.
    fn amend(&self, out: &mut Answer, second: &Answer) -> bool;

    /// The counters it keeps for `/metrics`, if any.
    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        None
    }
}

/// A block's plugin that signs the answer once it is made (`dnssec`): the
/// router signs an answer made here as it settles it, the forwarding task
/// an upstream's once its continuation is applied. Only questions with DO
/// set reach it; the short ways (the direct writer, the cache-hit replay)
/// leave every name it signs to the whole way, and a signed answer is not
/// memoized.
pub trait Signing: Debug + Send + Sync {
    /// Whether `qname` is under a zone it signs.
    fn signs(&self, qname: &hickory_proto::rr::Name) -> bool;

    /// Signs `out`, the answer to `query` (asked with DO set).
    fn sign(&self, query: &Query, out: &mut Answer);

    /// The counters it keeps for `/metrics`, if any.
    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        None
    }
}
