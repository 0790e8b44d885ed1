//! What a transferred zone is read from: the `kubernetes` plugin's
//! snapshot ([`super::zone::Walk`]), a zone file's loaded zone
//! ([`FileWalk`]) or a `k8s_external` zone ([`ExternalWalk`]), walked the
//! same way by [`super::Transfer`]'s sender.
//!
//! A zone file's zone goes out as CoreDNS sends one: the SOA, the
//! apex NS set, every other owner's records in canonical name order (the
//! apex's own first), the SOA again. An IXFR naming the serial loaded gets
//! the SOA alone; any other serial, the whole zone (CoreDNS's zone-file
//! `Transfer`; the cluster zone answers the SOA alone for a newer serial
//! too).

use std::sync::Arc;

use hickory_proto::rr::{Name, Record};

use super::external::ExternalWalk;
use super::zone::Walk;
use crate::query::plugins::cluster::Cluster;
use crate::query::plugins::k8s_external::K8sExternal;
use crate::query::reply::Zone as ClusterZone;
use crate::store::Store;
use crate::zonefile::Zone;

/// Where one transferred zone's records come from.
pub enum Source {
    /// A zone of the block's `kubernetes` plugin.
    Cluster(ClusterZone),
    /// A zone the block's chain may send (`Answering::sendable`): its
    /// origin and the zone loaded for it.
    File(Name, Arc<arc_swap::ArcSwap<Option<Zone>>>),
    /// A forward zone of the block's `k8s_external` plugin, and the
    /// `kubernetes` store it reads.
    External(Name, Arc<K8sExternal>, Arc<Store>),
}

impl Source {
    pub fn name(&self) -> &Name {
        match self {
            Source::Cluster(z) => &z.name,
            Source::File(origin, _) | Source::External(origin, ..) => origin,
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
            Source::External(_, _, store) => store.synced().then(|| store.serial()),
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
            Source::External(zone, ext, store) => {
                ExternalWalk::new(ext, store, zone).map(|w| Walker::External(Box::new(w), ext, store))
            }
        }
    }
}

/// A walk through one zone, whichever its source.
pub enum Walker<'c> {
    Cluster(Box<Walk>, &'c Cluster),
    File(Box<FileWalk>),
    External(Box<ExternalWalk>, &'c K8sExternal, &'c Store),
}

impl Walker<'_> {
    pub fn serial(&self) -> u32 {
        match self {
            Walker::Cluster(w, _) => w.serial(),
            Walker::File(w) => w.serial,
            Walker::External(w, ..) => w.serial(),
        }
    }

    pub fn soa(&self) -> Record {
        match self {
            Walker::Cluster(w, c) => w.soa(c),
            Walker::File(w) => w.soa.clone(),
            Walker::External(w, ..) => w.soa(),
        }
    }

    /// Whether an IXFR from `held` gets the SOA alone.
    pub fn current(&self, held: u32) -> bool {
        match self {
            Walker::Cluster(w, _) => !super::newer(w.serial(), held),
            Walker::File(w) => w.serial == held,
            Walker::External(w, ..) => !super::newer(w.serial(), held),
        }
    }

    /// Appends the records of the next step to `out`; false when the walk
    /// is over (nothing appended).
    pub fn next(&mut self, out: &mut Vec<Record>) -> bool {
        match self {
            Walker::Cluster(w, c) => w.next(c, out),
            Walker::File(w) => w.next(out),
            Walker::External(w, ext, store) => w.next(ext, store, out),
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
