//! One immutable view of the cluster: its namespaces with their services,
//! the reverse indexes (cluster IPs, endpoints, pods, external IPs) and
//! the imported services, read by the query path through the lookups
//! here and edited only by the writer, on its own copy.

use std::net::IpAddr;
use std::sync::Arc;

use super::addrs::AddrIndex;
use super::maps::IMap;
use super::mcs::ClusterSet;
use super::records::{PtrHost, PtrTarget, Service, ServiceId};
use super::servicemap::ServiceMap;

/// One namespace: whether its Namespace object exists, and its services.
#[derive(Debug, Default, Clone)]
pub struct Namespace {
    pub object: bool,
    /// Services whose Service object is known (entries holding only
    /// EndpointSlices do not count).
    pub live_services: usize,
    pub services: ServiceMap,
}

/// One immutable view of the cluster. `synced` is false until every
/// watched kind has been listed once; lookups then must not be trusted as
/// negative answers.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub synced: bool,
    /// `namespace_labels`: only namespaces whose Namespace object is held
    /// (the watch keeps those that match and no others) are served; the
    /// rest answer as if they did not exist. False: every namespace.
    pub(super) selected: bool,
    /// SOA serial: seconds since the Unix epoch when it was published.
    pub serial: u32,
    pub(super) namespaces: IMap<Arc<str>, Namespace>,
    /// Services by cluster IP (PTR to the service's name), as slots of `ids`.
    pub(super) reverse: AddrIndex<u32>,
    /// Services by endpoint address, one entry per endpoint (8 bytes for
    /// IPv4: a slot of `ids`, not a pointer): the PTR target's first label
    /// is read from the service's endpoints when asked, not stored for each.
    pub(super) endpoint_reverse: AddrIndex<u32>,
    /// The services' identities by [`Service::slot`] (`None`: a free slot).
    pub(super) ids: imbl::Vector<Option<Arc<ServiceId>>>,
    /// Pods by IP: namespace (an index into `pod_namespaces`: 12 bytes an
    /// entry instead of 32) and whether Running (only for `pods verified`).
    pub(super) pods: AddrIndex<(u32, bool)>,
    /// The namespaces pods have been seen in, in order of appearance.
    pub(super) pod_namespaces: Arc<Vec<Arc<str>>>,
    /// Services by external IP (the external addresses' PTR answers).
    pub(super) external: AddrIndex<Arc<ServiceId>>,
    /// ServiceImports and their clusters' endpoints (`multicluster`).
    pub clusterset: ClusterSet,
}

impl Snapshot {
    /// An empty, not yet synced snapshot: every cluster name is SERVFAIL.
    pub fn unsynced() -> Self {
        Snapshot::default()
    }

    /// The namespace, if it exists (a Namespace object or any service in
    /// it) and is served.
    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        let served = |n: &&Namespace| n.object || (n.live_services > 0 && !self.selected);
        self.namespaces.get(name).filter(served)
    }

    /// Whether names in `namespace` are served: always, except under
    /// `namespace_labels`, where only namespaces whose Namespace object
    /// matched are. The one place that filter is applied: every lookup of
    /// a namespace, service or pod below goes through it.
    pub fn exposed(&self, namespace: &str) -> bool {
        !self.selected || self.namespaces.get(namespace).is_some_and(|n| n.object)
    }

    /// The service, if its Service object is known and its namespace is
    /// served.
    pub fn service(&self, namespace: &str, name: &str) -> Option<&Service> {
        let entry = self.namespaces.get(namespace)?;
        let service = entry.services.get(name)?;
        (service.kind.is_some() && (entry.object || !self.selected)).then_some(&**service)
    }

    /// PTR targets of a cluster IP or endpoint address, in order (may name
    /// services that do not exist; the caller checks).
    pub fn reverse(&self, addr: IpAddr) -> impl Iterator<Item = PtrTarget> {
        let id_of = |slot: &u32| self.ids.get(*slot as usize).and_then(Option::as_ref);
        let mut targets: Vec<PtrTarget> = self
            .reverse
            .get(addr)
            .filter_map(id_of)
            .map(|id| PtrTarget::new(id.clone(), PtrHost::Service))
            .collect();
        let mut last = None;
        for slot in self.endpoint_reverse.get(addr) {
            // An address held twice by a service (two slices) is one
            // entry per slice: its endpoints are read once.
            if last.replace(slot) == Some(slot) {
                continue;
            }
            let Some(id) = id_of(slot) else { continue };
            let entry = self
                .namespaces
                .get(&*id.namespace)
                .and_then(|n| n.services.get(&id.name));
            let endpoints = entry.into_iter().flat_map(|s| s.endpoints());
            for e in endpoints.filter(|e| e.addr == addr) {
                let host = e.hostname.map_or(PtrHost::Dashed, |h| PtrHost::Named(h.clone()));
                targets.push(PtrTarget::new(id.clone(), host));
            }
        }
        targets.sort_unstable();
        targets.into_iter()
    }

    /// Services with `addr` among their external IPs (may name services
    /// that no longer exist; the caller checks).
    pub fn external_reverse(&self, addr: IpAddr) -> impl Iterator<Item = &Arc<ServiceId>> {
        self.external.get(addr)
    }

    /// Whether a running pod in `namespace` has `addr` (`pods verified`).
    pub fn pod_exists(&self, namespace: &str, addr: IpAddr) -> bool {
        let named = |n: &u32| {
            self.pod_namespaces
                .get(*n as usize)
                .is_some_and(|ns| &**ns == namespace)
        };
        self.exposed(namespace) && self.pods.get(addr).any(|(n, _)| named(n))
    }

    /// The namespace of the pod with `addr`, if exactly one pod has it and
    /// it is Running (never a guess between pods).
    pub fn pod_namespace(&self, addr: IpAddr) -> Option<Arc<str>> {
        let mut pods = self.pods.get(addr);
        match (pods.next(), pods.next()) {
            (Some((ns, true)), None) => self.pod_namespaces.get(*ns as usize).cloned(),
            _ => None,
        }
    }

    /// Every served service whose Service object is known, in a stable order
    /// (namespace, name), for zone transfers.
    pub fn services(&self) -> Vec<&Service> {
        let mut all: Vec<&Service> = self
            .namespaces
            .values()
            .filter(|n| n.object || !self.selected)
            .flat_map(|n| n.services.values().map(|s| &**s))
            .filter(|s| s.kind.is_some())
            .collect();
        all.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// Number of services, for logs and metrics.
    pub fn service_count(&self) -> usize {
        self.namespaces.values().map(|n| n.live_services).sum()
    }
}
