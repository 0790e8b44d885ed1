//! The writer's side of multi-cluster Services: ServiceImports and the
//! slices labelled `multicluster.kubernetes.io/service-name`, applied to
//! the snapshot's [`ClusterSet`](crate::store::mcs::ClusterSet) the way
//! Services and their slices are applied to the cluster zone: one import
//! entry is replaced per change (a persistent map: O(log n) copied nodes),
//! its reverse entries edited in place, and the touched keys recorded for
//! the readers' memos. Never a rebuild of the whole set.

use std::net::IpAddr;
use std::sync::Arc;

use super::services::edit_index;
use super::writer::{Pair, Writer};
use crate::store::changes::Dep;
use crate::store::mcs::{Import, ImportKind, McsNamespace, McsSlice};
use crate::store::records::{Endpoints, Ports, ServiceId, Slice};
use crate::store::short::Short;

impl Writer {
    fn get_import(&self, (ns, name): &Pair) -> Option<Arc<Import>> {
        self.live.clusterset.namespaces.get(ns)?.imports.get(name).cloned()
    }

    /// Stores `import` at `pair` (or drops the entry when it holds nothing),
    /// keeping the namespace's live count.
    fn put_import(&mut self, (ns, name): &Pair, import: Import) {
        let old_live = self
            .get_import(&(ns.clone(), name.clone()))
            .is_some_and(|i| i.kind.is_some());
        let new_live = import.kind.is_some();
        self.changed.add(Dep::import(ns, name));
        if old_live != new_live {
            for (_, e) in import.endpoints() {
                self.changed.add(Dep::ptr(e.addr));
            }
        }
        let spaces = &mut self.live.clusterset.namespaces;
        let mut entry: McsNamespace = spaces.remove(ns).unwrap_or_default();
        let before = entry.live > 0;
        entry.live = entry.live + usize::from(new_live) - usize::from(old_live);
        if import.kind.is_some() || !import.slices.is_empty() {
            entry.imports.insert(name.clone(), Arc::new(import));
        } else {
            entry.imports.remove(name);
            // No reverse entry names it any more.
            self.live.clusterset.ids.set(import.slot as usize, None);
            self.mcs_free_slots.push(import.slot);
        }
        if before != (entry.live > 0) {
            self.changed.add(Dep::import_namespace(ns));
        }
        if !entry.imports.is_empty() {
            spaces.insert(ns.clone(), entry);
        }
    }

    fn import_or_empty(&mut self, pair: &Pair) -> Import {
        match self.get_import(pair) {
            Some(i) => (*i).clone(),
            None => {
                let id = Arc::new(ServiceId {
                    namespace: pair.0.clone(),
                    name: Short::new(&pair.1),
                });
                Import {
                    slot: self.import_slot(id.clone()),
                    id,
                    kind: None,
                    ports: self.ports(Vec::new()),
                    slices: Box::default(),
                }
            }
        }
    }

    /// A slot of the identity table for a new import: a freed one first.
    fn import_slot(&mut self, id: Arc<ServiceId>) -> u32 {
        let ids = &mut self.live.clusterset.ids;
        match self.mcs_free_slots.pop() {
            Some(slot) => {
                ids.set(slot as usize, Some(id));
                slot
            }
            None => {
                ids.push_back(Some(id));
                u32::try_from(ids.len() - 1).unwrap_or(u32::MAX)
            }
        }
    }

    /// Adds or replaces a ServiceImport; whether that changed anything.
    pub(super) fn upsert_import(&mut self, pair: &Pair, kind: Option<ImportKind>, ports: Ports) -> bool {
        let mut import = self.import_or_empty(pair);
        if import.kind == kind && import.ports == ports {
            return false;
        }
        if let Some(ImportKind::ClusterSetIp(ips)) = &import.kind {
            self.mcs_ptrs(&ips.clone(), import.slot, false);
        }
        if let Some(ImportKind::ClusterSetIp(ips)) = &kind {
            self.mcs_ptrs(ips, import.slot, true);
        }
        import.kind = kind;
        import.ports = ports;
        self.put_import(pair, import);
        true
    }

