//! The answering plugins as the router holds them: what a directive's
//! parsed options become ([`Setup`]: built into the router's chain and
//! printed by `clusterdns check`), and what the router runs
//! ([`Answering`]: the one `Verdict` per query, with the plugin's place in
//! the order and what the fast paths may skip). A plugin that has both
//! lives in its own folder and is named outside it only in the directive
//! table and the module list; the router runs whatever the block's chain
//! holds, in the table's order. What a plugin is built, checked and asked
//! with is in [`context`], the memo's epoch its data changes move in
//! [`memo_epoch`].

mod context;
mod memo_epoch;
mod outcome;
mod readiness;
mod stage;

use std::any::Any;
use std::fmt::Debug;
use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use hickory_proto::op::Query;
use hickory_proto::rr::Name;

use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;
use crate::metrics::exposed::Exposed;
use crate::metrics::Plugin;
use crate::query::plugins::after::{AfterAnswer, Signing};
use crate::query::plugins::guard::Guard;
use crate::query::plugins::verdict::Verdict;
use crate::query::plugins::zone_source::ZoneSource;
use crate::query::reply::Answer;
pub use context::{BuildContext, CheckContext, Client};
pub use memo_epoch::{changed, changes};
pub use outcome::{took, Outcome};
pub use readiness::Readiness;
pub use stage::Stage;

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

    /// The zones whose answers this plugin reads from the block's cluster
    /// store (they change with the store), so that no replayed cache hit
    /// stands in for it on a name under one of them. Asked once, when the
    /// chain is built.
    fn store_zones(&self) -> Vec<Name> {
        Vec::new()
    }

    /// The zones this plugin sends by AXFR (`transfer`), each read afresh
    /// at every transfer.
    fn zone_sources(&self) -> Vec<Arc<dyn ZoneSource>> {
        Vec::new()
    }

    /// For a plugin whose data changes at run time (reloaded from disk): the
    /// count of those changes, each counted after its data is in place, so
    /// that a replayed cache hit for a question this plugin passed stands
    /// only while the count read before asking it has not moved. Such a
    /// plugin answers alike for every client.
    fn changes(&self) -> Option<&Arc<AtomicU64>> {
        None
    }

    /// Whether a replayed cache hit may stand in for this plugin on a
    /// question it passed (with [`Answering::changes`] checked): false for
    /// one whose answer depends on the client or the request, so that no
    /// cache hit of its block is replayed.
    fn replayable(&self) -> bool {
        true
    }

    /// The counters this plugin keeps for `/metrics`, if any.
    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        None
    }

    /// The answer's writer when it answered into `out` (by default
    /// [`Answering::plugin`]; a plugin of several directives names one).
    fn writer(&self, _out: &Answer) -> Plugin {
        self.plugin()
    }

    /// Whether a zone it serves holds `qname` (its answer for the name may
    /// come and go: no memo of it unanswered, no replayed cache hit).
    fn serves(&self, _qname: &Name) -> bool {
        false
    }

    /// Whether it serves `qname`'s zone yet has no zone found for it (with
    /// nothing after it: REFUSED, as for a name not served, not SERVFAIL).
    fn unfound(&self, _qname: &Name) -> bool {
        false
    }

    /// A NOTIFY (RFC 1996) for `zone` from `from`: `None` when it keeps no
    /// such zone by transfer; else whether `from` is a primary of the zone
    /// (then the zone is checked now).
    fn notify(&self, _zone: &Name, _from: IpAddr) -> Option<bool> {
        None
    }

    /// What `/ready` asks of this plugin, if it is one that `/ready`
    /// waits for.
    fn readiness(&self) -> Option<Arc<dyn Readiness>> {
        None
    }

    /// For an early plugin: whether [`Chain::run_again`] asks it again, on the question as it
    /// reaches the plugins after the guard (rewritten, a search name, asked for another block).
    fn asks_again(&self) -> bool {
        false
    }
}

/// A directive's parsed options, as a server block of the configuration
/// holds them.
pub trait Setup: Debug + Send + Sync + Any {
    /// The directive's name, as in the table.
    fn name(&self) -> &'static str;

    /// The plugin the router runs, in the block whose metrics' `server`
    /// label is `server` (by default one that passes every question).
    fn build(&self, _server: &str) -> Box<dyn Answering> {
        Box::new(Passes(None))
    }

