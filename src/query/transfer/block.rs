//! One block's `transfer`: the zones it sends, each with the directive
//! that covers it.

use std::sync::Arc;

use super::setup::TransferConfig;
use super::source::Source;
use super::stats::TransferStats;
use crate::query::plugins::cluster::Cluster;

/// One block's `transfer` directives, resolved to the zones they send.
pub struct Transfer {
    /// The block's `kubernetes` plugin, when it has one.
    pub(super) cluster: Option<Cluster>,
    pub(super) zones: Vec<Xfr>,
    pub stats: Arc<TransferStats>,
}

/// One zone transferred, and the `transfer` directive that covers it (the
/// one with the longest zone, as CoreDNS picks).
pub(super) struct Xfr {
    pub(super) source: Source,
    pub(super) cfg: Arc<TransferConfig>,
}