    /// Adds or replaces one cluster's slice of an import.
    pub(super) fn upsert_mcs_slice(
        &mut self,
        slice: &Pair,
        service: Arc<str>,
        cluster: Arc<str>,
        ports: Ports,
        endpoints: Endpoints,
    ) -> bool {
        let owner = (slice.0.clone(), service);
        let key = self.slice_key(slice);
        let mut import = self.import_or_empty(&owner);
        if let Some(previous) = self.mcs_slice_owner.insert(key, import.slot) {
            if previous != import.slot {
                self.remove_mcs_slice_from(previous, &slice.1);
            }
        }
        let mut slices = std::mem::take(&mut import.slices).into_vec();
        if let Some(i) = slices.iter().position(|s| s.slice.named(&owner.1, &slice.1)) {
            let old = &slices[i];
            if old.cluster == cluster && old.slice.ports == ports && old.slice.endpoints == endpoints {
                return false;
            }
            let removed = slices.remove(i).slice.endpoints;
            self.mcs_endpoint_ptrs(&removed, import.slot, false);
        }
        self.mcs_endpoint_ptrs(&endpoints, import.slot, true);
        slices.push(McsSlice {
            cluster,
            slice: Slice::new(&owner.1, &slice.1, ports, endpoints),
        });
        // Clusters in order, so answers list them stably.
        slices.sort_by_cached_key(|s| (s.cluster.clone(), s.slice.name(&owner.1)));
        import.slices = slices.into_boxed_slice();
        self.put_import(&owner, import);
        true
    }

    /// Removes a ServiceImport (its slices stay until they go too).
    pub(super) fn delete_import(&mut self, pair: &Pair) {
        let Some(old) = self.get_import(pair) else { return };
        if let Some(ImportKind::ClusterSetIp(ips)) = &old.kind {
            self.mcs_ptrs(ips, old.slot, false);
        }
        let mut import = (*old).clone();
        import.kind = None;
        import.ports = self.ports(Vec::new());
        self.put_import(pair, import);
    }

    /// Removes a multi-cluster slice; false when `slice` is not one.
    pub(super) fn delete_mcs_slice(&mut self, slice: &Pair) -> bool {
        let key = self.slice_key(slice);
        let Some(owner) = self.mcs_slice_owner.remove(&key) else {
            return false;
        };
        self.remove_mcs_slice_from(owner, &slice.1);
        true
    }

    /// Removes slice `slice_name` from the import in slot `owner`.
    fn remove_mcs_slice_from(&mut self, owner: u32, slice_name: &Arc<str>) {
        let Some(Some(id)) = self.live.clusterset.ids.get(owner as usize) else {
            return;
        };
        let owner = (id.namespace.clone(), Arc::from(&*id.name));
        let Some(old) = self.get_import(&owner) else { return };
        let mut import = (*old).clone();
        let mut slices = std::mem::take(&mut import.slices).into_vec();
        let Some(i) = slices.iter().position(|s| s.slice.named(&owner.1, slice_name)) else {
            return;
        };
        let removed = slices.remove(i).slice.endpoints;
        import.slices = slices.into_boxed_slice();
        self.mcs_endpoint_ptrs(&removed, import.slot, false);
        self.put_import(&owner, import);
    }

    fn mcs_endpoint_ptrs(&mut self, endpoints: &Endpoints, slot: u32, add: bool) {
        let addrs: Vec<IpAddr> = endpoints.iter().map(|e| e.addr).collect();
        self.mcs_ptrs(&addrs, slot, add);
    }

    fn mcs_ptrs(&mut self, addrs: &[IpAddr], slot: u32, add: bool) {
        for addr in addrs {
            self.changed.add(Dep::ptr(*addr));
            edit_index(&mut self.live.clusterset.reverse, self.building, *addr, &slot, add);
        }
    }

    /// Imports and multi-cluster slices held: `(imports, slices)`.
    pub(super) fn mcs_counts(&self) -> (usize, usize) {
        let imports = self.live.clusterset.namespaces.values().map(|n| n.live).sum();
        (imports, self.mcs_slice_owner.len())
    }

    /// The owner table's key of a slice.
    pub(super) fn slice_key(&self, (ns, name): &Pair) -> u64 {
        std::hash::BuildHasher::hash_one(&self.seen_hasher, (&**ns, &**name))
    }

    /// Keys of the multi-cluster slices (`EndpointSlice` relists), read
    /// from the imports that hold them.
    pub(super) fn mcs_slice_keys(&self) -> Vec<Pair> {
        let spaces = self.live.clusterset.namespaces.iter();
        spaces
            .flat_map(|(ns, n)| {
                let slices = n
                    .imports
                    .values()
                    .flat_map(|i| i.slices.iter().map(|s| (&i.id.name, s)));
                slices.map(|(owner, s)| (ns.clone(), Arc::from(s.slice.name(owner))))
            })
            .collect()
    }

    /// Keys of the imports (`ServiceImport` relists).
    pub(super) fn import_keys(&self) -> Vec<Pair> {
        let spaces = self.live.clusterset.namespaces.iter();
        spaces
            .flat_map(|(ns, n)| {
                n.imports
                    .iter()
                    .filter(|(_, i)| i.kind.is_some())
                    .map(|(k, _)| (ns.clone(), k.clone()))
            })
            .collect()
    }
}