    /// For a directive that answers nothing but judges who may ask what:
    /// its guard, in the block whose metrics' `server` label is `server`
    /// ([`Chain::build`] then never asks it to [`Setup::build`]).
    fn guard(&self, _server: &str) -> Option<Box<dyn Guard>> {
        None
    }

    /// The plugin the router runs, built with what its block holds beside
    /// the plugin's own options (by default [`Setup::build`]).
    fn build_in(&self, ctx: &BuildContext<'_>) -> Box<dyn Answering> {
        self.build(ctx.server)
    }

    /// Its lines for `clusterdns check`.
    fn print(&self, b: &mut Block);

    /// The plugin that acts after the answer, for a directive that has
    /// one instead of a plugin in the chain ([`Setup::build`] is then not
    /// asked), in the block whose metrics' `server` label is `server`.
    fn after_answer(&self, _server: &str) -> Option<Arc<dyn AfterAnswer>> {
        None
    }

    /// The plugin that signs the block's answers (`dnssec`), asked beside
    /// [`Setup::build`], in the block whose metrics' `server` label is `server`.
    fn signing(&self, _server: &str) -> Option<Arc<dyn Signing>> {
        None
    }

    /// What it needs of the other directives of its block, each error
    /// pushed to `errors` (checked when the whole block is read).
    fn check(&self, _block: &CheckContext<'_>, _errors: &mut Vec<ConfigError>) {}

    /// The zones `transfer` may send from this plugin.
    fn transferred(&self) -> Vec<&Name> {
        Vec::new()
    }
}

/// A plugin that passes every question: [`Setup::build`]'s default, for a
/// directive with no plugin in the chain; it may hold what lives as long as
/// the chain does (a task stopped when dropped).
pub struct Passes(pub Option<Box<dyn Any + Send + Sync>>);

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

/// A block's answering plugins, by stage, each in the table's order.
#[derive(Default)]
pub struct Chain {
    pub early: Vec<Box<dyn Answering>>,
    pub before_cluster: Vec<Box<dyn Answering>>,
    pub data: Vec<Box<dyn Answering>>,
    pub last: Vec<Box<dyn Answering>>,
    /// The block's guard, asked at the router's gates (none: every
    /// question passes).
    pub guard: Option<Box<dyn Guard>>,
    /// The plugin that acts after the answer, if the block has one.
    pub after: Option<Arc<dyn AfterAnswer>>,
    /// The plugin that signs answers, if the block has one.
    pub signer: Option<Arc<dyn Signing>>,
    /// The plugins' [`Answering::store_zones`], all together.
    pub store_zones: Vec<Name>,
    /// Where in `early` the plugins asked again are ([`Answering::asks_again`]).
    pub again: Vec<usize>,
}

impl Chain {
    /// The plugins of `setups` (already in the table's order), in the
    /// block whose metrics' `server` label is `server`.
    pub fn build<'a>(setups: impl IntoIterator<Item = &'a Arc<dyn Setup>>, server: &str) -> Chain {
        Chain::build_in(setups, &BuildContext::of(server))
    }

