//! Multi-cluster Services (KEP-1645, `multicluster` zones): ServiceImports
//! and the EndpointSlices an MCS controller writes for each cluster that
//! exports the service, as compact records beside the cluster's own.
//!
//! An [`Import`] is what a Service is to the cluster zone: its kind
//! (ClusterSetIP or headless), its ports, and its slices, each tagged with
//! the cluster it came from (`multicluster.kubernetes.io/source-cluster`).
//! Prices: an [`Import`] is a [`Service`]-sized record plus 16 bytes per
//! slice for its cluster ID (interned: one string per cluster); endpoints
//! are packed as in the cluster zone ([`crate::store::Endpoints`]), and one
//! reverse entry (8 bytes for IPv4: the address and the import's slot in
//! a table of identities, instead of 16 with a pointer) per ClusterSetIP
//! and per endpoint.
//!
//! [`Service`]: crate::store::Service

use std::net::IpAddr;
use std::sync::Arc;

use super::addrs::AddrIndex;
use super::maps::IMap;
use super::records::{Endpoint, Ports, ServiceId, Slice};

/// What a ServiceImport's own name resolves to (`spec.type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportKind {
    /// `ClusterSetIP`: its `spec.ips`.
    ClusterSetIp(Box<[IpAddr]>),
    /// `Headless`: every ready endpoint in every cluster.
    Headless,
}

/// One cluster's EndpointSlice of an imported service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McsSlice {
    pub cluster: Arc<str>,
    pub slice: Slice,
}

/// One ServiceImport with its clusters' endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub id: Arc<ServiceId>,
    /// `None` while only slices of the import are known.
    pub kind: Option<ImportKind>,
    pub ports: Ports,
    pub slices: Box<[McsSlice]>,
    /// Its index in [`ClusterSet`]'s table of identities, which the
    /// reverse index refers to.
    pub slot: u32,
}

impl Import {
    /// Every ready endpoint with its cluster.
    pub fn endpoints(&self) -> impl Iterator<Item = (&Arc<str>, Endpoint<'_>)> {
        self.slices
            .iter()
            .flat_map(|s| s.slice.endpoints.iter().map(move |e| (&s.cluster, e)))
    }

    /// Whether the import's own name exists: a headless import with no
    /// ready endpoint has no records (spec 2.4.1), and with `ignore
    /// empty_service` neither has a ClusterSetIP import without one.
    pub fn has_records(&self, ignore_empty: bool) -> bool {
        match self.kind {
            None => false,
            Some(ImportKind::Headless) => self.endpoints().next().is_some(),
            Some(ImportKind::ClusterSetIp(_)) if ignore_empty => self.endpoints().next().is_some(),
            Some(_) => true,
        }
    }
}

/// The imports of one namespace.
#[derive(Debug, Default, Clone)]
pub struct McsNamespace {
    /// Imports whose ServiceImport object is known.
    pub live: usize,
    pub imports: IMap<Arc<str>, Arc<Import>>,
}

/// Every import of a snapshot, and the reverse index of their addresses.
#[derive(Debug, Default, Clone)]
pub struct ClusterSet {
    pub(super) namespaces: IMap<Arc<str>, McsNamespace>,
    /// Imports by ClusterSetIP and by endpoint address (one entry each),
    /// as slots of `ids`.
    pub(super) reverse: AddrIndex<u32>,
    /// The identity of the import in each slot (`None`: a free slot).
    pub(super) ids: imbl::Vector<Option<Arc<ServiceId>>>,
}

/// Which name of an import a PTR record points to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum McsHost {
    /// `<svc>.<ns>.svc.<zone>` (a ClusterSetIP).
    Service,
    /// `<host>.<cluster>.<svc>.<ns>.svc.<zone>` (an endpoint; `host` is
    /// its hostname or dashed address).
    Endpoint { host: String, cluster: Arc<str> },
}

impl ClusterSet {
    /// The import, if its ServiceImport is known.
    pub fn import(&self, namespace: &str, name: &str) -> Option<&Import> {
        let import = self.namespaces.get(namespace)?.imports.get(name)?;
        import.kind.is_some().then_some(&**import)
    }

    /// Whether any import lives in `namespace`.
    pub fn has_namespace(&self, namespace: &str) -> bool {
        self.namespaces.get(namespace).is_some_and(|n| n.live > 0)
    }

