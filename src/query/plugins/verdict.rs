//! What a plugin tells the router after looking at a query, the one
//! answer type of every plugin (CoreDNS's `NextOrFailure`): it answered,
//! it passes the query to the next plugin (not its name, or `fallthrough`),
//! it answered with a CNAME whose target lies outside its data, whose
//! records the router looks up and appends, or no reply is to be sent.

use hickory_proto::rr::Name;

/// A plugin's word on a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The reply holds the answer.
    Answered,
    /// Not this plugin's: the next one decides.
    Next,
    /// Answered with a CNAME to this name, outside the plugin's data: the
    /// router chases the target's records.
    Chase(Name),
    /// No reply at all: the query is dropped (a plugin of the chain only,
    /// `Chain::run`).
    Drop,
}
