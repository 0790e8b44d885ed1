//! Services and their EndpointSlices in the cluster zone: a service's
//! entry is replaced whole on each change (its slices inside it), and
//! the reverse indexes (cluster IPs, endpoints, external IPs) are edited
//! in step, each touched name recorded for the readers' memos.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use super::writer::{Pair, Writer};
use crate::store::addrs::AddrIndex;
use crate::store::changes::Dep;
use crate::store::records::{Endpoints, External, Ports, Service, ServiceId, ServiceKind, Slice, Slices};
use crate::store::servicemap::ServiceKey;
use crate::store::short::Short;

impl Writer {
    pub(super) fn get_service(&self, (ns, name): &Pair) -> Option<Arc<Service>> {
        self.live.namespaces.get(ns)?.services.get(name).cloned()
    }

    /// Stores `service` (or removes the entry when it holds nothing);
    /// `old_live`: the entry it replaces has a Service object (the caller
    /// has read it: no second lookup).
    pub(super) fn put_service(&mut self, (ns, name): &Pair, service: Service, old_live: bool) {
        let keep = service.kind.is_some() || !service.slices.is_empty();
        let new_live = service.kind.is_some();
        self.changed.add(Dep::service(ns, name));
        if old_live != new_live {
            // PTR answers name only live services: the endpoints' change.
            for e in service.endpoints() {
                self.changed.add(Dep::ptr(e.addr));
            }
        }
        if !keep {
            // No reverse entry names it any more.
            self.live.ids.set(service.slot as usize, None);
            self.free_slots.push(service.slot);
        }
        self.edit_namespace(ns, |n| {
            n.live_services = n.live_services + usize::from(new_live) - usize::from(old_live);
            if keep {
                n.services.insert(ServiceKey(service.id.clone()), Arc::new(service));
            } else {
                n.services.remove(name);
            }
        });
    }

