//! `view` on the query path: which of the blocks holding a question's
//! zone serves it, when blocks have views (CoreDNS's split horizon).
//!
//! CoreDNS tries the zones holding the name from the longest down, and
//! at each the blocks that serve it in the order written: the first whose
//! view passes (or that has none) serves the query; when none does at any
//! zone, REFUSED. `Router::viewed` walks the blocks once and keeps the
//! first passing block of the longest zone (`Block::longest`, [`admits`]),
//! which comes to the same.
//!
//! A router whose blocks have no view never comes here: `Router::block`
//! picks by zone alone, and `Router::views` (one flag) says which. With
//! views, the memo and cache-hit replays are off for the listener (a
//! view may read the client, which a replay does not look at), and the
//! guard's admission is judged in the block the view chose.

pub mod print;
pub mod setup;

use hickory_proto::op::Query;

use crate::corefile::expr::{self, Value, Wire};
use crate::query::metadata::Metadata;
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

/// Whether a block with `view` and `metadata` takes `query` from `asker`
/// (its address, the request as sent, its ECS address): it has no view,
/// or its view passes (`metadata()` reading the block's `metadata` when
/// it holds the name). `facts` is the question as the expressions read
/// it, made at the first view asked.
pub(super) fn admits(
    (view, metadata): (Option<&ViewConfig>, Option<&Metadata>),
    facts: &mut Option<Facts>,
    query: &Query,
    asker: &super::asker::Asker,
) -> bool {
    let Some(view) = view else { return true };
    let (client, wire): (std::net::IpAddr, Wire) = (asker.client, asker.wire);
    let facts = facts.get_or_insert_with(|| Facts::of(query));
    let known = metadata.filter(|m| m.covers(query.name()));
    let lookup = |label: &str| known.and_then(|m| m.value(label, query.name(), client, asker.subnet));
    let metadata = expr::Metadata(known.map(|_| &lookup as &dyn Fn(&str) -> Option<String>));
    view.passes(&expr::Query {
        name: &facts.name,
        qtype: &facts.qtype,
        class: &facts.class,
        client: Some(client),
        groups: &[],
        wire,
        metadata,
    })
}

/// The question as the expr language reads it, made once per query.
pub(super) struct Facts {
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
}
