//! Relists: a full list of a kind upserts as it goes and deletes what it
//! did not contain only when it is done, counting what it changed (for
//! `resync`). A state restored from disk is served as listed until the
//! source lists each kind itself.

use std::sync::Arc;

use super::pods::split_key;
use super::writer::{HashSet, Pair, Writer};
use crate::store::change::{Kind, ObjectKey};

impl Writer {
    /// A full list of `kind` begins: objects not listed before
    /// [`Writer::relist_done`] will be deleted then.
    pub fn relist_start(&mut self, kind: Kind) {
        self.relisting[kind as usize] = Some(HashSet::default());
        // Holding none of the kind, the list can leave nothing to delete:
        // no set of the keys it saw (two sets of 100,000 keys grown and
        // freed during the first sync left holes in the heap).
        self.first_list[kind as usize] = self.counts()[kind as usize] == 0;
        self.relist_changes[kind as usize] = 0;
    }

    /// The list of `kind` is complete: delete what it did not contain.
    /// Returns how many objects the relist changed (upserts that differed
    /// from what was held, and deletions).
    pub fn relist_done(&mut self, kind: Kind) -> usize {
        let Some(seen) = self.relisting[kind as usize].take() else {
            return 0;
        };
        let hasher = &self.seen_hasher;
        let listed = |ns: &str, name: &str| seen.contains(&std::hash::BuildHasher::hash_one(hasher, (ns, name)));
        let gone: Vec<Pair> = match kind {
            _ if std::mem::take(&mut self.first_list[kind as usize]) => Vec::new(),
            Kind::Namespace => self
                .live
                .namespaces
                .iter()
                .filter(|(k, n)| n.object && !listed("", k))
                .map(|(k, _)| (Arc::from(""), k.clone()))
                .collect(),
            Kind::Service => self
                .live
                .namespaces
                .iter()
                .flat_map(|(ns, n)| {
                    n.services
                        .iter()
                        .filter(|(k, s)| s.kind.is_some() && !listed(ns, k.name()))
                        .map(|(k, _)| (ns.clone(), Arc::from(k.name())))
                })
                .collect(),
            Kind::EndpointSlice => self
                .slice_keys()
                .into_iter()
                .chain(self.mcs_slice_keys())
                .filter(|(ns, k)| !listed(ns, k))
                .collect(),
            Kind::ServiceImport => self
                .import_keys()
                .into_iter()
                .filter(|(ns, k)| !listed(ns, k))
                .collect(),
            Kind::Pod => self
                .pod_ips
                .keys()
                .map(|key| split_key(key))
                .filter(|(ns, name)| !listed(ns, name))
                .map(|(ns, name)| (Arc::from(ns), Arc::from(name)))
                .collect(),
        };
        let mut changes = std::mem::take(&mut self.relist_changes[kind as usize]);
        for pair in gone {
            changes += 1;
            self.delete(&ObjectKey {
                kind,
                namespace: pair.0.to_string(),
                name: pair.1.to_string(),
            });
        }
        self.listed[kind as usize] = true;
        self.confirmed[kind as usize] = true;
        self.dirty = true;
        self.prune_strings();
        changes
    }
}
