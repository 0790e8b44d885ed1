//! The writer's state as plain [`Record`]s again, for the `persist` file:
//! an [`Export`] is taken in O(pods) on the writer (the maps are
//! persistent, so the services are shared, not copied) and turned into
//! records elsewhere, while the writer goes on.

use std::sync::Arc;

use super::pods::split_key;
use super::writer::{Pod, Writer};
use crate::store::change::{PortIn, Record};
use crate::store::maps::IMap;
use crate::store::records::Port;
use crate::store::snapshot::Namespace;

/// A frozen copy of what a writer holds.
pub struct Export {
    namespaces: IMap<Arc<str>, Namespace>,
    clusterset: crate::store::mcs::ClusterSet,
    pods: Vec<(Box<str>, Pod)>,
}

impl Writer {
    /// A frozen copy of the current state.
    pub fn export(&self) -> Export {
        let pods = self.pod_ips.iter().map(|(key, pod)| (key.clone(), pod.clone()));
        Export {
            namespaces: self.live.namespaces.clone(),
            clusterset: self.live.clusterset.clone(),
            pods: pods.collect(),
        }
    }
}

fn ports_in(ports: &[Port]) -> Vec<PortIn> {
    ports
        .iter()
        .map(|p| PortIn {
            name: p.name.to_string(),
            proto: p.proto,
            port: p.port,
        })
        .collect()
}

impl Export {
    /// Every object as a record: namespaces, services, slices, pods.
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        let namespaces = self.namespaces.iter().filter(|(_, n)| n.object);
        let namespaces = namespaces.map(|(name, _)| Record::Namespace { name: name.to_string() });
        let services = self.namespaces.iter().flat_map(|(ns, n)| {
            n.services.values().flat_map(move |s| {
                let service = s.kind.clone().map(|kind| Record::Service {
                    namespace: ns.to_string(),
                    name: s.id.name.to_string(),
                    kind,
                    selector: s.selector,
                    ports: ports_in(&s.ports),
                    external: s.external.clone(),
                });
                let slices = s.slices.iter().map(move |slice| Record::Slice {
                    namespace: ns.to_string(),
                    name: slice.name(&s.id.name),
                    service: s.id.name.to_string(),
                    ports: ports_in(&slice.ports),
                    endpoints: slice
                        .endpoints
                        .iter()
                        .map(|e| (e.addr, e.hostname.map(|h| h.to_string())))
                        .collect(),
                    zones: slice.endpoints.zone_texts(),
                    trigger: None,
                });
                service.into_iter().chain(slices)
            })
        });
        let pods = self.pods.iter().map(|(key, pod)| {
            let (ns, name) = split_key(key);
            Record::Pod {
                namespace: ns.to_string(),
                name: name.to_string(),
                ips: pod.ips().collect(),
                running: pod.running(),
            }
        });
        namespaces.chain(services).chain(pods).chain(self.imports())
    }

    /// ServiceImports and their clusters' slices.
    fn imports(&self) -> impl Iterator<Item = Record> + '_ {
        let all = self.clusterset.namespaces.values().flat_map(|n| n.imports.values());
        all.flat_map(|i| {
            let (ns, name) = (i.id.namespace.to_string(), i.id.name.to_string());
            let import = i.kind.clone().map(|kind| Record::Import {
                namespace: ns.clone(),
                name: name.clone(),
                kind,
                ports: ports_in(&i.ports),
            });
            let slices = i.slices.iter().map(move |s| Record::McsSlice {
                namespace: ns.clone(),
                name: s.slice.name(&name),
                service: name.clone(),
                cluster: s.cluster.to_string(),
                ports: ports_in(&s.slice.ports),
                endpoints: s
                    .slice
                    .endpoints
                    .iter()
                    .map(|e| (e.addr, e.hostname.map(|h| h.to_string())))
                    .collect(),
            });
            import.into_iter().chain(slices)
        })
    }
}
