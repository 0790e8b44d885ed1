//! A slice's ready endpoints, packed for size (see [`Endpoints`]), and
//! the endpoint as the query path reads it.

use std::net::IpAddr;
use std::sync::Arc;

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
