//! Route a query to the server block with the longest matching zone, then
//! through that block's plugin chain (today: `kubernetes`). A name no
//! plugin answers is REFUSED: we are not a server for it.

use hickory_proto::op::Query;

use super::answer::Answer;
use super::cluster::{Cluster, Outcome};
use super::UNHANDLED;

/// One server block's zones and plugins.
pub struct Block {
    pub zones: Vec<hickory_proto::rr::Name>,
    pub cluster: Option<Cluster>,
    /// `log`: one line per query answered by this block.
    pub log: bool,
}

/// The server blocks sharing one listener.
pub struct Router {
    pub blocks: Vec<Block>,
}

impl Router {
    /// The sum of the stores' generations: changes whenever any of them
    /// publishes a snapshot.
    pub fn generation(&self) -> u64 {
        self.blocks
            .iter()
            .filter_map(|b| b.cluster.as_ref())
            .map(|c| c.store.generation())
            .sum()
    }

    /// Whether any block logs queries (so the clock is read per query
    /// only when a log line needs the duration).
    pub fn logs(&self) -> bool {
        self.blocks.iter().any(|b| b.log)
    }

    /// Fills `out` with the answer to `query`. Every answer so far comes
    /// from the snapshot or the configuration, so all are memoizable.
    pub fn answer(&self, query: &Query, out: &mut Answer) {
        let log = self.route(query, out);
        out.memoizable = true;
        out.log = log;
    }

    /// Answers through the chosen block; returns that block's `log` flag.
    fn route(&self, query: &Query, out: &mut Answer) -> bool {
        let qname = query.name();
        let block = self
            .blocks
            .iter()
            .filter_map(|b| {
                b.zones
                    .iter()
                    .filter(|z| z.zone_of(qname))
                    .map(|z| (z.num_labels(), b))
                    .max_by_key(|(n, _)| *n)
            })
            .max_by_key(|(n, _)| *n)
            .map(|(_, b)| b);
        let Some(block) = block else {
            out.error(UNHANDLED);
            return false;
        };
        if let Some(cluster) = &block.cluster {
            if let Some(zone) = cluster.zone_for(qname) {
                if cluster.answer(qname, query.query_type(), zone, out) == Outcome::Answered {
                    return block.log;
                }
            }
        }
        out.error(UNHANDLED);
        block.log
    }
}
