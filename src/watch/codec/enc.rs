//! The encoder: records streamed to any writer, every byte checksummed,
//! the checksum appended when the writer is finished.

use std::io::Write;
use std::net::IpAddr;

use super::fnv::{fnv_update, FNV_OFFSET};
use crate::store::mcs::ImportKind;
use crate::store::{External, PortIn, Record, ServiceKind};

/// Writes records, checksumming every byte.
pub struct Enc<W: Write> {
    out: W,
    hash: u64,
}

impl<W: Write> Enc<W> {
    pub fn new(out: W) -> Self {
        Enc { out, hash: FNV_OFFSET }
    }

    pub fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.hash = fnv_update(self.hash, b);
        self.out.write_all(b)
    }

    fn u8(&mut self, v: u8) -> std::io::Result<()> {
        self.bytes(&[v])
    }

    fn varint(&mut self, mut v: u64) -> std::io::Result<()> {
        let mut buf = [0u8; 10];
        let mut n = 0;
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            buf[n] = if v == 0 { low } else { low | 0x80 };
            n += 1;
            if v == 0 {
                return self.bytes(&buf[..n]);
            }
        }
    }

    pub fn str(&mut self, s: &str) -> std::io::Result<()> {
        self.varint(s.len() as u64)?;
        self.bytes(s.as_bytes())
    }

    fn ip(&mut self, ip: IpAddr) -> std::io::Result<()> {
        match ip {
            IpAddr::V4(v4) => {
                self.u8(4)?;
                self.bytes(&v4.octets())
            }
            IpAddr::V6(v6) => {
                self.u8(6)?;
                self.bytes(&v6.octets())
            }
        }
    }

    fn ips(&mut self, ips: &[IpAddr]) -> std::io::Result<()> {
        self.varint(ips.len() as u64)?;
        ips.iter().try_for_each(|ip| self.ip(*ip))
    }

    fn ports(&mut self, ports: &[PortIn]) -> std::io::Result<()> {
        self.varint(ports.len() as u64)?;
        for p in ports {
            self.str(&p.name)?;
            self.u8(p.proto as u8)?;
            self.bytes(&p.port.to_le_bytes())?;
        }
        Ok(())
    }

    /// A Service's external addresses: a count of IPs,
    /// the IPs, a count of hostnames, the hostnames.
    fn external(&mut self, external: Option<&External>) -> std::io::Result<()> {
        let (ips, hostnames) = external.map_or((&[][..], &[][..]), |e| (&e.ips[..], &e.hostnames[..]));
        self.ips(ips)?;
        self.varint(hostnames.len() as u64)?;
        for h in hostnames {
            self.str(&h.to_ascii())?;
        }
        Ok(())
    }

    /// Each endpoint: its address, a tag (bit 0: a hostname follows, bit
    /// 1: a topology zone follows), then those strings.
    fn endpoints(&mut self, endpoints: &[(IpAddr, Option<String>)], zones: &[String]) -> std::io::Result<()> {
        self.varint(endpoints.len() as u64)?;
        for (i, (ip, host)) in endpoints.iter().enumerate() {
            self.ip(*ip)?;
            let zone = zones.get(i).filter(|z| !z.is_empty());
            self.u8(u8::from(host.is_some()) | (u8::from(zone.is_some()) << 1))?;
            for text in host.iter().chain(zone) {
                self.str(text)?;
            }
        }
        Ok(())
    }

    /// A namespaced record's tag and key.
    fn head(&mut self, tag: u8, namespace: &str, name: &str) -> std::io::Result<()> {
        self.u8(tag)?;
        self.str(namespace)?;
        self.str(name)
    }

    pub fn record(&mut self, record: &Record) -> std::io::Result<()> {
        match record {
            Record::Namespace { name } => {
                self.u8(0)?;
                self.str(name)
            }
            Record::Service {
                namespace,
                name,
                kind,
                selector,
                ports,
                external,
            } => self.service(namespace, name, kind, *selector, ports, external.as_deref()),
            Record::Slice {
                namespace,
                name,
                service,
                ports,
                endpoints,
                zones,
                ..
            } => self.slice(namespace, name, service, ports, endpoints, zones),
            Record::Import {
                namespace,
                name,
                kind,
                ports,
            } => self.import(namespace, name, kind, ports),
            Record::McsSlice {
                namespace,
                name,
                service,
                cluster,
                ports,
                endpoints,
            } => self.mcs_slice(namespace, name, service, cluster, ports, endpoints),
            Record::Pod {
                namespace,
                name,
                ips,
                running,
            } => {
                self.head(3, namespace, name)?;
                self.u8(u8::from(*running))?;
                self.ips(ips)
            }
        }
    }

    /// A Service (tag 1): selector, kind, ports, outside addresses.
    fn service(
        &mut self,
        namespace: &str,
        name: &str,
        kind: &ServiceKind,
        selector: bool,
        ports: &[PortIn],
        external: Option<&External>,
    ) -> std::io::Result<()> {
        self.head(1, namespace, name)?;
        self.u8(u8::from(selector))?;
        match kind {
            ServiceKind::ClusterIp(ips) => {
                self.u8(0)?;
                self.ips(ips)?;
            }
            ServiceKind::Headless => self.u8(1)?,
            ServiceKind::ExternalName(target) => {
                self.u8(2)?;
                self.str(&target.to_ascii())?;
            }
        }
        self.ports(ports)?;
        self.external(external)
    }

    /// An EndpointSlice (tag 2): its service, ports, endpoints and zones.
    fn slice(
        &mut self,
        namespace: &str,
        name: &str,
        service: &str,
        ports: &[PortIn],
        endpoints: &[(IpAddr, Option<String>)],
        zones: &[String],
    ) -> std::io::Result<()> {
        self.head(2, namespace, name)?;
        self.str(service)?;
        self.ports(ports)?;
        self.endpoints(endpoints, zones)
    }

    /// A ServiceImport (tag 4): its kind and ports.
    fn import(&mut self, namespace: &str, name: &str, kind: &ImportKind, ports: &[PortIn]) -> std::io::Result<()> {
        self.head(4, namespace, name)?;
        match kind {
            ImportKind::ClusterSetIp(ips) => {
                self.u8(0)?;
                self.ips(ips)?;
            }
            ImportKind::Headless => self.u8(1)?,
        }
        self.ports(ports)
    }

    /// A multi-cluster slice (tag 5): its service, cluster, ports and
    /// endpoints (without zones).
    fn mcs_slice(
        &mut self,
        namespace: &str,
        name: &str,
        service: &str,
        cluster: &str,
        ports: &[PortIn],
        endpoints: &[(IpAddr, Option<String>)],
    ) -> std::io::Result<()> {
        self.head(5, namespace, name)?;
        self.str(service)?;
        self.str(cluster)?;
        self.ports(ports)?;
        self.endpoints(endpoints, &[])
    }

    /// Appends the checksum and returns the flushed writer's inner value.
    pub fn finish(mut self) -> std::io::Result<W::Inner>
    where
        W: IntoInner,
    {
        let sum = self.hash.to_le_bytes();
        self.out.write_all(&sum)?;
        self.out.into_inner_flushed()
    }
}

/// A buffered writer that can be unwrapped after a flush.
pub trait IntoInner: Write {
    type Inner;
    fn into_inner_flushed(self) -> std::io::Result<Self::Inner>;
}

impl<T: Write> IntoInner for std::io::BufWriter<T> {
    type Inner = T;
    fn into_inner_flushed(self) -> std::io::Result<T> {
        self.into_inner().map_err(|e| e.into_error())
    }
}

impl IntoInner for Vec<u8> {
    type Inner = Vec<u8>;
    fn into_inner_flushed(self) -> std::io::Result<Vec<u8>> {
        Ok(self)
    }
}
