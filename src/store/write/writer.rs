//! The writer's state: its own copy of the snapshot, the interned names,
//! the tables that map slices, pods and imports back to what they belong
//! to, and the bookkeeping of relists and readiness.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use crate::store::change::Kind;
use crate::store::changes::Changed;
use crate::store::records::{Ports, ServiceId};
use crate::store::snapshot::Snapshot;

/// The writer's own tables hash with foldhash too (SipHash was 2% of a sync).
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

pub type Pair = (Arc<str>, Arc<str>);

/// The writer of one store.
pub struct Writer {
    pub(super) live: Snapshot,
    pub(super) strings: HashSet<Arc<str>>,
    /// Port lists are interned too: most services share a handful.
    pub(super) port_lists: HashSet<Ports>,
    /// The port lists [`Writer::ports`] returned last, newest first.
    pub(super) recent_ports: [Option<Ports>; 4],
    pub(super) strings_after_prune: usize,
    /// `(namespace, slice)` → the identity of the service it belongs to,
    /// keyed by the 64-bit hash of `(namespace, slice)` (the relists'
    /// hash): 16 bytes an entry instead of 48 (6.4 MB of hash table at
    /// 100,000 slices, 2.1 now). The slice's name is its service's to
    /// hold; a collision could only keep a deleted slice until its
    /// service changes.
    /// Only slices not named after their service (`web-x7k2p` of `web`,
    /// as the EndpointSlice controller names them) are held here.
    pub(super) slice_owner: HashMap<u64, Arc<ServiceId>>,
    /// Slices held by Services.
    pub(super) slices: usize,
    /// The same for slices of imported services (`multicluster`): the
    /// slot of the import in the snapshot's identity table, keyed by the
    /// 64-bit hash of `(namespace, slice)` (the relists' hash): 16 bytes an
    /// entry instead of 48, a third of the writer's own memory at 30,000
    /// imported slices. The names are the imports' own; a collision, as in
    /// a relist, could only keep a deleted slice until the next relist.
    pub(super) mcs_slice_owner: HashMap<u64, u32>,
    /// Free slots of the services' identity table.
    pub(super) free_slots: Vec<u32>,
    /// Free slots of the imports' identity table.
    pub(super) mcs_free_slots: Vec<u32>,
    /// `namespace/pod` → its IPs and whether it is Running.
    pub(super) pod_ips: HashMap<Box<str>, Pod>,
    /// Namespace → its index in the snapshot's `pod_namespaces`.
    pub(super) pod_namespace_ids: HashMap<Arc<str>, u32>,
    /// Keys seen by a relist in progress, per kind, as 64-bit hashes (8
    /// bytes a key instead of 32: the relist peak of 150,000 Pods; a
    /// collision would only keep a deleted object until the next relist).
    pub(super) relisting: [Option<HashSet<u64>>; Kind::COUNT],
    /// The relist in progress of a kind is its first (none held when it
    /// began): its keys are not recorded.
    pub(super) first_list: [bool; Kind::COUNT],
    pub(super) seen_hasher: foldhash::fast::RandomState,
    /// Objects the relist in progress changed (upserts that differed, and
    /// deletions at its end), per kind.
    pub(super) relist_changes: [usize; Kind::COUNT],
    pub(super) listed: [bool; Kind::COUNT],
    /// Listed by the source itself (not only restored from disk).
    pub(super) confirmed: [bool; Kind::COUNT],
    pub(super) watched: Vec<Kind>,
    pub(super) dirty: bool,
    /// Nothing published yet: reverse entries are pushed unsorted and
    /// sorted once before the first publish.
    pub(super) building: bool,
    /// Slice changes applied since the last [`Writer::take_programmed`]:
    /// `(service kind index, trigger time)`, for the programming latency.
    pub(super) programmed: Vec<(usize, SystemTime)>,
    /// What changed since the last publish, for the readers' memos.
    pub(super) changed: Changed,
}

impl Writer {
    /// A writer whose snapshot is synced once every kind in `watched` has
    /// completed a list.
    pub fn new(watched: &[Kind]) -> Writer {
        Writer {
            live: Snapshot::unsynced(),
            strings: HashSet::default(),
            port_lists: HashSet::default(),
            recent_ports: Default::default(),
            strings_after_prune: 0,
            slice_owner: HashMap::default(),
            slices: 0,
            mcs_slice_owner: HashMap::default(),
            free_slots: Vec::new(),
            mcs_free_slots: Vec::new(),
            pod_ips: HashMap::default(),
            pod_namespace_ids: HashMap::default(),
            relisting: Default::default(),
            first_list: [false; Kind::COUNT],
            seen_hasher: foldhash::fast::RandomState::default(),
            relist_changes: [0; Kind::COUNT],
            listed: [false; Kind::COUNT],
            confirmed: [false; Kind::COUNT],
            watched: watched.to_vec(),
            dirty: true,
            building: true,
            programmed: Vec::new(),
            changed: Changed::default(),
        }
    }
}

/// A pod's IPs and whether it is Running, without a heap allocation for
/// the common single IPv4 address (24 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pod {
    V4(u32, bool),
    Other(Box<[IpAddr]>, bool),
}

impl Pod {
    pub(super) fn new(ips: Vec<IpAddr>, running: bool) -> Pod {
        match ips.as_slice() {
            [IpAddr::V4(one)] => Pod::V4(one.to_bits(), running),
            _ => Pod::Other(ips.into_boxed_slice(), running),
        }
    }

    pub(crate) fn running(&self) -> bool {
        match self {
            Pod::V4(_, r) | Pod::Other(_, r) => *r,
        }
    }

    pub(crate) fn ips(&self) -> impl Iterator<Item = IpAddr> + '_ {
        let (one, other) = match self {
            Pod::V4(ip, _) => (Some(IpAddr::V4((*ip).into())), &[][..]),
            Pod::Other(ips, _) => (None, &ips[..]),
        };
        one.into_iter().chain(other.iter().copied())
    }
}
