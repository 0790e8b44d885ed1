//! What the chain's plugins made of a query ([`Outcome`]), and the
//! answer's writer named when one took it ([`took`]).

use crate::metrics::Plugin;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;

/// What a stage's plugins made of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// None of them took it.
    Passed,
    /// One answered (a chase leaves the CNAME's target in the answer).
    Answered,
    /// One dropped it: no reply.
    Dropped,
}

/// Whether a plugin's `verdict` settled the query, naming `plugin` as the
/// answer's writer; a chase leaves the CNAME's target for the router's
/// settle step to look up. Only the chain's plugins drop (`Chain::run`).
pub fn took(verdict: Verdict, plugin: Plugin, out: &mut Answer) -> bool {
    match verdict {
        Verdict::Next | Verdict::Drop => return false,
        Verdict::Answered => {}
        Verdict::Chase(target) => out.tags.outside = Some(target),
    }
    out.tags.plugin = plugin;
    true
}
