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

/// The writer's own tables hash with foldhash too (SipHash was 2% of a sync).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use super::addrs::AddrIndex;
use super::change::{Kind, ObjectKey, PortIn, Record};
use super::changes::{Changed, Dep};
use super::records::{Endpoints, External, Port, Service, ServiceId, ServiceKind, Slice};
use super::{Namespace, Snapshot, Store};

pub use export::Export;
use pods::Pod;

type Pair = (Arc<str>, Arc<str>);

/// The writer of one store.
pub struct Writer {
    live: Snapshot,
    strings: HashSet<Arc<str>>,
    /// Port lists are interned too: most services share a handful.
    port_lists: HashSet<Arc<[Port]>>,
    strings_after_prune: usize,
    /// `(namespace, slice)` → the service it belongs to.
    slice_owner: HashMap<Pair, Arc<str>>,
    /// The same for slices of imported services (`multicluster`): the
    /// slot of the import in the snapshot's identity table, keyed by the
    /// 64-bit hash of `(namespace, slice)` (the relists' hash): 16 bytes an
    /// entry instead of 48, a third of the writer's own memory at 30,000
    /// imported slices. The names are the imports' own; a collision, as in
    /// a relist, could only keep a deleted slice until the next relist.
    mcs_slice_owner: HashMap<u64, u32>,
    /// Free slots of the imports' identity table.
    mcs_free_slots: Vec<u32>,
    /// `namespace/pod` → its IPs and whether it is Running.
    pod_ips: HashMap<Box<str>, Pod>,
    /// Namespace → its index in the snapshot's `pod_namespaces`.
    pod_namespace_ids: HashMap<Arc<str>, u32>,
    /// Keys seen by a relist in progress, per kind, as 64-bit hashes (8
    /// bytes a key instead of 32: the relist peak of 150,000 Pods; a
    /// collision would only keep a deleted object until the next relist).
    relisting: [Option<HashSet<u64>>; Kind::COUNT],
    seen_hasher: foldhash::fast::RandomState,
    /// Objects the relist in progress changed (upserts that differed, and
    /// deletions at its end), per kind.
    relist_changes: [usize; Kind::COUNT],
    listed: [bool; Kind::COUNT],
    /// Listed by the source itself (not only restored from disk).
    confirmed: [bool; Kind::COUNT],
    watched: Vec<Kind>,
    dirty: bool,
    /// Nothing published yet: reverse entries are pushed unsorted and
    /// sorted once before the first publish.
    building: bool,
    /// Slice changes applied since the last [`Writer::take_programmed`]:
    /// `(service kind index, trigger time)`, for the programming latency.
    programmed: Vec<(usize, SystemTime)>,
    /// What changed since the last publish, for the readers' memos.
    changed: Changed,
}

