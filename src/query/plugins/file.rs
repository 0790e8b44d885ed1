//! The zone plugin: zones served from zone files, this home's `file`
//! lines and those of the directives that serve zones the same way (a
//! directory's files, zones taken in by transfer), each parsed in its own
//! home as a [`Line`]. A block's lines of all of them are ONE plugin
//! ([`ZonesConfig`] built into [`Zones`]), as CoreDNS's: the longest origin
//! holding the name answers, whichever line it is written on.
//!
//! It is one of the chain's plugins before the cluster
//! ([`Stage::BeforeCluster`]). Its zones' changes (a file reloaded, a
//! transfer, an expiry, a new set of zones found) move the memo's epoch
//! ([`crate::query::plugins::chain::changed`]), so its answers are
//! memoized, replayed only for the same spelling of the name (they keep
//! the zone's), and no cache hit of a name it holds is replayed. The
//! router asks it, through the chain, whether it holds a name's zone, what
//! a NOTIFY for a zone is, and which zones `transfer` may send
//! (`Setup::transferred`, `Answering::zone_sources`: [`walk`]).

pub mod line;
pub mod print;
pub mod setup;
mod walk;
pub mod zone;

use std::any::Any;
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::Query;
use hickory_proto::rr::Name;

use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::verdict::Verdict;
use crate::query::plugins::zone_source::ZoneSource;
use crate::query::reply::Answer;
use line::Line;
use walk::{FileSource, FoundSource};
use zone::ZoneFile;

/// A block's zone directive lines, in the table's order of their
/// directives (then as written): the block's one zone plugin.
#[derive(Debug, Clone, Default)]
pub struct ZonesConfig {
    lines: Vec<Arc<dyn Line>>,
}

/// The name the block's zone setup goes by among its plugins.
const NAME: &str = "file";

impl Setup for ZonesConfig {
    fn name(&self) -> &'static str {
        NAME
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Zones {
            files: self.lines.iter().map(|l| l.start()).collect(),
        })
    }

    fn print(&self, b: &mut Block) {
        self.lines.iter().for_each(|l| l.print(b));
    }

    fn transferred(&self) -> Vec<&Name> {
        self.lines.iter().flat_map(|l| l.transferred()).collect()
    }
}

/// The block's zone setup (`earlier`, the one it has, if any) with
/// `line` added after the lines of its directive and the ones before it.
pub fn with(earlier: Option<&Arc<dyn Setup>>, line: Arc<dyn Line>) -> Arc<dyn Setup> {
    let mut cfg = of(earlier).cloned().unwrap_or_default();
    let at = cfg.lines.iter().position(|l| l.rank() > line.rank());
    cfg.lines.insert(at.unwrap_or(cfg.lines.len()), line);
    Arc::new(cfg)
}

/// Whether the block's zone setup has a line of `directive`.
pub fn holds(setup: Option<&Arc<dyn Setup>>, directive: &str) -> bool {
    of(setup).is_some_and(|z| z.lines.iter().any(|l| l.directive() == directive))
}

/// `check`'s lines of the block's `directive` lines.
pub fn print_lines(b: &mut Block, setup: Option<&Arc<dyn Setup>>, directive: &str) {
    let lines = of(setup).into_iter().flat_map(|z| &z.lines);
    lines.filter(|l| l.directive() == directive).for_each(|l| l.print(b));
}

fn of(setup: Option<&Arc<dyn Setup>>) -> Option<&ZonesConfig> {
    setup.and_then(|s| (&**s as &dyn Any).downcast_ref::<ZonesConfig>())
}

/// The block's zone plugin: each line's zones, in the setup's order.
pub struct Zones {
    files: Vec<ZoneFile>,
}

impl Zones {
    /// The zones of the longest origin holding `qname` (the first line's
    /// of equally long ones), as CoreDNS's one plugin for all the lines.
    fn longest(&self, qname: &Name) -> Option<&ZoneFile> {
        let mut longest: Option<(u8, &ZoneFile)> = None;
        for file in &self.files {
            if let Some(labels) = file.depth(qname).filter(|l| longest.is_none_or(|(best, _)| *l > best)) {
                longest = Some((labels, file));
            }
        }
        longest.map(|(_, file)| file)
    }
}

impl Answering for Zones {
    fn stage(&self) -> Stage {
        Stage::BeforeCluster
    }

    fn plugin(&self) -> Plugin {
        Plugin::File
    }

    fn answer(&self, query: &Query, client: &Client, out: &mut Answer) -> Verdict {
        let qname = query.name();
        let Some(file) = self.longest(qname) else {
            return Verdict::Next;
        };
        let verdict = file.answer(qname, query.query_type(), client.wire.dnssec_ok, out);
        if verdict != Verdict::Next {
            // Its zone's changes move the memo's epoch; its names keep
            // the zone's spelling, so only the same spelling replays.
            out.tags.plugin = file.plugin;
            out.tags.memoizable = true;
            out.tags.exact_case = true;
        }
        verdict
    }

    /// The line whose zone answered (`answer` named it).
    fn writer(&self, out: &Answer) -> Plugin {
        out.tags.plugin
    }

    fn passes_address(&self, qname: &Name) -> bool {
        !self.serves(qname)
    }

    fn serves(&self, qname: &Name) -> bool {
        self.files.iter().any(|f| f.serves(qname))
    }

    fn unfound(&self, qname: &Name) -> bool {
        self.files.iter().any(|f| f.unfound(qname))
    }

    fn notify(&self, zone: &Name, from: IpAddr) -> Option<bool> {
        self.files.iter().find_map(|f| f.notify(zone, from))
    }

    fn zone_sources(&self) -> Vec<Arc<dyn ZoneSource>> {
        let origins = self.files.iter().flat_map(ZoneFile::origins);
        let mut sources: Vec<Arc<dyn ZoneSource>> = origins
            .map(|(origin, loaded)| {
                let (origin, loaded) = (origin.clone(), loaded.clone());
                Arc::new(FileSource { origin, loaded }) as Arc<dyn ZoneSource>
            })
            .collect();
        for (zones, found) in self.files.iter().filter_map(ZoneFile::found_under) {
            let found = |zone: &Name| FoundSource {
                zone: zone.clone(),
                found: found.clone(),
            };
            sources.extend(zones.iter().map(|z| Arc::new(found(z)) as Arc<dyn ZoneSource>));
        }
        sources
    }
}

#[cfg(test)]
mod tests;
