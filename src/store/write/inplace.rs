//! The first sync's slices, edited in place: while the first snapshot is
//! built nothing shares the writer's entries, so a slice of a Service
//! already held is added to that entry itself — one lookup, no copy of
//! the entry, no new `Arc`, no namespace entry taken out and put back
//! (what [`Writer::upsert_slice`] does for every later change).

use std::sync::Arc;
use std::time::SystemTime;

use super::services::{edit_index, named_service, programmed_kind};
use super::writer::{Pair, Writer};
use crate::store::changes::Dep;
use crate::store::records::{Endpoints, Ports, Slice, Slices};

impl Writer {
    /// [`Writer::upsert_slice`]'s work on the held Service `owner`, in
    /// place; the ports and endpoints back when `owner` is not held.
    pub(super) fn slice_in_place(
        &mut self,
        slice: &Pair,
        owner: &Pair,
        ports: Ports,
        endpoints: Endpoints,
        trigger: Option<SystemTime>,
    ) -> Result<bool, (Ports, Endpoints)> {
        let key = self.slice_key(slice);
        let synced = self.synced();
        let Writer {
            live,
            slice_owner,
            slices: count,
            changed,
            building,
            programmed,
            ..
        } = self;
        let (namespaces, reverse) = (&mut live.namespaces, &mut live.endpoint_reverse);
        let held = namespaces.get_mut(&owner.0).and_then(|n| n.services.get_mut(&owner.1));
        let Some(entry) = held.map(Arc::make_mut) else {
            return Err((ports, endpoints));
        };
        match named_service(&slice.1) {
            Some(named) if named == &*entry.id.name => slice_owner.remove(&key),
            _ => slice_owner.insert(key, entry.id.clone()),
        };
        let mut edit = |endpoints: &Endpoints, add: bool| {
            for e in endpoints.iter() {
                changed.add(Dep::ptr(e.addr));
                edit_index(reverse, *building, e.addr, &entry.slot, add);
            }
        };
        let new = Slice::new(&owner.1, &slice.1, ports, endpoints);
        if entry.slices.is_empty() {
            edit(&new.endpoints, true);
            entry.slices = Slices::One(new);
        } else {
            let mut all = std::mem::take(&mut entry.slices).into_vec();
            if let Some(i) = all.iter().position(|s| s.named(&owner.1, &slice.1)) {
                if all[i].endpoints == new.endpoints && all[i].ports == new.ports {
                    entry.slices = Slices::from(all);
                    return Ok(false);
                }
                edit(&all.remove(i).endpoints, false);
                *count -= 1;
            }
            edit(&new.endpoints, true);
            all.push(new);
            entry.slices = Slices::from(all);
        }
        *count += 1;
        let kind = programmed_kind(entry);
        if let (Some(kind), Some(at), true) = (kind, trigger, synced) {
            programmed.push((kind, at));
        }
        changed.add(Dep::service(&owner.0, &owner.1));
        Ok(true)
    }
}
