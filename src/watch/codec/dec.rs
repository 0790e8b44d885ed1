//! The decoder: records read back from a whole file in memory, `None`
//! at the first malformed byte.

use std::net::IpAddr;

use hickory_proto::rr::Name;

use crate::store::mcs::ImportKind;
use crate::store::{External, PortIn, Proto, Record, ServiceKind};

/// Reads records from a whole file; `None` on anything malformed.
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8], pos: usize) -> Self {
        Dec { buf, pos }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let b = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(b)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.varint()?).ok().filter(|n| *n <= self.buf.len())
    }

    pub fn str(&mut self) -> Option<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_string)
    }

    fn ip(&mut self) -> Option<IpAddr> {
        match self.u8()? {
            4 => Some(IpAddr::from(<[u8; 4]>::try_from(self.take(4)?).ok()?)),
            6 => Some(IpAddr::from(<[u8; 16]>::try_from(self.take(16)?).ok()?)),
            _ => None,
        }
    }

    fn ips(&mut self) -> Option<Vec<IpAddr>> {
        let n = self.len()?;
        (0..n).map(|_| self.ip()).collect()
    }

    fn ports(&mut self) -> Option<Vec<PortIn>> {
        let n = self.len()?;
        (0..n)
            .map(|_| {
                let name = self.string()?;
                let proto = [Proto::Tcp, Proto::Udp, Proto::Sctp]
                    .get(usize::from(self.u8()?))
                    .copied()?;
                let port = u16::from_le_bytes(self.take(2)?.try_into().ok()?);
                Some(PortIn { name, proto, port })
            })
            .collect()
    }

    pub fn record(&mut self) -> Option<Record> {
        match self.u8()? {
            0 => Some(Record::Namespace { name: self.string()? }),
            1 => self.service(),
            2 => self.slice(),
            3 => self.pod(),
            4 => self.import(),
            5 => self.mcs_slice(),
            _ => None,
        }
    }

    /// A Service: selector, kind, ports, outside addresses.
    fn service(&mut self) -> Option<Record> {
        let (namespace, name) = (self.string()?, self.string()?);
        let selector = self.u8()? != 0;
        let kind = match self.u8()? {
            0 => ServiceKind::ClusterIp(self.ips()?.into()),
            1 => ServiceKind::Headless,
            2 => ServiceKind::ExternalName(Box::new(Name::from_ascii(self.str()?).ok()?)),
            _ => return None,
        };
        let ports = self.ports()?;
        let ips = self.ips()?;
        let hostnames = (0..self.len()?)
            .map(|_| Name::from_ascii(self.str()?).ok())
            .collect::<Option<Vec<Name>>>()?;
        Some(Record::Service {
            namespace,
            name,
            kind,
            selector,
            ports,
            external: External::boxed(ips, hostnames),
        })
    }

    /// An EndpointSlice: its service, ports, endpoints and their zones.
    fn slice(&mut self) -> Option<Record> {
        let (namespace, name, service) = (self.string()?, self.string()?, self.string()?);
        let ports = self.ports()?;
        let (endpoints, zones) = self.endpoints()?;
        Some(Record::Slice {
            namespace,
            name,
            service,
            ports,
            endpoints,
            zones,
            trigger: None,
        })
    }

    /// A Pod: whether it is Running, its IPs.
    fn pod(&mut self) -> Option<Record> {
        let (namespace, name) = (self.string()?, self.string()?);
        let running = self.u8()? != 0;
        Some(Record::Pod {
            namespace,
            name,
            ips: self.ips()?,
            running,
        })
    }

    /// A ServiceImport: its kind and ports.
    fn import(&mut self) -> Option<Record> {
        let (namespace, name) = (self.string()?, self.string()?);
        let kind = match self.u8()? {
            0 => ImportKind::ClusterSetIp(self.ips()?.into_boxed_slice()),
            1 => ImportKind::Headless,
            _ => return None,
        };
        let ports = self.ports()?;
        Some(Record::Import {
            namespace,
            name,
            kind,
            ports,
        })
    }

    /// A multi-cluster slice: its service, cluster, ports and endpoints.
    fn mcs_slice(&mut self) -> Option<Record> {
        let (namespace, name, service, cluster) = (self.string()?, self.string()?, self.string()?, self.string()?);
        let ports = self.ports()?;
        let (endpoints, _) = self.endpoints()?;
        Some(Record::McsSlice {
            namespace,
            name,
            service,
            cluster,
            ports,
            endpoints,
        })
    }

    /// The endpoints and their zones (empty when none has one).
    #[allow(clippy::type_complexity)]
    fn endpoints(&mut self) -> Option<(Vec<(IpAddr, Option<String>)>, Vec<String>)> {
        let n = self.len()?;
        let (mut endpoints, mut zones) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let ip = self.ip()?;
            let tag = self.u8()?;
            if tag > 3 {
                return None;
            }
            let host = if tag & 1 != 0 { Some(self.string()?) } else { None };
            zones.push(if tag & 2 != 0 { self.string()? } else { String::new() });
            endpoints.push((ip, host));
        }
        if zones.iter().all(String::is_empty) {
            zones.clear();
        }
        Some((endpoints, zones))
    }
}
