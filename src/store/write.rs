//! The single writer: applies one converted object at a time to its own
//! copy of the snapshot, keeps the derived indexes (reverse, pods) in step,
//! and handles relists.
//!
//! A relist of a kind ([`Writer::relist_start`] … [`Writer::relist_done`])
//! applies every listed object as an upsert as it arrives — an upsert never
//! removes a name — and deletes the objects the list did not contain only
//! when it is done. So readers never see a half-listed cluster, a stable
//! name never disappears in between, and nothing but the compact records
//! that changed is held twice.

use std::sync::Arc;
use std::time::SystemTime;

use super::change::{Kind, ObjectKey, Record};
use super::changes::{Changed, Dep};
use super::slot::Store;
use super::snapshot::{Namespace, Snapshot};

pub use export::Export;
use writer::Pair;
pub use writer::Writer;

impl Writer {
    /// Under `namespace_labels` (`on`): the snapshots serve only the
    /// namespaces whose Namespace object this writer holds.
    pub fn selecting_namespaces(mut self, on: bool) -> Writer {
        self.live.selected = on;
        self
    }

    /// The slice changes applied since the last call, with their trigger
    /// times: `(0 cluster_ip | 1 headless_with_selector | 2 headless_without_selector, time)`.
    pub fn take_programmed(&mut self) -> Vec<(usize, SystemTime)> {
        std::mem::take(&mut self.programmed)
    }

    /// Objects held, by kind (in [`Kind`] order; multi-cluster slices
    /// count as EndpointSlices).
    pub fn counts(&self) -> [usize; Kind::COUNT] {
        let namespaces = self.live.namespaces.values().filter(|n| n.object).count();
        let (imports, mcs_slices) = self.mcs_counts();
        [
            namespaces,
            self.live.service_count(),
            self.slices + mcs_slices,
            self.pod_ips.len(),
            imports,
        ]
    }

    /// Whether every watched kind has been listed once.
    pub fn synced(&self) -> bool {
        self.watched.iter().all(|k| self.listed[*k as usize])
    }

    /// Whether every watched kind has been listed by the source (not
    /// only restored by [`Writer::restored`]).
    pub fn confirmed(&self) -> bool {
        self.watched.iter().all(|k| self.confirmed[*k as usize])
    }

    /// The objects applied so far are a state restored from disk: serve
    /// them as synced until the source lists each kind and reconciles.
    pub fn restored(&mut self) {
        for kind in &self.watched {
            self.listed[*kind as usize] = true;
        }
        self.changed.everything();
        self.dirty = true;
        self.prune_strings();
    }

    /// Publishes the current state to `store` if anything changed.
    /// Before the first full sync nothing is published (readers answer
    /// SERVFAIL either way), so the initial lists build the snapshot in
    /// place instead of copying shared map nodes batch after batch.
    pub fn publish(&mut self, store: &Store, serial: u32) -> bool {
        if !self.dirty || !self.synced() {
            return false;
        }
        self.finish_build();
        if !self.live.synced {
            self.changed.everything(); // SERVFAIL answers end
        }
        self.live.synced = self.synced();
        // Strictly increasing, so that two changes within a second still
        // tell the secondaries (NOTIFY, the SOA they poll) the zone changed.
        self.live.serial = serial.max(self.live.serial.wrapping_add(1));
        store.publish_changes(self.live.clone(), &std::mem::take(&mut self.changed));
        self.dirty = false;
        true
    }

    /// The current state (for tests and one-shot builds).
    pub fn snapshot(&mut self, serial: u32) -> Snapshot {
        self.finish_build();
        self.live.synced = self.synced();
        self.live.serial = serial;
        self.live.clone()
    }

    /// Ends the bulk build of the first snapshot (before it is shown).
    fn finish_build(&mut self) {
        if std::mem::take(&mut self.building) {
            self.live.reverse.sort();
            self.live.endpoint_reverse.sort();
            self.live.pods.sort();
            self.live.clusterset.reverse.sort();
        }
    }

    /// Adds or replaces one object; whether that changed anything.
    pub fn apply(&mut self, record: Record) -> bool {
        let (kind, namespace, name) = record.key_parts();
        // Pod, slice and Service names are unique: interning would only
        // add a set entry. A Service holds its name in its identity.
        let namespace = self.intern(namespace);
        let name = match kind {
            Kind::Pod | Kind::EndpointSlice | Kind::Service => Arc::from(name),
            _ => self.intern(name),
        };
        let pair = (namespace, name);
        let relisting = match &mut self.relisting[kind as usize] {
            Some(_) if self.first_list[kind as usize] => true,
            Some(seen) => {
                seen.insert(std::hash::BuildHasher::hash_one(&self.seen_hasher, &pair));
                true
            }
            None => false,
        };
        let changed = self.upsert(pair, record);
        if changed {
            self.dirty = true;
            self.relist_changes[kind as usize] += usize::from(relisting);
        }
        if self.strings.len() > 2 * self.strings_after_prune + 4096 {
            self.prune_strings();
        }
        changed
    }