impl Writer {
    /// A writer whose snapshot is synced once every kind in `watched` has
    /// completed a list.
    pub fn new(watched: &[Kind]) -> Writer {
        Writer {
            live: Snapshot::unsynced(),
            strings: HashSet::default(),
            port_lists: HashSet::default(),
            strings_after_prune: 0,
            slice_owner: HashMap::default(),
            mcs_slice_owner: HashMap::default(),
            mcs_free_slots: Vec::new(),
            pod_ips: HashMap::default(),
            pod_namespace_ids: HashMap::default(),
            relisting: Default::default(),
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
            self.slice_owner.len() + mcs_slices,
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
        // tell a secondary (NOTIFY, the SOA it polls) the zone changed.
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

    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(existing) = self.strings.get(s) {
            return existing.clone();
        }
        let arc: Arc<str> = Arc::from(s);
        self.strings.insert(arc.clone());
        arc
    }

    /// Drops interned strings nothing else refers to any more.
    fn prune_strings(&mut self) {
        self.port_lists.retain(|p| Arc::strong_count(p) > 1);
        self.strings.retain(|s| Arc::strong_count(s) > 1);
        self.strings_after_prune = self.strings.len();
    }

    fn ports(&mut self, ports: Vec<PortIn>) -> Arc<[Port]> {
        let ports: Vec<Port> = ports
            .into_iter()
            .map(|p| Port {
                name: self.intern(&p.name),
                proto: p.proto,
                port: p.port,
            })
            .collect();
        if let Some(existing) = self.port_lists.get(&ports[..]) {
            return existing.clone();
        }
        let arc: Arc<[Port]> = ports.into();
        self.port_lists.insert(arc.clone());
        arc
    }

    /// Adds or replaces one object; whether that changed anything.
    pub fn apply(&mut self, record: Record) -> bool {
        let (kind, namespace, name) = record.key_parts();
        // Pod and slice names are unique: interning would only add a set entry.
        let name = match kind {
            Kind::Pod | Kind::EndpointSlice => Arc::from(name),
            _ => self.intern(name),
        };
        let pair = (self.intern(namespace), name);
        let relisting = match &mut self.relisting[kind as usize] {
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
            Record::Namespace { .. } => {
                let known = self.live.namespaces.get(&pair.1).is_some_and(|n| n.object);
                if !known {
                    self.edit_namespace(&pair.1, |n| n.object = true);
                }
                !known
            }
            Record::Service {
                kind,
                ports,
                selector,
                external,
                ..
            } => {
                let ports = self.ports(ports);
                let old = self.get_service(&pair);
                let same = |s: &Arc<Service>| {
                    s.kind.as_ref() == Some(&kind)
                        && s.ports == ports
                        && s.selector == selector
                        && s.external == external
                };
                if old.as_ref().is_some_and(same) {
                    return false;
                }
                self.upsert_service(&pair, kind, ports, selector, external);
                true
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
                let endpoints = endpoints
                    .into_iter()
                    .map(|(addr, host)| (addr, host.map(|h| self.intern(&h))))
                    .collect();
                let zones = zones.iter().map(|z| (!z.is_empty()).then(|| self.intern(z))).collect();
                let endpoints = Endpoints::new(endpoints).with_zones(zones);
                let service = self.intern(&service);
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
                if self.slice_owner.contains_key(&pair) {
                    self.delete_slice(&pair);
                }
                let ports = self.ports(ports);
                let endpoints = endpoints
                    .into_iter()
                    .map(|(addr, host)| (addr, host.map(|h| self.intern(&h))))
                    .collect();
                let (service, cluster) = (self.intern(&service), self.intern(&cluster));
                self.upsert_mcs_slice(&pair, service, cluster, ports, Endpoints::new(endpoints))
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

    /// Edits a namespace entry, dropping it once it holds nothing.
    /// The entry is taken out of the map while it is edited, so that its
    /// service map is not shared and is edited in place unless a published
    /// snapshot holds it (a clone would copy the path of every insert).
    fn edit_namespace(&mut self, ns: &Arc<str>, edit: impl FnOnce(&mut Namespace)) {
        let mut entry = self.live.namespaces.remove(ns).unwrap_or_default();
        let (existed, object) = (entry.object || entry.live_services > 0, entry.object);
        edit(&mut entry);
        if self.live.selected && object != entry.object {
            // Under namespace_labels a namespace now served or hidden
            // turns every name in it, and the PTR and pod answers naming
            // them (a rare change: a Namespace created, deleted, relabelled).
            self.changed.everything();
        } else if existed != (entry.object || entry.live_services > 0) {
            self.changed.add(Dep::namespace(ns));
        }
        if entry.object || !entry.services.is_empty() {
            self.live.namespaces.insert(ns.clone(), entry);
        }
    }

    fn get_service(&self, (ns, name): &Pair) -> Option<Arc<Service>> {
        self.live.namespaces.get(ns)?.services.get(name).cloned()
    }

    /// Stores `service` (or removes the entry when it holds nothing).
    fn put_service(&mut self, (ns, name): &Pair, service: Service) {
        let keep = service.kind.is_some() || !service.slices.is_empty();
        let old_live = self
            .get_service(&(ns.clone(), name.clone()))
            .is_some_and(|s| s.kind.is_some());
        let new_live = service.kind.is_some();
        self.changed.add(Dep::service(ns, name));
        if old_live != new_live {
            // PTR answers name only live services: the endpoints' change.
            for e in service.endpoints() {
                self.changed.add(Dep::ptr(e.addr));
            }
        }
        self.edit_namespace(ns, |n| {
            n.live_services = n.live_services + usize::from(new_live) - usize::from(old_live);
            if keep {
                n.services.insert(name.clone(), Arc::new(service));
            } else {
                n.services.remove(name);
            }
        });
    }

    /// The identity of the service at `pair`: its entry's, or a new one.
    fn id(&self, old: Option<&Arc<Service>>, (ns, name): &Pair) -> Arc<ServiceId> {
        old.map_or_else(
            || {
                Arc::new(ServiceId {
                    namespace: ns.clone(),
                    name: name.clone(),
                })
            },
            |s| s.id.clone(),
        )
    }

    fn upsert_service(
        &mut self,
        pair: &Pair,
        kind: ServiceKind,
        ports: Arc<[Port]>,
        selector: bool,
        external: Option<Box<External>>,
    ) {
        let old = self.get_service(pair);
        let id = self.id(old.as_ref(), pair);
        let slices = old.as_ref().map(|s| s.slices.clone()).unwrap_or_default();
        if let Some(ServiceKind::ClusterIp(ips)) = old.as_ref().and_then(|s| s.kind.as_ref()) {
            self.ptrs(ips, &id, false);
        }
        self.external_ptrs(old.as_ref().and_then(|s| s.external.as_deref()), &id, false);
        self.external_ptrs(external.as_deref(), &id, true);
        if let ServiceKind::ClusterIp(ips) = &kind {
            self.ptrs(ips, &id, true);
        }
        self.put_service(
            pair,
            Service {
                id,
                kind: Some(kind),
                selector,
                ports,
                slices,
                external,
            },
        );
    }

    fn delete_service(&mut self, pair: &Pair) {
        let Some(old) = self.get_service(pair) else { return };
        if let Some(ServiceKind::ClusterIp(ips)) = &old.kind {
            self.ptrs(ips, &old.id, false);
        }
        self.external_ptrs(old.external.as_deref(), &old.id, false);
        let ports = self.ports(Vec::new());
        self.put_service(
            pair,
            Service {
                id: old.id.clone(),
                kind: None,
                selector: false,
                ports,
                slices: old.slices.clone(),
                external: None,
            },
        );
    }

    fn upsert_slice(
        &mut self,
        slice: &Pair,
        service: Arc<str>,
        ports: Arc<[Port]>,
        endpoints: Endpoints,
        trigger: Option<SystemTime>,
    ) -> bool {
        let owner_key = (slice.0.clone(), service.clone());
        let previous_owner = self.slice_owner.insert(slice.clone(), service.clone());
        if previous_owner.as_ref().is_some_and(|p| *p != service) {
            self.remove_slice_from(&(slice.0.clone(), previous_owner.unwrap_or_default()), &slice.1);
        }
        let mut entry = match self.get_service(&owner_key) {
            Some(s) => (*s).clone(),
            None => Service {
                id: self.id(None, &owner_key),
                kind: None,
                selector: false,
                ports: self.ports(Vec::new()),
                slices: Box::default(),
                external: None,
            },
        };
        // Exactly sized: a `Vec` would hold room for four per service.
        let mut slices = std::mem::take(&mut entry.slices).into_vec();
        if let Some(i) = slices.iter().position(|s| s.name == slice.1) {
            if slices[i].endpoints == endpoints && slices[i].ports == ports {
                return false; // unchanged (the common case in a relist)
            }
            let removed = slices.remove(i).endpoints;
            self.endpoint_ptrs(&removed, &entry.id, false);
        }
        self.endpoint_ptrs(&endpoints, &entry.id, true);
        slices.push(Slice {
            name: slice.1.clone(),
            ports,
            endpoints,
        });
        entry.slices = slices.into_boxed_slice();
        let kind = match (&entry.kind, entry.selector) {
            (Some(ServiceKind::ClusterIp(_)), _) => Some(0),
            (Some(ServiceKind::Headless), true) => Some(1),
            (Some(ServiceKind::Headless), false) => Some(2),
            _ => None,
        };
        if let (Some(kind), Some(at), true) = (kind, trigger, self.synced()) {
            self.programmed.push((kind, at));
        }
        self.put_service(&owner_key, entry);
        true
    }

    fn delete_slice(&mut self, slice: &Pair) {
        if let Some(owner) = self.slice_owner.remove(slice) {
            self.remove_slice_from(&(slice.0.clone(), owner), &slice.1);
        }
    }

    fn remove_slice_from(&mut self, owner: &Pair, slice_name: &Arc<str>) {
        let Some(service) = self.get_service(owner) else { return };
        let mut entry = (*service).clone();
        let mut slices = std::mem::take(&mut entry.slices).into_vec();
        let Some(i) = slices.iter().position(|s| &s.name == slice_name) else {
            return;
        };
        let removed = slices.remove(i).endpoints;
        entry.slices = slices.into_boxed_slice();
        self.endpoint_ptrs(&removed, &entry.id, false);
        self.put_service(owner, entry);
    }

    /// Adds or removes one endpoint reverse entry per endpoint (a
    /// multiset: an address listed twice is removed once per removal).
    fn endpoint_ptrs(&mut self, endpoints: &Endpoints, id: &Arc<ServiceId>, add: bool) {
        for e in endpoints.iter() {
            self.changed.add(Dep::ptr(e.addr));
            edit_index(&mut self.live.endpoint_reverse, self.building, e.addr, id, add);
        }
    }

    /// Adds or removes one cluster-IP reverse entry per address.
    fn ptrs(&mut self, addrs: &[IpAddr], id: &Arc<ServiceId>, add: bool) {
        for addr in addrs {
            self.changed.add(Dep::ptr(*addr));
            edit_index(&mut self.live.reverse, self.building, *addr, id, add);
        }
    }

    /// Adds or removes the external reverse entries of `external`'s IPs.
    fn external_ptrs(&mut self, external: Option<&External>, id: &Arc<ServiceId>, add: bool) {
        for ip in external.map(|e| &e.ips[..]).unwrap_or_default() {
            if add {
                self.live.external.insert(*ip, id.clone());
            } else {
                self.live.external.remove(*ip, id);
            }
        }
    }
}

/// Adds (pushed unsorted while `building`) or removes one `id` of `addr`.
fn edit_index<V: Clone + Ord>(index: &mut AddrIndex<V>, building: bool, addr: IpAddr, id: &V, add: bool) {
    if add && building {
        index.push(addr, id.clone());
    } else if add {
        index.insert(addr, id.clone());
    } else {
        index.remove(addr, id);
    }
}

mod export;
mod mcs;
mod pods;
mod relist;
#[cfg(test)]
mod tests;
