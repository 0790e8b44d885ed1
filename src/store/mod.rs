//! The store where the two paths meet: immutable snapshots, one writer,
//! readers that never lock.
//!
//! The query path calls [`Store::load`] once per query and reads the
//! [`Snapshot`] through its lookup methods: nothing else of the store is
//! visible to it. The watch path feeds the single [`Writer`], which edits
//! its own copy of the snapshot and publishes it with [`Store::publish`].
//! Snapshots are built from persistent maps: a copy costs O(1) and a change
//! to one Service copies only the map nodes on its path, whatever the size
//! of the cluster. Readers holding an older snapshot finish with it; it is
//! freed when the last one lets go.

mod addrs;
mod change;
pub mod changes;
mod endpoints;
mod ips;
mod maps;
pub mod mcs;
mod ports;
pub mod records;
mod servicemap;
mod short;
mod slices;
mod slot;
mod snapshot;
pub mod topology;
mod write;

pub use change::{Kind, ObjectKey, PortIn, Record};
pub use changes::{Changed, Dep, Deps};
pub use ips::Ips;
pub use maps::{IMap, Map};
pub use ports::Ports;
pub use records::{
    Endpoint, Endpoints, External, Port, Proto, PtrHost, PtrTarget, Service, ServiceId, ServiceKind, Slice, Slices,
};
pub use servicemap::{ServiceKey, ServiceMap};
pub use short::Short;
pub use slot::Store;
pub use snapshot::{Namespace, Snapshot};
pub use write::{Export, Writer};