    fn upsert(&mut self, pair: Pair, record: Record) -> bool {
        match record {
            Record::Namespace { .. } => self.upsert_namespace(&pair.1),
            Record::Service {
                kind,
                ports,
                selector,
                external,
                ..
            } => {
                let ports = self.ports(ports);
                self.upsert_service(&pair, kind, ports, selector, external)
            }
            Record::Slice {
                service,
                ports,
                endpoints,
                zones,
                trigger,
                ..
            } => {
                let ports = self.ports(ports);
                let endpoints = self.endpoints(endpoints);
                let zones = zones.iter().map(|z| (!z.is_empty()).then(|| self.intern(z))).collect();
                let endpoints = endpoints.with_zones(zones);
                let service = Arc::from(service.as_str());
                self.delete_mcs_slice(&pair); // relabelled from an import
                self.upsert_slice(&pair, service, ports, endpoints, trigger)
            }
            Record::Pod { ips, running, .. } => self.upsert_pod(pair, ips, running),
            Record::Import { kind, ports, .. } => {
                let ports = self.ports(ports);
                self.upsert_import(&pair, Some(kind), ports)
            }
            Record::McsSlice {
                service,
                cluster,
                ports,
                endpoints,
                ..
            } => {
                // A slice relabelled from a Service to an import moves.
                if self.has_slice(&pair) {
                    self.delete_slice(&pair);
                }
                let ports = self.ports(ports);
                let endpoints = self.endpoints(endpoints);
                let (service, cluster) = (self.intern(&service), self.intern(&cluster));
                self.upsert_mcs_slice(&pair, service, cluster, ports, endpoints)
            }
        }
    }

    /// Removes one object (unknown objects are ignored).
    pub fn delete(&mut self, key: &ObjectKey) {
        let pair: Pair = (Arc::from(key.namespace.as_str()), Arc::from(key.name.as_str()));
        match key.kind {
            Kind::Namespace => self.edit_namespace(&pair.1, |n| n.object = false),
            Kind::Service => self.delete_service(&pair),
            Kind::EndpointSlice => {
                if !self.delete_mcs_slice(&pair) {
                    self.delete_slice(&pair);
                }
            }
            Kind::Pod => self.remove_pod(&pair),
            Kind::ServiceImport => self.delete_import(&pair),
        }
        self.dirty = true;
    }

    /// Marks the Namespace object `ns` as held; whether it was not.
    fn upsert_namespace(&mut self, ns: &Arc<str>) -> bool {
        let known = self.live.namespaces.get(ns).is_some_and(|n| n.object);
        if !known {
            self.edit_namespace(ns, |n| n.object = true);
        }
        !known
    }

    /// Edits a namespace entry, dropping it once it holds nothing.
    /// The entry is taken out of the map while it is edited, so that its
    /// service map is not shared and is edited in place unless a published
    /// snapshot holds it (a clone would copy the path of every insert).
    /// While the first snapshot is built nothing shares the entry: it is
    /// edited where it is.
    fn edit_namespace(&mut self, ns: &Arc<str>, edit: impl FnOnce(&mut Namespace)) {
        if self.building {
            if let Some(entry) = self.live.namespaces.get_mut(ns) {
                let before = (entry.object || entry.live_services > 0, entry.object);
                edit(entry);
                note_namespace(&mut self.changed, self.live.selected, ns, before, entry);
                if !entry.object && entry.services.is_empty() {
                    self.live.namespaces.remove(ns);
                }
                return;
            }
        }
        let mut entry = self.live.namespaces.remove(ns).unwrap_or_default();
        let before = (entry.object || entry.live_services > 0, entry.object);
        edit(&mut entry);
        note_namespace(&mut self.changed, self.live.selected, ns, before, &entry);
        if entry.object || !entry.services.is_empty() {
            self.live.namespaces.insert(ns.clone(), entry);
        }
    }
}

/// Records what an edit of namespace `ns` changed: `(existed, object)`
/// before it, the entry after.
fn note_namespace(changed: &mut Changed, selected: bool, ns: &str, (existed, object): (bool, bool), entry: &Namespace) {
    if selected && object != entry.object {
        // Under namespace_labels a namespace now served or hidden
        // turns every name in it, and the PTR and pod answers naming
        // them (a rare change: a Namespace created, deleted, relabelled).
        changed.everything();
    } else if existed != (entry.object || entry.live_services > 0) {
        changed.add(Dep::namespace(ns));
    }
}

mod export;
mod inplace;
mod intern;
mod mcs;
mod pods;
mod relist;
mod services;
#[cfg(test)]
mod tests;
mod writer;