    /// Every import in a stable order (namespace, name), for transfers and
    /// tests.
    pub fn imports(&self) -> Vec<&Import> {
        let mut all: Vec<&Import> = self
            .namespaces
            .values()
            .flat_map(|n| n.imports.values().map(|i| &**i))
            .filter(|i| i.kind.is_some())
            .collect();
        all.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// The PTR targets of `addr` among live imports, sorted.
    pub fn reverse(&self, addr: IpAddr) -> Vec<(Arc<ServiceId>, McsHost)> {
        let mut targets = Vec::new();
        let mut slots: Vec<u32> = self.reverse.get(addr).copied().collect();
        slots.dedup();
        for slot in slots {
            let Some(Some(id)) = self.ids.get(slot as usize) else {
                continue;
            };
            let Some(import) = self.import(&id.namespace, &id.name) else {
                continue;
            };
            if let Some(ImportKind::ClusterSetIp(ips)) = &import.kind {
                if ips.contains(&addr) {
                    targets.push((id.clone(), McsHost::Service));
                }
            }
            for (cluster, e) in import.endpoints().filter(|(_, e)| e.addr == addr) {
                let host = e.host().into_owned();
                let cluster = cluster.clone();
                targets.push((id.clone(), McsHost::Endpoint { host, cluster }));
            }
        }
        targets.sort_unstable();
        targets.dedup();
        targets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Kind, ObjectKey, PortIn, Proto, Record, Writer};

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn slice(name: &str, cluster: &str, addr: &str) -> Record {
        Record::McsSlice {
            namespace: "shop".into(),
            name: name.into(),
            service: "db".into(),
            cluster: cluster.into(),
            ports: vec![PortIn {
                name: "http".into(),
                proto: Proto::Tcp,
                port: 80,
            }],
            endpoints: vec![(ip(addr), None)],
        }
    }

    /// Imports and their slices come and go one at a time, relists delete
    /// what they no longer list, and the reverse index follows.
    #[test]
    fn imports_follow_their_objects() {
        let mut w = Writer::new(&Kind::ALL);
        for kind in Kind::ALL {
            w.relist_start(kind);
            w.relist_done(kind);
        }
        w.apply(Record::Import {
            namespace: "shop".into(),
            name: "db".into(),
            kind: ImportKind::Headless,
            ports: vec![],
        });
        w.apply(slice("db-east", "east", "10.1.0.1"));
        w.apply(slice("db-west", "west", "10.2.0.1"));
        let snap = w.snapshot(1);
        let import = snap.clusterset.import("shop", "db").expect("import");
        let clusters: Vec<&str> = import.endpoints().map(|(c, _)| &**c).collect();
        assert_eq!(clusters, ["east", "west"]);
        let host = McsHost::Endpoint {
            host: "10-2-0-1".into(),
            cluster: Arc::from("west"),
        };
        assert_eq!(snap.clusterset.reverse(ip("10.2.0.1")), [(import.id.clone(), host)]);
        // A relist of slices that no longer holds db-west deletes it.
        w.relist_start(Kind::EndpointSlice);
        w.apply(slice("db-east", "east", "10.1.0.1"));
        w.relist_done(Kind::EndpointSlice);
        let snap = w.snapshot(2);
        assert!(snap.clusterset.reverse(ip("10.2.0.1")).is_empty());
        assert_eq!(
            snap.clusterset.import("shop", "db").map(|i| i.endpoints().count()),
            Some(1)
        );
        // The import deleted: no names, no PTR, the namespace holds none.
        let key = |kind, name: &str| ObjectKey {
            kind,
            namespace: "shop".into(),
            name: name.into(),
        };
        w.delete(&key(Kind::ServiceImport, "db"));
        let snap = w.snapshot(3);
        assert!(snap.clusterset.import("shop", "db").is_none());
        assert!(snap.clusterset.reverse(ip("10.1.0.1")).is_empty());
        assert!(!snap.clusterset.has_namespace("shop"));
        w.delete(&key(Kind::EndpointSlice, "db-east"));
        assert_eq!(w.counts()[Kind::ServiceImport as usize], 0);
        assert_eq!(w.counts()[Kind::EndpointSlice as usize], 0);
    }
}
