//! A namespace's services by name: a persistent map packed for size.
//!
//! Entries live in shards chosen by the low bits of the name's hash; a
//! shard is a vector sorted by hash, behind an `Arc`, so a copy of the map
//! is O(1) and the writer's first edit of a shard after a publish copies
//! that shard (about 40 entries) and the shard table, never the whole map.
//! An entry is 24 bytes (the hash, the key, the service); the persistent
//! hash map used before spent 48 an entry in its nodes (4.8 MB at 100,000
//! Services, 2.8 now). Shards double when they hold [`PER_SHARD`] entries
//! on average; they never shrink.

use std::hash::BuildHasher;
use std::sync::Arc;

use super::records::{Service, ServiceId};

/// Entries per shard, on average, before the shards double.
const PER_SHARD: usize = 64;

type Entry = (u64, ServiceKey, Arc<Service>);

#[derive(Debug, Clone)]
pub struct ServiceMap {
    /// A power of two of them.
    shards: Arc<Vec<Arc<Vec<Entry>>>>,
    len: usize,
    hasher: foldhash::fast::RandomState,
}

impl Default for ServiceMap {
    fn default() -> Self {
        ServiceMap {
            shards: Arc::new(vec![Arc::default()]),
            len: 0,
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

/// Where entries with `hash` begin in `shard`, and how many there are.
fn range(shard: &[Entry], hash: u64) -> std::ops::Range<usize> {
    let start = shard.partition_point(|e| e.0 < hash);
    start..start + shard[start..].partition_point(|e| e.0 == hash)
}

impl ServiceMap {
    fn locate(&self, name: &str) -> (u64, usize, Option<usize>) {
        let hash = self.hasher.hash_one(name);
        let at = hash as usize & (self.shards.len() - 1);
        let shard = &self.shards[at];
        let found = range(shard, hash).find(|i| shard[*i].1.name() == name);
        (hash, at, found)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Service>> {
        let (_, at, found) = self.locate(name);
        found.map(|i| &self.shards[at][i].2)
    }

    /// The service `name` to edit in place (its shard copied first if a
    /// published snapshot shares it).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Arc<Service>> {
        let (_, at, found) = self.locate(name);
        let i = found?;
        Some(&mut Arc::make_mut(&mut Arc::make_mut(&mut self.shards)[at])[i].2)
    }

    /// Adds or replaces the service named by `key`.
    pub fn insert(&mut self, key: ServiceKey, service: Arc<Service>) {
        let (hash, at, found) = self.locate(key.name());
        let shard = Arc::make_mut(&mut Arc::make_mut(&mut self.shards)[at]);
        match found {
            Some(i) => shard[i] = (hash, key, service),
            None => {
                let i = range(shard, hash).end;
                if shard.len() == shard.capacity() {
                    // An eighth more: a shard copied by the writer starts exactly full.
                    shard.reserve_exact(shard.len() / 8 + 1);
                }
                shard.insert(i, (hash, key, service));
                self.len += 1;
                if self.len > PER_SHARD * self.shards.len() {
                    self.double();
                }
            }
        }
    }

    /// Removes the service `name`, if held (no copy of a shard for nothing).
    pub fn remove(&mut self, name: &str) {
        let (_, at, Some(i)) = self.locate(name) else { return };
        Arc::make_mut(&mut Arc::make_mut(&mut self.shards)[at]).remove(i);
        self.len -= 1;
    }

    /// Twice the shards: each splits in two by one more bit of the hash,
    /// keeping its order.
    fn double(&mut self) {
        let n = self.shards.len();
        let mut shards: Vec<Vec<Entry>> = vec![Vec::new(); 2 * n];
        for (at, shard) in self.shards.iter().enumerate() {
            for e in shard.iter() {
                shards[at | (e.0 as usize & n)].push(e.clone());
            }
        }
        self.shards = Arc::new(
            shards
                .into_iter()
                .map(|mut s| {
                    s.shrink_to_fit();
                    Arc::new(s)
                })
                .collect(),
        );
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&ServiceKey, &Arc<Service>)> {
        self.shards.iter().flat_map(|s| s.iter().map(|e| (&e.1, &e.2)))
    }

    pub fn values(&self) -> impl Iterator<Item = &Arc<Service>> {
        self.iter().map(|(_, s)| s)
    }
}

/// A service entry's key: its identity, found by its name. 8 bytes where
/// a name of its own took 16 and a heap chunk (the identity already
/// holds the name).
#[derive(Debug, Clone)]
pub struct ServiceKey(pub Arc<ServiceId>);

impl ServiceKey {
    pub fn name(&self) -> &str {
        &self.0.name
    }
}

impl std::borrow::Borrow<str> for ServiceKey {
    fn borrow(&self) -> &str {
        &self.0.name
    }
}

impl PartialEq for ServiceKey {
    fn eq(&self, other: &ServiceKey) -> bool {
        self.name() == other.name()
    }
}

impl Eq for ServiceKey {}

/// Hashes as its name does (the maps are searched with a `str`).
impl std::hash::Hash for ServiceKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::Slices;
    use crate::store::short::Short;
    use crate::store::Ports;

    fn service(name: &str, slot: u32) -> (ServiceKey, Arc<Service>) {
        let id = Arc::new(ServiceId {
            namespace: Arc::from("ns"),
            name: Short::new(name),
        });
        let service = Service {
            id: id.clone(),
            slot,
            kind: None,
            selector: false,
            ports: Ports::default(),
            slices: Slices::default(),
            external: None,
        };
        (ServiceKey(id), Arc::new(service))
    }

    #[test]
    fn inserts_replaces_removes_across_doublings_and_copies_stay_apart() {
        let mut map = ServiceMap::default();
        for i in 0..5_000u32 {
            let (k, s) = service(&format!("svc-{i}"), i);
            map.insert(k, s);
        }
        assert_eq!((map.len(), map.shards.len()), (5_000, 128));
        let before = map.clone();
        let (k, s) = service("svc-7", 70);
        map.insert(k, s);
        map.remove("svc-8");
        map.remove("nothing");
        assert_eq!(map.len(), 4_999);
        assert_eq!(map.get("svc-7").map(|s| s.slot), Some(70));
        assert!(map.get("svc-8").is_none());
        assert_eq!(before.get("svc-7").map(|s| s.slot), Some(7));
        assert_eq!(before.get("svc-8").map(|s| s.slot), Some(8));
        for i in (0..5_000u32).filter(|i| ![7, 8].contains(i)) {
            assert_eq!(map.get(&format!("svc-{i}")).map(|s| s.slot), Some(i));
        }
        assert_eq!(map.values().count(), 4_999);
        let shared = (0..map.shards.len())
            .filter(|i| Arc::ptr_eq(&before.shards[*i], &map.shards[*i]))
            .count();
        assert!(shared >= map.shards.len() - 2, "{shared}");
    }
}
