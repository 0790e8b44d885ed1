//! Compact records: only what DNS answers need, built once at ingest.
//!
//! Prices on a 64-bit target (names are shared `Arc<str>`, interned per
//! snapshot, so each distinct string is stored once):
//! - [`Port`]: 24 bytes (name pointer 16, number 2, protocol 1, padding).
//! - An endpoint: 4 bytes for IPv4 (up to five inline in the slice's 32
//!   bytes of [`Endpoints`]), 16 for IPv6, plus 16 for its hostname when some endpoint of its slice
//!   has one (and 24 for the box holding them); its ports
//!   are stored once per EndpointSlice ([`Slice`]); topology zones
//!   (`zonal` only) as `store::topology` prices them.
//! - [`Service`]: 72 bytes behind an `Arc` (kind, shared [`Ports`], a list
//!   of 56-byte [`Slice`]s, one cluster IP inline, more boxed: [`Ips`]).
//! - A reverse (PTR) entry: 8 bytes per IPv4 address, 20 per IPv6: the
//!   service's 4-byte slot only (an endpoint's hostname is read when asked).
//! - [`Service::external`] (for `k8s_external`): 8 bytes on every Service
//!   (a null pointer when it has no outside address, as most have); a
//!   Service with some adds 32 bytes, 17 per IP and one parsed name per
//!   load-balancer hostname, and one 32/40-byte entry per IP in the
//!   snapshot's external reverse index.

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::Name;

use super::ips::Ips;
pub use super::ports::{Port, Ports, Proto};
use super::short::Short;
use super::topology::Zones;

/// A ready endpoint of a service, as read from its slice. `hostname` is
/// the endpoint's `hostname`, else (with `endpoint_pod_names`) its pod's
/// name; `None` stands for its dashed address, derived when asked instead
/// of stored for every pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint<'a> {
    pub addr: IpAddr,
    pub hostname: Option<&'a Arc<str>>,
}

/// A slice's ready endpoints, packed: an EndpointSlice has one address
/// family, so an IPv4 endpoint takes 4 bytes (a list of 40-byte records
/// cost 45 bytes an endpoint); hostnames and topology zones, which most
/// slices lack, sit behind one pointer that is null without them (32
/// bytes a slice, where a field each took 48).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Endpoints {
    addrs: Addrs,
    extra: Option<Box<Extra>>,
}

/// What only some slices have.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Extra {
    /// One per endpoint when any has a hostname, else empty.
    hosts: Box<[Option<Arc<str>>]>,
    /// Each endpoint's topology zone, under `zonal` only ([`Zones`]).
    zones: Option<Box<Zones>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Addrs {
    /// Up to [`FEW`] IPv4 addresses (most slices) inline: no heap chunk
    /// of their own (32 bytes a slice); the rest zero.
    Few(u8, [u32; FEW]),
    V4(Box<[u32]>),
    V6(Box<[[u8; 16]]>),
    /// Both families in one list (never from a real EndpointSlice).
    Mixed(Box<[IpAddr]>),
}

/// IPv4 addresses held inline: as many as fit beside the tag.
const FEW: usize = 5;

impl Default for Addrs {
    fn default() -> Self {
        Addrs::Few(0, [0; FEW])
    }
}

impl Endpoints {
    /// Packs `(address, hostname)` pairs, keeping their order.
    pub fn new(endpoints: Vec<(IpAddr, Option<Arc<str>>)>) -> Endpoints {
        let all_v4 = endpoints.iter().all(|(a, _)| a.is_ipv4());
        let all_v6 = endpoints.iter().all(|(a, _)| a.is_ipv6());
        let addrs = endpoints.iter().map(|(a, _)| *a);
        let addrs = match (all_v4, all_v6) {
            (true, _) if endpoints.len() <= FEW => {
                let mut few = [0; FEW];
                few.iter_mut()
                    .zip(addrs.filter_map(v4_bits))
                    .for_each(|(to, a)| *to = a);
                Addrs::Few(endpoints.len() as u8, few)
            }
            (true, _) => Addrs::V4(addrs.filter_map(v4_bits).collect()),
            (_, true) => Addrs::V6(addrs.filter_map(v6_octets).collect()),
            _ => Addrs::Mixed(addrs.collect()),
        };
        let extra = endpoints.iter().any(|(_, h)| h.is_some()).then(|| {
            Box::new(Extra {
                hosts: endpoints.into_iter().map(|(_, h)| h).collect(),
                zones: None,
            })
        });
        Endpoints { addrs, extra }
    }

    /// The same endpoints with their topology zones, one per endpoint.
    pub fn with_zones(mut self, zones: Vec<Option<Arc<str>>>) -> Endpoints {
        let zones = Zones::new(zones);
        match (&mut self.extra, zones) {
            (Some(extra), zones) => extra.zones = zones,
            (None, None) => {}
            (None, zones) => {
                self.extra = Some(Box::new(Extra {
                    hosts: Box::default(),
                    zones,
                }))
            }
        }
        self
    }

