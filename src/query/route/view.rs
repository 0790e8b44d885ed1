//! `view` on the query path: which of the blocks holding a question's
//! zone serves it, when blocks have views (CoreDNS's split horizon).
//!
//! CoreDNS tries the zones holding the name from the longest down, and
//! at each the blocks that serve it in the order written: the first whose
//! view passes (or that has none) serves the query; when none does at any
//! zone, REFUSED. [`Router::viewed`] walks the blocks once and keeps the
//! first passing block of the longest zone, which comes to the same.
//!
//! A router whose blocks have no view never comes here: [`Router::block`]
//! picks by zone alone, and `Router::views` (one flag) says which. With
//! views, the memo and cache-hit replays are off for the listener (a
//! view may read the client, which a replay does not look at), and the
//! `acl` admission is judged in the block the view chose.

pub mod print;
pub mod setup;

use hickory_proto::op::Query;
use hickory_proto::rr::Name;

use super::acl::Asked;
use super::{Asker, Block, Router};
use crate::corefile::expr::{self, Value};
use setup::ViewConfig;

impl ViewConfig {
    /// Whether every condition is true for `env` (a failed run, or a
    /// value other than `true`, is false).
    pub fn passes(&self, env: &expr::Query<'_>) -> bool {
        self.exprs.iter().all(|p| match p.run(env, &[]) {
            Ok(Value::Bool(true)) => true,
            Ok(_) => false,
            Err(e) => {
                tracing::debug!(target: "view", "view {}: expr {:?}: {e}", self.name, p.source);
                false
            }
        })
    }
}

/// The longest of `block`'s zones holding `name`: its length in wire
/// bytes and its stats slot.
pub(super) fn longest(block: &Block, name: &Name) -> Option<(usize, u16)> {
    (block.zones.iter().zip(&block.zone_wires).zip(&block.zone_stats))
        .filter(|((z, w), _)| name.under(z, w))
        .map(|((_, w), slot)| (w.len(), *slot))
        .max_by_key(|(n, _)| *n)
}

impl Router {
    /// The block serving `query` from `asker` when blocks have views: of
    /// those with the longest zone holding the name whose view passes, the
    /// first written; with its zone's stats slot.
    pub(crate) fn viewed(&self, query: &Query, asker: &Asker) -> Option<(&Block, u16)> {
        let name = query.name();
        let mut facts: Option<Facts> = None;
        let mut best: Option<(usize, &Block, u16)> = None;
        for block in &self.blocks {
            let Some((n, slot)) = longest(block, name) else {
                continue;
            };
            if best.is_some_and(|(m, _, _)| m >= n) {
                continue; // an earlier block serves a zone as long
            }
            if let Some(view) = &block.view {
                let facts = facts.get_or_insert_with(|| Facts::of(query));
                let known = block.metadata.as_deref().filter(|m| m.covers(name));
                let lookup = |label: &str| known.and_then(|m| m.value(label, asker.client));
                let meta = expr::Metadata(known.map(|_| &lookup as &dyn Fn(&str) -> Option<String>));
                if !view.passes(&facts.env(asker, meta)) {
                    continue;
                }
            }
            best = Some((n, block, slot));
        }
        best.map(|(_, b, slot)| (b, slot))
    }

    /// The block serving a second name asked on the client's behalf (a
    /// chased CNAME target, an `autopath` search name): by view when blocks
    /// have views, else by zone alone.
    pub(crate) fn home(&self, query: &Query, asker: &Asker) -> Option<(&Block, u16)> {
        if self.views {
            self.viewed(query, asker)
        } else {
            self.block(query.name())
        }
    }
}

/// The question as the expr language reads it, made once per query.
struct Facts {
    name: String,
    qtype: String,
    class: String,
}

impl Facts {
    fn of(query: &Query) -> Facts {
        Facts {
            name: query.name().to_lowercase().to_ascii(),
            qtype: query.query_type().to_string(),
            class: query.query_class().to_string(),
        }
    }

    /// What a view reads: these, the client, and `metadata` (the
    /// block's, when it has one for the name).
    fn env<'a>(&'a self, asker: &Asker, metadata: expr::Metadata<'a>) -> expr::Query<'a> {
        expr::Query {
            name: &self.name,
            qtype: &self.qtype,
            class: &self.class,
            client: Some(asker.client),
            groups: &[],
            wire: asker.wire,
            metadata,
        }
    }
}
