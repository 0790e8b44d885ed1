//! What the path notes about a reply beside the message itself: the
//! memo's, the metrics', the log's and the router's concern, never
//! written to the wire.

use hickory_proto::rr::Name;

use crate::metrics::{Expansion, Plugin};

/// What the path notes about a reply: whether it may be replayed, where
/// it is counted and logged, and what the router still owes it. Plugins
/// set them; the router, the memo, the metrics and the log read them.
#[derive(Debug, Default, Clone)]
pub struct Tags {
    /// Whether the reply depends only on the question and the snapshot, so
    /// it may be replayed by [`crate::query::replay::memo`] until the next snapshot.
    pub memoizable: bool,
    /// The reply's names are written as its zone spells them, not as the
    /// question does (a zone file's): the memo replays it only to a
    /// question spelled the same, byte for byte.
    pub exact_case: bool,
    /// What in the store a memoizable reply depends on: a change to
    /// anything else leaves its memo entry in place. Everything unless the
    /// handler says less (only the cluster zone does).
    pub deps: crate::store::Deps,
    /// How the server block that answered logs it (`log`).
    pub log: Option<crate::query::log::setup::LogStyle>,
    /// The router's stats slot of the zone that matched (0: none matched).
    pub zone: u16,
    /// The plugin that wrote the answer.
    pub plugin: Plugin,
    /// For an NXDOMAIN in the cluster zone: the search-path expansion it was.
    pub expansion: Option<Expansion>,
    /// `autopath` answered a later name of the search walk.
    pub autopath: bool,
    /// A CNAME's target outside the zone that answered (a plugin's
    /// `Verdict::Chase`): the router looks its records up and puts them
    /// after the CNAME, as CoreDNS does.
    pub outside: Option<Name>,
    /// The guard blocked or filtered the question (a plugin after the
    /// answer then amends it only from a second answer made here, never
    /// from a forwarded one).
    pub denied: bool,
    /// `bufsize` of the block that took the query: the EDNS payload cap.
    pub bufsize: Option<u16>,
    /// `nsid` of the block that took the query: the NSID its reply's OPT
    /// carries when the client asked for it.
    pub nsid: Option<std::sync::Arc<[u8]>>,
    /// `header` of the block whose plugins made the answer: its rules,
    /// applied by the reply writer.
    pub header: Option<std::sync::Arc<crate::query::reply::header::rules::Rules>>,
    /// A plugin's delay: the reply is sent this much later, from a task
    /// of this runtime (`defer::later`).
    pub delay: Option<(std::time::Duration, tokio::runtime::Handle)>,
}
