//! The answering plugins as the router holds them: what a directive's
//! parsed options become ([`Setup`]: built into the router's chain and
//! printed by `clusterdns check`), and what the router runs
//! ([`Answering`]: the one `Verdict` per query, with the plugin's place in
//! the order and what the fast paths may skip). A plugin that has both
//! lives in its own folder and is named outside it only in the directive
//! table and the module list; the router runs whatever the block's chain
//! holds, in the table's order.

use std::fmt::Debug;
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::Query;
use hickory_proto::rr::Name;

use crate::corefile::expr::Wire;
use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::Answer;

/// Where in the order a plugin answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before `rewrite` and `acl`, on the question as asked.
    Early,
    /// After the block's own data and `kubernetes`, before `cache` and
    /// `forward` (a backend such as `etcd`).
    Data,
    /// When neither `cache` nor `forward` takes the name.
    Last,
}

/// The client a query came from, as the plugins see it.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    pub ip: IpAddr,
    /// The request's transport, size, id, opcode, payload size and port.
    pub wire: Wire,
}

/// A plugin in a block's chain.
pub trait Answering: Send + Sync {
    /// Its place in the order.
    fn stage(&self) -> Stage;

    /// The answer's writer, as the metrics name it.
    fn plugin(&self) -> Plugin;

    /// Answers `query` from `client` into `out`, or passes it on.
    fn answer(&self, query: &Query, client: &Client, out: &mut Answer) -> Verdict;

    /// Whether an A or AAAA question of class IN for `qname` certainly
    /// passes this plugin, so that the cluster's answer may be written
    /// straight from the snapshot (`route/direct.rs`).
    fn passes_address(&self, _qname: &Name) -> bool {
        false
    }

    /// Whether this plugin may answer `query` later though it passes it
    /// now (what it answers comes and goes at run time), so that no
    /// replayed cache hit may stand in for it.
    fn may_answer_later(&self, _query: &Query) -> bool {
        false
    }

    /// What `/ready` asks of this plugin, if it is one that `/ready`
    /// waits for.
    fn readiness(&self) -> Option<Arc<dyn Readiness>> {
        None
    }
}

/// A plugin that `/ready` waits for (CoreDNS's `ready.Readiness`).
pub trait Readiness: Send + Sync {
    /// The plugin's name, as `/ready` lists those not ready.
    fn name(&self) -> &'static str;

    /// Whether it is ready now.
    fn ready(&self) -> bool;
}

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

/// A directive's parsed options, as a server block of the configuration
/// holds them.
pub trait Setup: Debug + Send + Sync {
    /// The directive's name, as in the table.
    fn name(&self) -> &'static str;

    /// The plugin the router runs.
    fn build(&self) -> Box<dyn Answering>;

    /// Its lines for `clusterdns check`.
    fn print(&self, b: &mut Block);
}

/// A block's answering plugins, by stage, each in the table's order.
#[derive(Default)]
pub struct Chain {
    pub early: Vec<Box<dyn Answering>>,
    pub data: Vec<Box<dyn Answering>>,
    pub last: Vec<Box<dyn Answering>>,
}

impl Chain {
    /// The plugins of `setups` (already in the table's order).
    pub fn build<'a>(setups: impl IntoIterator<Item = &'a Arc<dyn Setup>>) -> Chain {
        let mut chain = Chain::default();
        for plugin in setups.into_iter().map(|s| s.build()) {
            match plugin.stage() {
                Stage::Early => chain.early.push(plugin),
                Stage::Data => chain.data.push(plugin),
                Stage::Last => chain.last.push(plugin),
            }
        }
        chain
    }

    /// Runs `stage`'s plugins on `query` until one takes it, named as the
    /// answer's writer (a chase leaves the CNAME's target in `out` for the
    /// router), or drops it.
    pub fn run(plugins: &[Box<dyn Answering>], query: &Query, client: &Client, out: &mut Answer) -> Outcome {
        for p in plugins {
            match p.answer(query, client, out) {
                Verdict::Next => {}
                Verdict::Drop => return Outcome::Dropped,
                verdict => {
                    took(verdict, p.plugin(), out);
                    return Outcome::Answered;
                }
            }
        }
        Outcome::Passed
    }

    /// The block's plugins that `/ready` waits for.
    pub fn readiness(&self) -> impl Iterator<Item = Arc<dyn Readiness>> + '_ {
        self.all().filter_map(|p| p.readiness())
    }

    /// Whether an A or AAAA question of class IN for `qname` passes every
    /// plugin before `kubernetes`.
    pub fn passes_address(&self, qname: &Name) -> bool {
        self.early.iter().all(|p| p.passes_address(qname))
    }

    /// Whether a plugin of the chain may answer `query` later though it
    /// passes it now.
    pub fn may_answer_later(&self, query: &Query) -> bool {
        self.all().any(|p| p.may_answer_later(query))
    }

    /// Every plugin of the chain.
    fn all(&self) -> impl Iterator<Item = &Box<dyn Answering>> + '_ {
        self.early.iter().chain(&self.data).chain(&self.last)
    }
}

/// Whether a plugin's `verdict` settled the query, naming `plugin` as the
/// answer's writer; a chase leaves the CNAME's target for the router's
/// settle step to look up. Only the chain's plugins drop ([`Chain::run`]).
pub fn took(verdict: Verdict, plugin: Plugin, out: &mut Answer) -> bool {
    match verdict {
        Verdict::Next | Verdict::Drop => return false,
        Verdict::Answered => {}
        Verdict::Chase(target) => out.tags.outside = Some(target),
    }
    out.tags.plugin = plugin;
    true
}
