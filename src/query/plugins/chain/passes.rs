//! The plugin of a directive with none in the chain.

use hickory_proto::op::Query;

use super::{Answering, Client, Stage};
use crate::metrics::Plugin;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;

/// A plugin that passes every question: [`Setup::build`]'s default, for a
/// directive with no plugin in the chain.
pub(super) struct Passes;

impl Answering for Passes {
    fn stage(&self) -> Stage {
        Stage::Last
    }

    fn plugin(&self) -> Plugin {
        Plugin::None
    }

    fn answer(&self, _: &Query, _: &Client, _: &mut Answer) -> Verdict {
        Verdict::Next
    }
}