    /// The identity of the service at `pair` and its slot: its entry's,
    /// or a new one in a slot of the identity table (a freed one first).
    pub(super) fn id(&mut self, old: Option<&Arc<Service>>, (ns, name): &Pair) -> (Arc<ServiceId>, u32) {
        if let Some(s) = old {
            return (s.id.clone(), s.slot);
        }
        let id = Arc::new(ServiceId {
            namespace: ns.clone(),
            name: Short::new(name),
        });
        let ids = &mut self.live.ids;
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                ids.set(slot as usize, Some(id.clone()));
                slot
            }
            None => {
                ids.push_back(Some(id.clone()));
                u32::try_from(ids.len() - 1).unwrap_or(u32::MAX)
            }
        };
        (id, slot)
    }

    /// Adds or replaces a Service; whether that changed anything.
    pub(super) fn upsert_service(
        &mut self,
        pair: &Pair,
        kind: ServiceKind,
        ports: Ports,
        selector: bool,
        external: Option<Box<External>>,
    ) -> bool {
        let old = self.get_service(pair);
        let old_live = old.as_ref().is_some_and(|s| s.kind.is_some());
        let same = |s: &Arc<Service>| {
            s.kind.as_ref() == Some(&kind) && s.ports == ports && s.selector == selector && s.external == external
        };
        if old.as_ref().is_some_and(same) {
            return false;
        }
        let (id, slot) = self.id(old.as_ref(), pair);
        let slices = old.as_ref().map(|s| s.slices.clone()).unwrap_or_default();
        if let Some(ServiceKind::ClusterIp(ips)) = old.as_ref().and_then(|s| s.kind.as_ref()) {
            self.ptrs(ips, slot, false);
        }
        self.external_ptrs(old.as_ref().and_then(|s| s.external.as_deref()), &id, false);
        self.external_ptrs(external.as_deref(), &id, true);
        if let ServiceKind::ClusterIp(ips) = &kind {
            self.ptrs(ips, slot, true);
        }
        self.put_service(
            pair,
            Service {
                id,
                slot,
                kind: Some(kind),
                selector,
                ports,
                slices,
                external,
            },
            old_live,
        );
        true
    }

    pub(super) fn delete_service(&mut self, pair: &Pair) {
        let Some(old) = self.get_service(pair) else { return };
        if let Some(ServiceKind::ClusterIp(ips)) = &old.kind {
            self.ptrs(ips, old.slot, false);
        }
        self.external_ptrs(old.external.as_deref(), &old.id, false);
        let ports = self.ports(Vec::new());
        self.put_service(
            pair,
            Service {
                id: old.id.clone(),
                slot: old.slot,
                kind: None,
                selector: false,
                ports,
                slices: old.slices.clone(),
                external: None,
            },
            old.kind.is_some(),
        );
    }

    pub(super) fn upsert_slice(
        &mut self,
        slice: &Pair,
        service: Arc<str>,
        ports: Ports,
        endpoints: Endpoints,
        trigger: Option<SystemTime>,
    ) -> bool {
        let owner_key = (slice.0.clone(), service);
        if let Some(previous) = self.slice_moved_from(slice, &owner_key.1) {
            self.remove_slice_from(&previous, &slice.1);
        }
        let (ports, endpoints) = match self.building {
            true => match self.slice_in_place(slice, &owner_key, ports, endpoints, trigger) {
                Ok(changed) => return changed,
                Err(back) => back,
            },
            false => (ports, endpoints),
        };
        let mut entry = match self.get_service(&owner_key) {
            Some(s) => (*s).clone(),
            None => {
                let (id, slot) = self.id(None, &owner_key);
                Service {
                    id,
                    slot,
                    kind: None,
                    selector: false,
                    ports: self.ports(Vec::new()),
                    slices: Slices::default(),
                    external: None,
                }
            }
        };
        self.own_slice(slice, &entry.id);
        // Exactly sized: a `Vec` would hold room for four per service.
        let mut slices = std::mem::take(&mut entry.slices).into_vec();
        if let Some(i) = slices.iter().position(|s| s.named(&owner_key.1, &slice.1)) {
            if slices[i].endpoints == endpoints && slices[i].ports == ports {
                return false; // unchanged (the common case in a relist)
            }
            let removed = slices.remove(i).endpoints;
            self.endpoint_ptrs(&removed, entry.slot, false);
            self.slices -= 1;
        }
        self.slices += 1;
        self.endpoint_ptrs(&endpoints, entry.slot, true);
        slices.push(Slice::new(&owner_key.1, &slice.1, ports, endpoints));
        entry.slices = Slices::from(slices);
        let kind = programmed_kind(&entry);
        if let (Some(kind), Some(at), true) = (kind, trigger, self.synced()) {
            self.programmed.push((kind, at));
        }
        let live = entry.kind.is_some(); // a slice changes no kind
        self.put_service(&owner_key, entry, live);
        true
    }

    pub(super) fn delete_slice(&mut self, slice: &Pair) {
        if let Some(owner) = self.slice_owner_of(slice) {
            self.slice_owner.remove(&self.slice_key(slice));
            self.remove_slice_from(&owner, &slice.1);
        }
    }

    /// Whether `slice` is one of a Service (not of an import).
    pub(super) fn has_slice(&self, slice: &Pair) -> bool {
        self.slice_owner_of(slice).is_some()
    }

    /// The Service holding `slice`: the one its generated name names
    /// (`web-x7k2p` of `web`), else the one the owner table holds.
    fn slice_owner_of(&self, slice: &Pair) -> Option<Pair> {
        if let Some(owner) = self.slice_owner.get(&self.slice_key(slice)) {
            return Some((owner.namespace.clone(), Arc::from(&*owner.name)));
        }
        let named = named_service(&slice.1)?;
        let service = self.live.namespaces.get(&slice.0)?.services.get(named)?;
        let held = service.slices.iter().any(|s| s.named(named, &slice.1));
        held.then(|| (slice.0.clone(), Arc::from(named)))
    }

    /// The Service other than `service` holding `slice`, if any. A slice
    /// named after `service` and absent from the owner table is held by
    /// `service` if by any: no lookup (the common case of a list).
    fn slice_moved_from(&self, slice: &Pair, service: &str) -> Option<Pair> {
        let named_after = named_service(&slice.1) == Some(service);
        if named_after && !self.slice_owner.contains_key(&self.slice_key(slice)) {
            return None;
        }
        self.slice_owner_of(slice).filter(|p| &*p.1 != service)
    }

    /// Records that `slice` is one of the Service `id`: in the owner
    /// table only when its name does not say so (most slices are named
    /// after their Service: 2.2 MB of table at 100,000 slices before).
    fn own_slice(&mut self, slice: &Pair, id: &Arc<ServiceId>) {
        let key = self.slice_key(slice);
        match named_service(&slice.1) {
            Some(named) if named == &*id.name => self.slice_owner.remove(&key),
            _ => self.slice_owner.insert(key, id.clone()),
        };
    }

    /// Keys of the Services' slices (`EndpointSlice` relists), read from
    /// the services that hold them.
    pub(super) fn slice_keys(&self) -> Vec<Pair> {
        let spaces = self.live.namespaces.iter();
        spaces
            .flat_map(|(ns, n)| {
                let slices = n
                    .services
                    .values()
                    .flat_map(|s| s.slices.iter().map(|x| (&s.id.name, x)));
                slices.map(|(owner, s)| (ns.clone(), Arc::from(s.name(owner))))
            })
            .collect()
    }

    pub(super) fn remove_slice_from(&mut self, owner: &Pair, slice_name: &Arc<str>) {
        let Some(service) = self.get_service(owner) else { return };
        let mut entry = (*service).clone();
        let mut slices = std::mem::take(&mut entry.slices).into_vec();
        let Some(i) = slices.iter().position(|s| s.named(&owner.1, slice_name)) else {
            return;
        };
        self.slices -= 1;
        let removed = slices.remove(i).endpoints;
        entry.slices = Slices::from(slices);
        self.endpoint_ptrs(&removed, entry.slot, false);
        let live = entry.kind.is_some();
        self.put_service(owner, entry, live);
    }

    /// Adds or removes one endpoint reverse entry per endpoint (a
    /// multiset: an address listed twice is removed once per removal).
    pub(super) fn endpoint_ptrs(&mut self, endpoints: &Endpoints, slot: u32, add: bool) {
        for e in endpoints.iter() {
            self.changed.add(Dep::ptr(e.addr));
            edit_index(&mut self.live.endpoint_reverse, self.building, e.addr, &slot, add);
        }
    }

    /// Adds or removes one cluster-IP reverse entry per address.
    pub(super) fn ptrs(&mut self, addrs: &[IpAddr], slot: u32, add: bool) {
        for addr in addrs {
            self.changed.add(Dep::ptr(*addr));
            edit_index(&mut self.live.reverse, self.building, *addr, &slot, add);
        }
    }

    /// Adds or removes the external reverse entries of `external`'s IPs.
    pub(super) fn external_ptrs(&mut self, external: Option<&External>, id: &Arc<ServiceId>, add: bool) {
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
pub(super) fn edit_index<V: Clone + Ord>(index: &mut AddrIndex<V>, building: bool, addr: IpAddr, id: &V, add: bool) {
    if add && building {
        index.push(addr, id.clone());
    } else if add {
        index.insert(addr, id.clone());
    } else {
        index.remove(addr, id);
    }
}

/// The index [`Writer::take_programmed`] counts a slice change of
/// `service` under, if it has a Service object.
pub(super) fn programmed_kind(service: &Service) -> Option<usize> {
    match (&service.kind, service.selector) {
        (Some(ServiceKind::ClusterIp(_)), _) => Some(0),
        (Some(ServiceKind::Headless), true) => Some(1),
        (Some(ServiceKind::Headless), false) => Some(2),
        _ => None,
    }
}

/// The Service a slice's generated name names (`web` of `web-x7k2p`).
pub(super) fn named_service(slice: &str) -> Option<&str> {
    slice.rsplit_once('-').map(|(named, _)| named)
}
