//! What a transferred zone is read from: the `kubernetes` plugin's
//! snapshot ([`super::zone::Walk`]) or a zone a plugin of the chain offers
//! ([`ZoneSource`], walked by the plugin), walked the same way by
//! [`super::Transfer`]'s sender. The cluster zone answers an IXFR with the
//! SOA alone for the serial held or a newer one; a plugin's walk judges
//! that itself ([`ZoneWalk::current`]).

use std::sync::Arc;

use hickory_proto::rr::{Name, Record};

use super::zone::Walk;
use crate::query::plugins::cluster::Cluster;
use crate::query::plugins::zone_source::{ZoneSource, ZoneWalk};
use crate::query::reply::Zone as ClusterZone;
use crate::zonefile::newer;

/// Where one transferred zone's records come from.
pub enum Source {
    /// A zone of the block's `kubernetes` plugin.
    Cluster(Box<ClusterZone>),
    /// A zone a plugin of the block's chain offers.
    Plugin(Arc<dyn ZoneSource>),
}

impl Source {
    pub fn name(&self) -> &Name {
        match self {
            Source::Cluster(z) => &z.name,
            Source::Plugin(source) => source.name(),
        }
    }

    /// Whether it is sent without a `transfer` directive ([`ZoneSource::open`]).
    pub fn open(&self) -> bool {
        matches!(self, Source::Plugin(source) if source.open())
    }

    /// The zone named `zone` found under this one at run time, if any
    /// ([`ZoneSource::member`]).
    pub fn member(&self, zone: &Name) -> Option<Arc<dyn ZoneSource>> {
        match self {
            Source::Cluster(_) => None,
            Source::Plugin(source) => source.member(zone),
        }
    }

    /// The serial to NOTIFY about; `None` while the zone has none (the
    /// cluster not synced yet, a plugin's zone not loaded).
    pub fn serial(&self, cluster: Option<&Cluster>) -> Option<u32> {
        match self {
            Source::Cluster(_) => {
                let store = &cluster?.store;
                store.synced().then(|| store.serial())
            }
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
            Source::Plugin(source) => source.walk().map(Walker::Plugin),
        }
    }
}

/// A walk through one zone, whichever its source.
pub enum Walker<'c> {
    Cluster(Box<Walk>, &'c Cluster),
    Plugin(Box<dyn ZoneWalk + 'c>),
}

impl Walker<'_> {
    pub fn serial(&self) -> u32 {
        match self {
            Walker::Cluster(w, _) => w.serial(),
            Walker::Plugin(w) => w.serial(),
        }
    }

    pub fn soa(&self) -> Record {
        match self {
            Walker::Cluster(w, c) => w.soa(c),
            Walker::Plugin(w) => w.soa(),
        }
    }

    /// Whether an IXFR from `held` gets the SOA alone.
    pub fn current(&self, held: u32) -> bool {
        match self {
            Walker::Cluster(w, _) => !newer(w.serial(), held),
            Walker::Plugin(w) => w.current(held),
        }
    }

    /// Appends the records of the next step to `out`; false when the walk
    /// is over (nothing appended).
    pub fn next(&mut self, out: &mut Vec<Record>) -> bool {
        match self {
            Walker::Cluster(w, c) => w.next(c, out),
            Walker::Plugin(w) => w.next(out),
        }
    }
}
