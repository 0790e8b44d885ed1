//! The byte-level encoding of records in a `persist` file (the layout is
//! drawn in [`super::persist`]): an encoder streaming to any writer while
//! it checksums, and a decoder over a whole file in memory.

use std::io::Write;
use std::net::IpAddr;

use hickory_proto::rr::Name;

use crate::store::mcs::ImportKind;
use crate::store::{External, PortIn, Proto, Record, ServiceKind};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv_update(mut hash: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        hash = (hash ^ u64::from(*b)).wrapping_mul(FNV_PRIME);
    }
    hash
}

/// FNV-1a (64 bit) of `bytes`: the file's checksum.
pub fn fnv(bytes: &[u8]) -> u64 {
    fnv_update(FNV_OFFSET, bytes)
}

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

    /// A namespaced record's tag and key.
    /// A Service's outside addresses (`k8s_external`): a count of IPs,
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
            } => {
                self.head(1, namespace, name)?;
                self.u8(u8::from(*selector))?;
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
                self.external(external.as_deref())
            }
            Record::Slice {
                namespace,
                name,
                service,
                ports,
                endpoints,
                zones,
                ..
            } => {
                self.head(2, namespace, name)?;
                self.str(service)?;
                self.ports(ports)?;
                self.endpoints(endpoints, zones)
            }
            Record::Import {
                namespace,
                name,
                kind,
                ports,
            } => {
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
            Record::McsSlice {
                namespace,
                name,
                service,
                cluster,
                ports,
                endpoints,
            } => {
                self.head(5, namespace, name)?;
                self.str(service)?;
                self.str(cluster)?;
                self.ports(ports)?;
                self.endpoints(endpoints, &[])
            }
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
        Some(match self.u8()? {
            0 => Record::Namespace { name: self.string()? },
            1 => {
                let (namespace, name) = (self.string()?, self.string()?);
                let selector = self.u8()? != 0;
                let kind = match self.u8()? {
                    0 => ServiceKind::ClusterIp(self.ips()?.into_boxed_slice()),
                    1 => ServiceKind::Headless,
                    2 => ServiceKind::ExternalName(Box::new(Name::from_ascii(self.str()?).ok()?)),
                    _ => return None,
                };
                let ports = self.ports()?;
                let ips = self.ips()?;
                let hostnames = (0..self.len()?)
                    .map(|_| Name::from_ascii(self.str()?).ok())
                    .collect::<Option<Vec<Name>>>()?;
                Record::Service {
                    namespace,
                    name,
                    kind,
                    selector,
                    ports,
                    external: External::boxed(ips, hostnames),
                }
            }
            2 => {
                let (namespace, name, service) = (self.string()?, self.string()?, self.string()?);
                let ports = self.ports()?;
                let (endpoints, zones) = self.endpoints()?;
                Record::Slice {
                    namespace,
                    name,
                    service,
                    ports,
                    endpoints,
                    zones,
                    trigger: None,
                }
            }
            3 => {
                let (namespace, name) = (self.string()?, self.string()?);
                let running = self.u8()? != 0;
                Record::Pod {
                    namespace,
                    name,
                    ips: self.ips()?,
                    running,
                }
            }
            4 => {
                let (namespace, name) = (self.string()?, self.string()?);
                let kind = match self.u8()? {
                    0 => ImportKind::ClusterSetIp(self.ips()?.into_boxed_slice()),
                    1 => ImportKind::Headless,
                    _ => return None,
                };
                let ports = self.ports()?;
                Record::Import {
                    namespace,
                    name,
                    kind,
                    ports,
                }
            }
            5 => {
                let (namespace, name, service, cluster) =
                    (self.string()?, self.string()?, self.string()?, self.string()?);
                let ports = self.ports()?;
                let (endpoints, _) = self.endpoints()?;
                Record::McsSlice {
                    namespace,
                    name,
                    service,
                    cluster,
                    ports,
                    endpoints,
                }
            }
            _ => return None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn records_round_trip_and_damage_is_detected() {
        let port = |name: &str| PortIn {
            name: name.into(),
            proto: Proto::Udp,
            port: 53,
        };
        let records = vec![
            Record::Namespace { name: "db".into() },
            Record::Service {
                namespace: "db".into(),
                name: "pg".into(),
                kind: ServiceKind::ClusterIp(vec![ip("10.0.0.1"), ip("fd00::1")].into()),
                selector: true,
                ports: vec![port("dns"), port("")],
                external: External::boxed(
                    vec![ip("198.51.100.1")],
                    vec![Name::from_ascii("lb.example.net.").expect("name")],
                ),
            },
            Record::Service {
                namespace: "db".into(),
                name: "ext".into(),
                kind: ServiceKind::ExternalName(Box::new(Name::from_ascii("example.com.").expect("name"))),
                selector: false,
                ports: vec![],
                external: None,
            },
            Record::Slice {
                namespace: "db".into(),
                name: "pg-1".into(),
                service: "pg".into(),
                ports: vec![port("dns")],
                endpoints: vec![(ip("10.1.0.1"), Some("pg-0".into())), (ip("10.1.0.2"), None)],
                zones: vec!["us-west-2a".into(), String::new()],
                trigger: None,
            },
            Record::Import {
                namespace: "db".into(),
                name: "pg".into(),
                kind: ImportKind::ClusterSetIp(vec![ip("10.200.0.1")].into()),
                ports: vec![port("dns")],
            },
            Record::Import {
                namespace: "db".into(),
                name: "peers".into(),
                kind: ImportKind::Headless,
                ports: vec![],
            },
            Record::McsSlice {
                namespace: "db".into(),
                name: "peers-east".into(),
                service: "peers".into(),
                cluster: "east".into(),
                ports: vec![port("dns")],
                endpoints: vec![(ip("10.2.0.1"), Some("peer-0".into())), (ip("10.2.0.2"), None)],
            },
            Record::Pod {
                namespace: "db".into(),
                name: "pg-0".into(),
                ips: vec![ip("10.1.0.1")],
                running: true,
            },
        ];
        let mut enc = Enc::new(Vec::new());
        records.iter().try_for_each(|r| enc.record(r)).expect("encode");
        let bytes = enc.finish().expect("finish");
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        assert_eq!(fnv(body).to_le_bytes(), sum);
        let mut dec = Dec::new(body, 0);
        let mut back = Vec::new();
        while !dec.done() {
            back.push(dec.record().expect("record"));
        }
        assert_eq!(back, records);
        // every truncation fails to decode or leaves a shorter list
        for cut in 1..body.len() {
            let mut dec = Dec::new(&body[..cut], 0);
            let mut n = 0;
            while !dec.done() {
                if dec.record().is_none() {
                    break;
                }
                n += 1;
            }
            assert!(n < records.len(), "cut at {cut}");
        }
    }
}
