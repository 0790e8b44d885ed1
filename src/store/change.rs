//! What the watch path hands the store: converted objects ([`Record`]),
//! their keys ([`ObjectKey`]) and kinds ([`Kind`]). Plain data, no
//! interning yet: the [`super::Writer`] interns on apply.

use std::net::IpAddr;
use std::time::SystemTime;

use super::mcs::ImportKind;
use super::records::{External, Proto, ServiceKind};

/// The kinds of objects the store is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Namespace = 0,
    Service = 1,
    EndpointSlice = 2,
    Pod = 3,
    /// `multicluster.x-k8s.io/v1alpha1` ServiceImport (`multicluster` zones).
    ServiceImport = 4,
}

impl Kind {
    /// How many kinds there are (the length of per-kind tables).
    pub const COUNT: usize = 5;

    pub const ALL: [Kind; Kind::COUNT] = [
        Kind::Namespace,
        Kind::Service,
        Kind::EndpointSlice,
        Kind::Pod,
        Kind::ServiceImport,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Namespace => "Namespace",
            Kind::Service => "Service",
            Kind::EndpointSlice => "EndpointSlice",
            Kind::Pod => "Pod",
            Kind::ServiceImport => "ServiceImport",
        }
    }
}

/// Which object: its kind, namespace (empty for a Namespace) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

/// A port as converted, before its name is interned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortIn {
    pub name: String,
    pub proto: Proto,
    pub port: u16,
}

/// One converted object: only what DNS needs, names lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Namespace {
        name: String,
    },
    Service {
        namespace: String,
        name: String,
        kind: ServiceKind,
        selector: bool,
        ports: Vec<PortIn>,
        /// `externalIPs` and load-balancer ingress: the external addresses.
        external: Option<Box<External>>,
    },
    /// Ready endpoints of one EndpointSlice: `(address, hostname)`; no
    /// hostname stands for the dashed address.
    Slice {
        namespace: String,
        name: String,
        service: String,
        ports: Vec<PortIn>,
        endpoints: Vec<(IpAddr, Option<String>)>,
        /// Each endpoint's topology zone (`""`: none), or empty when no
        /// endpoint has one or `zonal` is off (zones are kept only for it).
        zones: Vec<String>,
        /// `endpoints.kubernetes.io/last-change-trigger-time`, if set.
        trigger: Option<SystemTime>,
    },
    Pod {
        namespace: String,
        name: String,
        ips: Vec<IpAddr>,
        /// Phase Running (not Pending): autopath trusts only these.
        running: bool,
    },
    /// A ServiceImport (its name is the imported service's).
    Import {
        namespace: String,
        name: String,
        kind: ImportKind,
        ports: Vec<PortIn>,
    },
    /// An EndpointSlice labelled `multicluster.kubernetes.io/service-name`:
    /// one cluster's ready endpoints of an imported service.
    McsSlice {
        namespace: String,
        name: String,
        service: String,
        cluster: String,
        ports: Vec<PortIn>,
        endpoints: Vec<(IpAddr, Option<String>)>,
    },
}

impl Record {
    pub fn key(&self) -> ObjectKey {
        let (kind, namespace, name) = self.key_parts();
        ObjectKey {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// Kind, namespace (empty for a Namespace) and name, borrowed.
    pub fn key_parts(&self) -> (Kind, &str, &str) {
        match self {
            Record::Namespace { name } => (Kind::Namespace, "", name),
            Record::Service { namespace, name, .. } => (Kind::Service, namespace, name),
            Record::Slice { namespace, name, .. } => (Kind::EndpointSlice, namespace, name),
            Record::Pod { namespace, name, .. } => (Kind::Pod, namespace, name),
            Record::Import { namespace, name, .. } => (Kind::ServiceImport, namespace, name),
            Record::McsSlice { namespace, name, .. } => (Kind::EndpointSlice, namespace, name),
        }
    }
}