    fn zones(&self) -> Option<&Zones> {
        self.extra.as_ref().and_then(|x| x.zones.as_deref())
    }

    /// The zones as a [`crate::store::Record`] holds them (empty: none).
    pub fn zone_texts(&self) -> Vec<String> {
        self.zones().map_or_else(Vec::new, Zones::texts)
    }

    /// The endpoints with their zones, in their slice's order.
    pub fn iter_zoned(&self) -> impl Iterator<Item = (Endpoint<'_>, Option<&str>)> + '_ {
        let zones = self.zones();
        self.iter()
            .enumerate()
            .map(move |(i, e)| (e, zones.and_then(|z| z.get(i)).map(|z| &**z)))
    }

    pub fn len(&self) -> usize {
        match &self.addrs {
            Addrs::Few(n, _) => usize::from(*n),
            Addrs::V4(a) => a.len(),
            Addrs::V6(a) => a.len(),
            Addrs::Mixed(a) => a.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The address of endpoint `i` (`i < len`).
    fn addr(&self, i: usize) -> Option<IpAddr> {
        match &self.addrs {
            Addrs::Few(n, a) => a[..usize::from(*n)].get(i).map(|b| IpAddr::V4((*b).into())),
            Addrs::V4(a) => a.get(i).map(|b| IpAddr::V4((*b).into())),
            Addrs::V6(a) => a.get(i).map(|b| IpAddr::V6((*b).into())),
            Addrs::Mixed(a) => a.get(i).copied(),
        }
    }

    /// The endpoints in their slice's order.
    pub fn iter(&self) -> impl Iterator<Item = Endpoint<'_>> + '_ {
        let hosts = self.extra.as_ref().map_or(&[][..], |x| &x.hosts[..]);
        (0..self.len()).filter_map(move |i| {
            Some(Endpoint {
                addr: self.addr(i)?,
                hostname: hosts.get(i).and_then(Option::as_ref),
            })
        })
    }
}

fn v4_bits(addr: IpAddr) -> Option<u32> {
    match addr {
        IpAddr::V4(a) => Some(a.to_bits()),
        IpAddr::V6(_) => None,
    }
}

fn v6_octets(addr: IpAddr) -> Option<[u8; 16]> {
    match addr {
        IpAddr::V6(a) => Some(a.octets()),
        IpAddr::V4(_) => None,
    }
}

/// One EndpointSlice of a service: its ports and ready endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub name: Arc<str>,
    pub ports: Ports,
    pub endpoints: Endpoints,
}

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
    pub slices: Box<[Slice]>,
    /// Where the service is reached from outside the cluster, if anywhere
    /// (`k8s_external`); `None` for most services.
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

impl<'a> Endpoint<'a> {
    /// The first label of the endpoint's name: its hostname or dashed address.
    pub fn host(&self) -> std::borrow::Cow<'a, str> {
        match self.hostname {
            Some(h) => std::borrow::Cow::Borrowed(h),
            None => std::borrow::Cow::Owned(dashed(self.addr)),
        }
    }

    /// Whether the endpoint answers to `label` (`as_ip`: the label undashed).
    pub fn named(&self, label: &str, as_ip: Option<IpAddr>) -> bool {
        match self.hostname {
            Some(h) => &**h == label,
            None => as_ip == Some(self.addr),
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

/// The dashed form of an address used as a hostname: `10-0-0-1`, `fd00--1`;
/// an IPv6 form ending in `-` gets a `0` (`fd00--0`), as CoreDNS's
/// endpointHostname writes it.
pub fn dashed(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(v4) => v4.to_string().replace('.', "-"),
        IpAddr::V6(v6) => {
            let mut host = v6.to_string().replace(':', "-");
            if host.ends_with('-') {
                host.push('0');
            }
            host
        }
    }
}

/// The inverse of [`dashed`]: `1-2-3-4` → 1.2.3.4, `fd00--1` → fd00::1.
pub fn undash(label: &str) -> Option<IpAddr> {
    if label.split('-').count() == 4 && !label.contains("--") {
        if let Ok(v4) = label.replace('-', ".").parse() {
            return Some(IpAddr::V4(v4));
        }
    }
    label.replace('-', ":").parse().ok().map(IpAddr::V6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashed_round_trips() {
        for text in ["10.0.0.1", "fd00::1", "2001:db8::a:1", "2001:db8:3333:4444:5555:6666::"] {
            let ip: IpAddr = text.parse().expect("valid ip");
            assert_eq!(undash(&dashed(ip)), Some(ip), "{text}");
        }
        assert_eq!(dashed("fd00::".parse().expect("valid ip")), "fd00--0");
        assert_eq!(undash("1-2-3"), None);
        assert_eq!(undash("1-2-3-400"), None);
        assert_eq!(undash("web"), None);
    }
}
