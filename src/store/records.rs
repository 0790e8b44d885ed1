//! Compact records: only what DNS answers need, built once at ingest.
//!
//! Prices on a 64-bit target (names shared by many records are `Arc<str>`,
//! interned per snapshot, so each distinct string is stored once; a
//! Service's and a slice's own name are held inline, [`Short`]):
//! - [`Port`]: 24 bytes (name pointer 16, number 2, protocol 1, padding).
//! - An endpoint: 4 bytes for IPv4 (up to five inline in the slice's 32
//!   bytes of [`Endpoints`]), 16 for IPv6, plus 16 for its hostname when some endpoint of its slice
//!   has one (and 24 for the box holding them); its ports
//!   are stored once per EndpointSlice ([`Slice`]); topology zones
//!   (`zonal` only) as `store::topology` prices them.
//! - [`Service`]: 120 bytes behind an `Arc` (kind, shared [`Ports`], its
//!   one 64-byte [`Slice`] inline, more boxed: [`Slices`]; one cluster IP
//!   inline, more boxed: [`Ips`]), its 56-byte identity ([`ServiceId`],
//!   the name inline) behind another, and a 24-byte entry in its
//!   namespace's map ([`crate::store::ServiceMap`]).
//! - A reverse (PTR) entry: 8 bytes per IPv4 address, 20 per IPv6: the
//!   service's 4-byte slot only (an endpoint's hostname is read when asked).
//! - [`Service::external`] (its external addresses): 8 bytes on every Service
//!   (a null pointer when it has no outside address, as most have); a
//!   Service with some adds 32 bytes, 17 per IP and one parsed name per
//!   load-balancer hostname, and one 32/40-byte entry per IP in the
//!   snapshot's external reverse index.

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::Name;

pub use super::endpoints::{dashed, undash, Endpoint, Endpoints};
use super::ips::Ips;
pub use super::ports::{Port, Ports, Proto};
use super::short::Short;
pub use super::slices::{Slice, Slices};

/// What a service's own name resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceKind {
    /// ClusterIP, NodePort, LoadBalancer: its cluster IPs (dual-stack: both).
    ClusterIp(Ips),
    /// `clusterIP: None`: the ready endpoints' addresses.
    Headless,
    /// `type: ExternalName`: a CNAME to this target.
    ExternalName(Box<Name>),
}

/// One Service with everything its names need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub id: Arc<ServiceId>,
    /// `id`'s slot in the snapshot's identity table (the reverse indexes hold it).
    pub slot: u32,
    /// `None` while only EndpointSlices of the service are known: such an
    /// entry answers nothing until its Service arrives.
    pub kind: Option<ServiceKind>,
    /// Whether the Service has a selector (for the programming-latency
    /// metric's `service_kind`).
    pub selector: bool,
    pub ports: Ports,
    /// The service's EndpointSlices, so that one slice's change replaces
    /// only its own part.
    pub slices: Slices,
    /// Where the service is reached from outside the cluster, if anywhere
    /// (its external addresses); `None` for most services.
    pub external: Option<Box<External>>,
}

/// A Service's outside addresses, in CoreDNS's order: `spec.externalIPs`,
/// then `status.loadBalancer.ingress[]` (its `ip`, else its `hostname`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct External {
    pub ips: Box<[IpAddr]>,
    /// Load-balancer ingress hostnames (answered as CNAMEs).
    pub hostnames: Box<[Name]>,
}

impl External {
    /// `None` when there is no address at all (the common case).
    pub fn boxed(ips: Vec<IpAddr>, hostnames: Vec<Name>) -> Option<Box<External>> {
        (!ips.is_empty() || !hostnames.is_empty()).then(|| {
            Box::new(External {
                ips: ips.into_boxed_slice(),
                hostnames: hostnames.into_boxed_slice(),
            })
        })
    }
}

impl Service {
    /// Every ready endpoint across the slices (an address listed by two
    /// slices during a migration appears twice; answers drop duplicates).
    pub fn endpoints(&self) -> impl Iterator<Item = Endpoint<'_>> {
        self.slices.iter().flat_map(|s| s.endpoints.iter())
    }

    /// Whether the service's own name exists: a headless service with no
    /// ready endpoint has no records (spec 2.4.1 → NXDOMAIN).
    pub fn has_records(&self, ignore_empty: bool) -> bool {
        match self.kind {
            None => false,
            Some(ServiceKind::Headless) => self.endpoints().next().is_some(),
            Some(ServiceKind::ClusterIp(_)) if ignore_empty => self.endpoints().next().is_some(),
            Some(_) => true,
        }
    }
}

/// Which name of a service a PTR record points to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PtrHost {
    /// `<service>.<ns>.svc.<zone>` (a cluster IP).
    Service,
    /// `<host>.<service>...` for an endpoint with a hostname.
    Named(Arc<str>),
    /// `<dashed address>.<service>...` for an endpoint without one.
    Dashed,
}

/// A service's identity, shared by its entry and every PTR target of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceId {
    pub namespace: Arc<str>,
    /// Inline when short (most are): the entry's key in its namespace's
    /// map is this identity too ([`crate::store::ServiceKey`]).
    pub name: Short,
}

/// The empty hostname that stands for "the dashed address" in a target.
static DASHED: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from(""));

/// The name a PTR answer points to: `<service>.<ns>.svc.<zone>` or
/// `<host>.<service>.<ns>.svc.<zone>`; built when a PTR query asks
/// ([`crate::store::Snapshot::reverse`]), not stored.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PtrTarget {
    pub service: Arc<ServiceId>,
    /// `None`: the service name; `Some("")`: the dashed address; else the hostname.
    host: Option<Arc<str>>,
}

impl PtrTarget {
    pub fn new(service: Arc<ServiceId>, host: PtrHost) -> PtrTarget {
        let host = match host {
            PtrHost::Service => None,
            PtrHost::Dashed => Some(DASHED.clone()),
            PtrHost::Named(h) => Some(h),
        };
        PtrTarget { service, host }
    }

    pub fn host(&self) -> PtrHost {
        match &self.host {
            None => PtrHost::Service,
            Some(h) if h.is_empty() => PtrHost::Dashed,
            Some(h) => PtrHost::Named(h.clone()),
        }
    }
}
