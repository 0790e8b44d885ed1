//! The single writer's tool: collects compact records from one full list
//! and builds the [`Snapshot`] that replaces the current one whole.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use super::records::{Endpoint, Port, PtrTarget, Service, ServiceKind};
use super::{Map, Namespace, Snapshot};

/// `(namespace, name)` of a namespaced object, interned.
type Key = (Arc<str>, Arc<str>);

/// Accumulates namespaces, services, endpoint slices and pods (in any
/// order), then [`Builder::build`]s a snapshot. Strings are interned so a
/// name shared by many records is stored once.
#[derive(Default)]
pub struct Builder {
    strings: HashSet<Arc<str>>,
    namespaces: HashSet<Arc<str>>,
    services: HashMap<Key, (ServiceKind, Box<[Port]>)>,
    slices: HashMap<Key, Vec<Endpoint>>,
    pods: Map<IpAddr, Vec<Arc<str>>>,
}

impl Builder {
    pub fn new() -> Self {
        Builder::default()
    }

    /// Returns the shared copy of `s`.
    pub fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(existing) = self.strings.get(s) {
            return existing.clone();
        }
        let arc: Arc<str> = Arc::from(s);
        self.strings.insert(arc.clone());
        arc
    }

    pub fn add_namespace(&mut self, name: &str) {
        let name = self.intern(name);
        self.namespaces.insert(name);
    }

    pub fn add_service(&mut self, namespace: &str, name: &str, kind: ServiceKind, ports: Vec<Port>) {
        let key = (self.intern(namespace), self.intern(name));
        self.services.insert(key, (kind, ports.into_boxed_slice()));
    }

    /// Adds the ready endpoints of one EndpointSlice of `service`.
    pub fn add_endpoints(&mut self, namespace: &str, service: &str, endpoints: Vec<Endpoint>) {
        let key = (self.intern(namespace), self.intern(service));
        self.slices.entry(key).or_default().extend(endpoints);
    }

    pub fn add_pod(&mut self, namespace: &str, addr: IpAddr) {
        let ns = self.intern(namespace);
        let entry = self.pods.entry(addr).or_default();
        if !entry.contains(&ns) {
            entry.push(ns);
        }
    }

    /// Builds the snapshot, marked synced, with `serial` for the SOA.
    pub fn build(mut self, serial: u32) -> Snapshot {
        let mut namespaces: Map<Arc<str>, Namespace> = self
            .namespaces
            .iter()
            .map(|n| (n.clone(), Namespace::default()))
            .collect();
        let mut reverse: Map<IpAddr, Vec<PtrTarget>> = Map::default();
        for ((ns, name), (kind, ports)) in self.services.drain() {
            let mut endpoints = self.slices.remove(&(ns.clone(), name.clone())).unwrap_or_default();
            endpoints.sort_by(|a, b| (&a.hostname, a.addr).cmp(&(&b.hostname, b.addr)));
            endpoints.dedup_by(|a, b| a.hostname == b.hostname && a.addr == b.addr);
            if let ServiceKind::ClusterIp(ips) = &kind {
                for ip in ips.iter() {
                    let target = PtrTarget {
                        namespace: ns.clone(),
                        service: name.clone(),
                        host: None,
                    };
                    reverse.entry(*ip).or_default().push(target);
                }
            }
            for ep in &endpoints {
                let target = PtrTarget {
                    namespace: ns.clone(),
                    service: name.clone(),
                    host: Some(ep.hostname.clone()),
                };
                reverse.entry(ep.addr).or_default().push(target);
            }
            let service = Service {
                kind,
                ports,
                endpoints: endpoints.into_boxed_slice(),
            };
            namespaces.entry(ns).or_default().services.insert(name, service);
        }
        for targets in reverse.values_mut() {
            targets.sort_by(|a, b| (&a.namespace, &a.service, &a.host).cmp(&(&b.namespace, &b.service, &b.host)));
        }
        Snapshot {
            synced: true,
            serial,
            namespaces,
            reverse,
            pods: self.pods,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::Proto;

    fn ep(addr: &str, host: &str) -> Endpoint {
        let ports: Arc<[Port]> = Arc::from(vec![Port {
            name: "http".into(),
            proto: Proto::Tcp,
            port: 8080,
        }]);
        Endpoint {
            addr: addr.parse().expect("ip"),
            hostname: host.into(),
            ports,
        }
    }

    #[test]
    fn slices_merge_dedupe_and_index_reverse() {
        let mut b = Builder::new();
        b.add_namespace("db");
        b.add_namespace("empty");
        b.add_service("db", "pg", ServiceKind::Headless, vec![]);
        b.add_endpoints("db", "pg", vec![ep("10.1.0.1", "pg-0"), ep("10.1.0.2", "pg-1")]);
        b.add_endpoints("db", "pg", vec![ep("10.1.0.1", "pg-0")]);
        b.add_service(
            "db",
            "api",
            ServiceKind::ClusterIp(Box::new(["10.96.0.5".parse().expect("ip")])),
            vec![],
        );
        b.add_endpoints("other", "orphan", vec![ep("10.9.9.9", "x")]);
        let s = b.build(7);
        assert!(s.synced);
        assert_eq!(s.service("db", "pg").map(|s| s.endpoints.len()), Some(2));
        assert!(s.namespace("empty").is_some());
        assert_eq!(
            s.reverse("10.1.0.2".parse().expect("ip"))[0].host.as_deref(),
            Some("pg-1")
        );
        assert_eq!(&*s.reverse("10.96.0.5".parse().expect("ip"))[0].service, "api");
        assert!(
            s.reverse("10.9.9.9".parse().expect("ip")).is_empty(),
            "slices without a service are not served"
        );
        assert_eq!(s.service_count(), 2);
    }
}
