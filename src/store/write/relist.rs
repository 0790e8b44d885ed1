//! Relists: a full list of a kind upserts as it goes and deletes what it
//! did not contain only when it is done, counting what it changed (for
//! `resync`). A state restored from disk is served as listed until the
//! source lists each kind itself.

use std::sync::Arc;

use super::{HashSet, Pair, Writer};
use crate::store::change::{Kind, ObjectKey};

impl Writer {
    /// A full list of `kind` begins: objects not listed before
    /// [`Writer::relist_done`] will be deleted then.
    pub fn relist_start(&mut self, kind: Kind) {
        self.relisting[kind as usize] = Some(HashSet::default());
        self.relist_changes[kind as usize] = 0;
    }

    /// The list of `kind` is complete: delete what it did not contain.
    /// Returns how many objects the relist changed (upserts that differed
    /// from what was held, and deletions).
    pub fn relist_done(&mut self, kind: Kind) -> usize {
        let Some(seen) = self.relisting[kind as usize].take() else {
            return 0;
        };
        let gone: Vec<Pair> = match kind {
            Kind::Namespace => self
                .live
                .namespaces
                .iter()
                .filter(|(_, n)| n.object)
                .map(|(k, _)| (Arc::from(""), k.clone()))
                .collect(),
            Kind::Service => self
                .live
                .namespaces
                .iter()
                .flat_map(|(ns, n)| {
                    n.services
                        .iter()
                        .filter(|(_, s)| s.kind.is_some())
                        .map(|(k, _)| (ns.clone(), k.clone()))
                })
                .collect(),
            Kind::EndpointSlice => self.slice_owner.keys().cloned().collect(),
            Kind::Pod => self.pod_ips.keys().cloned().collect(),
        };
        let mut changes = std::mem::take(&mut self.relist_changes[kind as usize]);
        let listed = |p: &Pair| seen.contains(&std::hash::BuildHasher::hash_one(&self.seen_hasher, p));
        let gone: Vec<Pair> = gone.into_iter().filter(|p| !listed(p)).collect();
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
