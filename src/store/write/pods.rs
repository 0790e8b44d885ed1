//! Pods under `pods verified`: the writer's table of pods (for deletes
//! and relists) and the snapshot's address index of them, kept in step.
//! A pod costs about 120 bytes: a 40-byte table slot (a `namespace/name`
//! key in one allocation, one inline IPv4 address and whether it is
//! Running; the table keeps up to half its slots free), the key's text
//! and a 12-byte index entry (namespace id, Running).

use std::net::IpAddr;
use std::sync::Arc;

use super::writer::{Pair, Pod, Writer};
use crate::store::changes::Dep;

impl Writer {
    /// Adds or replaces a pod; whether that changed anything.
    pub(super) fn upsert_pod(&mut self, pair: Pair, ips: Vec<IpAddr>, running: bool) -> bool {
        let pod = Pod::new(ips, running);
        let key = pod_key(&pair);
        if self.pod_ips.get(&key).is_some_and(|p| *p == pod) {
            return false;
        }
        let ns = self.pod_namespace_id(&pair.0);
        if let Some(old) = self.pod_ips.remove(&key) {
            self.unindex_pod(&pair.0, ns, &old);
        }
        for ip in pod.ips() {
            self.changed.add(Dep::pod(&pair.0, ip));
            if self.building {
                self.live.pods.push(ip, (ns, running));
            } else {
                self.live.pods.insert(ip, (ns, running));
            }
        }
        self.pod_ips.insert(key, pod);
        true
    }

    pub(super) fn remove_pod(&mut self, pair: &Pair) {
        let Some(pod) = self.pod_ips.remove(&*pod_key(pair)) else {
            return;
        };
        let ns = self.pod_namespace_id(&pair.0);
        self.unindex_pod(&pair.0, ns, &pod);
    }

    fn unindex_pod(&mut self, namespace: &str, ns: u32, pod: &Pod) {
        for ip in pod.ips() {
            self.changed.add(Dep::pod(namespace, ip));
            self.live.pods.remove(ip, &(ns, pod.running()));
        }
    }

    /// The index of `namespace` in the snapshot's pod namespaces (added
    /// on first sight; the table only grows, by one name per namespace).
    fn pod_namespace_id(&mut self, namespace: &Arc<str>) -> u32 {
        if let Some(id) = self.pod_namespace_ids.get(namespace) {
            return *id;
        }
        let id = self.live.pod_namespaces.len() as u32;
        Arc::make_mut(&mut self.live.pod_namespaces).push(namespace.clone());
        self.pod_namespace_ids.insert(namespace.clone(), id);
        id
    }
}

/// A pod's key in the writer's table: `namespace/name` (neither holds a
/// `/`), one allocation instead of two shared names.
pub(super) fn pod_key((ns, name): &Pair) -> Box<str> {
    format!("{ns}/{name}").into_boxed_str()
}

/// `(namespace, name)` of a [`pod_key`].
pub(super) fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}
