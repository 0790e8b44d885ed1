//! Pods under `pods verified`: the writer's table of pods (for deletes
//! and relists) and the snapshot's address index of them, kept in step.
//! A pod costs about 200 bytes: its key, one inline IP, a 12-byte index
//! entry (namespace id, Running).

use std::net::IpAddr;
use std::sync::Arc;

use super::{Pair, Writer};
use crate::store::Dep;

impl Writer {
    /// Adds or replaces a pod; whether that changed anything.
    pub(super) fn upsert_pod(&mut self, pair: Pair, ips: Vec<IpAddr>, running: bool) -> bool {
        let ips = PodIps::from(ips);
        if self.pod_ips.get(&pair).is_some_and(|(i, r)| *i == ips && *r == running) {
            return false;
        }
        self.remove_pod(&pair);
        let ns = self.pod_namespace_id(&pair.0);
        for ip in ips.iter() {
            self.changed.add(Dep::pod(&pair.0, *ip));
            if self.building {
                self.live.pods.push(*ip, (ns, running));
            } else {
                self.live.pods.insert(*ip, (ns, running));
            }
        }
        self.pod_ips.insert(pair, (ips, running));
        true
    }

    pub(super) fn remove_pod(&mut self, pair: &Pair) {
        let Some((ips, running)) = self.pod_ips.remove(pair) else {
            return;
        };
        let ns = self.pod_namespace_id(&pair.0);
        for ip in ips.iter() {
            self.changed.add(Dep::pod(&pair.0, *ip));
            self.live.pods.remove(*ip, &(ns, running));
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

/// A pod's IPs, without a heap allocation for the common single one
/// (24 bytes: a hash-map slot for every pod pays for what is inline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PodIps {
    One(IpAddr),
    Other(Box<[IpAddr]>),
}

impl From<Vec<IpAddr>> for PodIps {
    fn from(ips: Vec<IpAddr>) -> PodIps {
        match ips.as_slice() {
            [one] => PodIps::One(*one),
            _ => PodIps::Other(ips.into_boxed_slice()),
        }
    }
}

impl PodIps {
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, IpAddr> {
        match self {
            PodIps::One(ip) => std::slice::from_ref(ip).iter(),
            PodIps::Other(ips) => ips.iter(),
        }
    }
}
