//! What a transferred zone is read from: the `kubernetes` plugin's
//! snapshot ([`super::zone::Walk`]), a `file` plugin's loaded zone
//! ([`FileWalk`]) or a zone a plugin of the chain offers ([`ZoneSource`]),
//! walked the same way by [`super::Transfer`]'s sender.
//!
//! A file zone goes out as CoreDNS's `file` plugin sends it: the SOA, the
//! apex NS set, every other owner's records in canonical name order (the
//! apex's own first), the SOA again. An IXFR naming the serial loaded gets
//! the SOA alone; any other serial, the whole zone (CoreDNS's file
//! `Transfer`; the cluster zone answers the SOA alone for a newer serial
//! too).

use std::sync::Arc;

use hickory_proto::rr::{Name, Record};

use super::zone::Walk;
use crate::query::plugins::cluster::Cluster;
use crate::query::plugins::file::Loaded;
use crate::query::plugins::zone_source::{ZoneSource, ZoneWalk};
use crate::query::reply::Zone as ClusterZone;
use crate::zonefile::Zone;

/// Where one transferred zone's records come from.
pub enum Source {
    /// A zone of the block's `kubernetes` plugin.
    Cluster(ClusterZone),
    /// An origin of one of the block's `file` plugins.
    File(Name, Loaded),
    /// A zone a plugin of the block's chain offers.
    Plugin(Arc<dyn ZoneSource>),
}

impl Source {
    pub fn name(&self) -> &Name {
        match self {
            Source::Cluster(z) => &z.name,
            Source::File(origin, _) => origin,
            Source::Plugin(source) => source.name(),
        }
    }

    /// The serial to NOTIFY about; `None` while the zone has none (the
    /// cluster not synced yet, the file not loaded).
    pub fn serial(&self, cluster: Option<&Cluster>) -> Option<u32> {
        match self {
            Source::Cluster(_) => {
                let store = &cluster?.store;
                store.synced().then(|| store.serial())
            }
            Source::File(_, loaded) => loaded.load().as_ref().as_ref().map(Zone::serial),
            Source::Plugin(source) => source.serial(),
        }
    }

    /// A walk through the zone as it is now; `None` when it cannot be
    /// sent (SERVFAIL: not synced, not loaded).
    pub fn walk<'c>(&'c self, cluster: Option<&'c Cluster>) -> Option<Walker<'c>> {
        match self {
            Source::Cluster(zone) => {
                let cluster = cluster?;
                let snap = arc_swap::Guard::into_inner(cluster.store.load());
                snap.synced
                    .then(|| Walker::Cluster(Box::new(Walk::new(cluster, snap, zone)), cluster))
            }
            Source::File(_, loaded) => FileWalk::new(loaded.load_full()).map(|w| Walker::File(Box::new(w))),
            Source::Plugin(source) => source.walk().map(Walker::Plugin),
        }
    }
}

/// A walk through one zone, whichever its source.
pub enum Walker<'c> {
    Cluster(Box<Walk>, &'c Cluster),
    File(Box<FileWalk>),
    Plugin(Box<dyn ZoneWalk + 'c>),
}

impl Walker<'_> {
    pub fn serial(&self) -> u32 {
        match self {
            Walker::Cluster(w, _) => w.serial(),
            Walker::File(w) => w.serial,
            Walker::Plugin(w) => w.serial(),
        }
    }

    pub fn soa(&self) -> Record {
        match self {
            Walker::Cluster(w, c) => w.soa(c),
            Walker::File(w) => w.soa.clone(),
            Walker::Plugin(w) => w.soa(),
        }
    }

    /// Whether an IXFR from `held` gets the SOA alone.
    pub fn current(&self, held: u32) -> bool {
        match self {
            Walker::Cluster(w, _) => !super::newer(w.serial(), held),
            Walker::File(w) => w.serial == held,
            Walker::Plugin(w) => w.current(held),
        }
    }

    /// Appends the records of the next step to `out`; false when the walk
    /// is over (nothing appended).
    pub fn next(&mut self, out: &mut Vec<Record>) -> bool {
        match self {
            Walker::Cluster(w, c) => w.next(c, out),
            Walker::File(w) => w.next(out),
            Walker::Plugin(w) => w.next(out),
        }
    }
}

/// A walk through a loaded file zone, one owner a step.
pub struct FileWalk {
    zone: Arc<Option<Zone>>,
    owners: Vec<Name>,
    soa: Record,
    serial: u32,
    /// 0: the head (SOA, apex NS); 1..=owners: that owner; then the tail.
    step: usize,
}

impl FileWalk {
    fn new(zone: Arc<Option<Zone>>) -> Option<FileWalk> {
        let loaded = zone.as_ref().as_ref()?;
        let owners = loaded.owners().into_iter().cloned().collect();
        let (soa, serial) = (loaded.soa().clone(), loaded.serial());
        Some(FileWalk {
            zone,
            owners,
            soa,
            serial,
            step: 0,
        })
    }

    fn next(&mut self, out: &mut Vec<Record>) -> bool {
        let zone = match self.zone.as_ref() {
            Some(z) => z,
            None => return false,
        };
        let step = self.step;
        self.step += 1;
        match step {
            0 => {
                out.push(self.soa.clone());
                out.extend(zone.apex_ns().iter().cloned());
            }
            i if i <= self.owners.len() => out.extend(zone.owned(&self.owners[i - 1]).into_iter().cloned()),
            i if i == self.owners.len() + 1 => out.push(self.soa.clone()),
            _ => return false,
        }
        true
    }
}