    /// The plugins of `setups` (already in the table's order), built with
    /// what their block holds ([`BuildContext`]).
    pub fn build_in<'a>(setups: impl IntoIterator<Item = &'a Arc<dyn Setup>>, ctx: &BuildContext<'_>) -> Chain {
        let mut chain = Chain::default();
        for setup in setups {
            if let Some(guard) = setup.guard(ctx.server) {
                chain.guard = Some(guard);
                continue;
            }
            if let Some(after) = setup.after_answer(ctx.server) {
                chain.after = Some(after);
                continue;
            }
            chain.signer = setup.signing(ctx.server).or(chain.signer.take());
            let plugin = setup.build_in(ctx);
            chain.store_zones.extend(plugin.store_zones());
            match plugin.stage() {
                Stage::Early => {
                    chain.again.extend(plugin.asks_again().then_some(chain.early.len()));
                    chain.early.push(plugin)
                }
                Stage::BeforeCluster => chain.before_cluster.push(plugin),
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
                    took(verdict, p.writer(out), out);
                    return Outcome::Answered;
                }
            }
        }
        Outcome::Passed
    }

    /// Runs the early plugins that ask again ([`Answering::asks_again`]) on
    /// `query` as it reaches the plugins after the guard, as [`Chain::run`].
    #[inline]
    pub fn run_again(&self, query: &Query, client: &Client, out: &mut Answer) -> Outcome {
        self.again
            .iter()
            .map(|&i| Chain::run(std::slice::from_ref(&self.early[i]), query, client, out))
            .find(|o| *o != Outcome::Passed)
            .unwrap_or(Outcome::Passed)
    }

    /// The counters the block's plugins keep for `/metrics`.
    pub fn exposed(&self) -> impl Iterator<Item = Arc<dyn Exposed>> + '_ {
        let guard = self.guard.iter().filter_map(|g| g.exposed());
        let after = self.after.as_ref().and_then(|a| a.exposed());
        let signer = self.signer.as_ref().and_then(|s| s.exposed());
        self.all()
            .filter_map(|p| p.exposed())
            .chain(guard)
            .chain(after)
            .chain(signer)
    }

    /// Whether a replayed cache hit may stand in for every plugin before
    /// `cache` ([`Answering::replayable`]).
    pub fn replayable(&self) -> bool {
        self.early
            .iter()
            .chain(&self.before_cluster)
            .chain(&self.data)
            .all(|p| p.replayable())
    }

    /// The block's plugins that `/ready` waits for.
    pub fn readiness(&self) -> impl Iterator<Item = Arc<dyn Readiness>> + '_ {
        self.all().filter_map(|p| p.readiness())
    }

    /// Whether an A or AAAA question of class IN for `qname` passes every
    /// plugin before `kubernetes` (inlined: asked of every query the
    /// direct path writes).
    #[inline]
    pub fn passes_address(&self, qname: &Name) -> bool {
        self.early.iter().all(|p| p.passes_address(qname))
            && self.before_cluster.iter().all(|p| p.passes_address(qname))
    }

    /// Whether a plugin of the chain may answer `query` later though it
    /// passes it now.
    pub fn may_answer_later(&self, query: &Query) -> bool {
        self.all().any(|p| p.may_answer_later(query))
    }

    /// Whether a plugin of the chain reads its answer to a question for
    /// `qname` from the cluster store ([`Answering::store_zones`]).
    pub fn reads_store(&self, qname: &Name) -> bool {
        self.store_zones.iter().any(|z| z.zone_of(qname))
    }

    /// The zones the chain's plugins send by AXFR, in the chain's order.
    pub fn zone_sources(&self) -> Vec<Arc<dyn ZoneSource>> {
        self.all().flat_map(|p| p.zone_sources()).collect()
    }

    /// The change counts of the plugins before `cache` whose data changes
    /// at run time ([`Answering::changes`]), each with its count now, if
    /// every one of them passes `query` with its data as loaded now;
    /// `None` when one answers it.
    pub fn passed_as_loaded(&self, query: &Query) -> Option<Vec<(Arc<AtomicU64>, u64)>> {
        let mut seen = Vec::new();
        for (p, changes) in self
            .early
            .iter()
            .chain(&self.before_cluster)
            .chain(&self.data)
            .filter_map(|p| Some((p, p.changes()?)))
        {
            // Counted before the data is read: a change after this moves it.
            let count = changes.load(std::sync::atomic::Ordering::Acquire);
            if p.answer(query, &Client::ANY, &mut Answer::default()) != Verdict::Next {
                return None;
            }
            seen.push((changes.clone(), count));
        }
        Some(seen)
    }

    /// Whether a plugin before the cluster serves `qname` ([`Answering::serves`]).
    pub fn serves(&self, qname: &Name) -> bool {
        self.before_cluster.iter().any(|p| p.serves(qname))
    }

    /// Whether a plugin before the cluster found no zone for `qname` ([`Answering::unfound`]).
    pub fn unfound(&self, qname: &Name) -> bool {
        self.before_cluster.iter().any(|p| p.unfound(qname))
    }

    /// A NOTIFY for `zone` from `from`, told the plugin keeping that zone
    /// by transfer ([`Answering::notify`]); `None`: none keeps it.
    pub fn notified(&self, zone: &Name, from: IpAddr) -> Option<bool> {
        self.all().find_map(|p| p.notify(zone, from))
    }

    /// Every plugin of the chain, by stage.
    fn all(&self) -> impl Iterator<Item = &Box<dyn Answering>> + '_ {
        self.early
            .iter()
            .chain(&self.before_cluster)
            .chain(&self.data)
            .chain(&self.last)
    }
}
