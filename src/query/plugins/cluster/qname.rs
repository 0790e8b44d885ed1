//! The query-name grammar of the cluster zone, parsed once per query.
//!
//! Labels are read right to left after the zone has been removed; every
//! comparison is case-insensitive (the name is lower-cased first).
//!
//! ```text
//! <zone>                                        Apex            SOA, NS
//! dns-version.<zone>                            DnsVersion      TXT "1.1.0"
//! ns.dns.<zone>                                 NsHost          A/AAAA of kube-system/kube-dns
//! dns.<zone> | svc.<zone> | pod.<zone>          Ent             empty non-terminals
//! <ns>.svc.<zone>                               Namespace
//! <svc>.<ns>.svc.<zone>                         Service         A/AAAA/SRV/CNAME
//! _<proto>.<svc>.<ns>.svc.<zone>                ProtoEnt        empty non-terminal
//! <host>.<svc>.<ns>.svc.<zone>                  Endpoint        A/AAAA of one endpoint
//! _<port>._<proto>.<svc>.<ns>.svc.<zone>        Port            SRV of a named port
//! <host>.<cluster>.<svc>.<ns>.svc.<zone>        ClusterEndpoint multicluster zones only (else NXDOMAIN)
//! <tz>.pin|prefer._zone.<svc>.<ns>.svc.<zone>   Zonal           `zonal` only: endpoints in topology zone <tz>
//!                                                               (<tz>: every label left, joined; [`zonal`])
//! <ns>.pod.<zone>                               PodNamespace
//! <dashed-ip>.<ns>.pod.<zone>                   Pod             A/AAAA
//! anything else                                 Unknown         NXDOMAIN
//! ```

use hickory_proto::rr::Name;

/// A parsed cluster-zone name; strings borrow the lower-cased labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Qname<'a> {
    Apex,
    DnsVersion,
    NsHost,
    Ent,
    Namespace {
        ns: &'a str,
    },
    Service {
        ns: &'a str,
        svc: &'a str,
    },
    ProtoEnt {
        ns: &'a str,
        svc: &'a str,
        proto: &'a str,
    },
    Endpoint {
        ns: &'a str,
        svc: &'a str,
        host: &'a str,
    },
    Port {
        ns: &'a str,
        svc: &'a str,
        port: &'a str,
        proto: &'a str,
    },
    /// `<host>.<cluster>.<svc>.<ns>.svc`: an endpoint of an imported
    /// service in one cluster (KEP-1645; `multicluster` zones only).
    ClusterEndpoint {
        ns: &'a str,
        svc: &'a str,
        cluster: &'a str,
        host: &'a str,
    },
    /// `<topology-zone>.pin|prefer._zone.<svc>.<ns>.svc` (the option
    /// `zonal`, not in multicluster zones; NXDOMAIN otherwise).
    Zonal {
        ns: &'a str,
        svc: &'a str,
        /// The topology zone, its labels joined with dots.
        zone: &'a str,
        /// `prefer` (every endpoint when none is in the zone), else `pin`.
        prefer: bool,
    },
    PodNamespace {
        ns: &'a str,
    },
    Pod {
        ns: &'a str,
        ip: &'a str,
    },
    Unknown,
}

/// Parses `name` relative to its last `zone_labels` labels (the zone),
/// lower-casing the labels before them into `buf`, which the result borrows.
pub fn parse<'a>(name: &Name, zone_labels: u8, buf: &'a mut [u8; 255]) -> Qname<'a> {
    let rel = name.num_labels().saturating_sub(zone_labels) as usize;
    if rel > 5 {
        return zonal(name, rel, buf);
    }
    let mut ends = [0usize; 5];
    let mut len = 0;
    for (i, label) in name.iter().take(rel).enumerate() {
        let Some(dst) = buf.get_mut(len..len + label.len()) else {
            return Qname::Unknown;
        };
        dst.copy_from_slice(label);
        dst.make_ascii_lowercase();
        len += label.len();
        ends[i] = len;
    }
    let buf: &'a [u8] = buf;
    let mut labels: [&str; 5] = [""; 5];
    let mut start = 0;
    for (slot, end) in labels.iter_mut().zip(&ends[..rel]) {
        match std::str::from_utf8(&buf[start..*end]) {
            Ok(s) => *slot = s,
            Err(_) => return Qname::Unknown,
        }
        start = *end;
    }
    let l = &labels[..rel];
    match l {
        [] => Qname::Apex,
        ["dns-version"] => Qname::DnsVersion,
        ["ns", "dns"] => Qname::NsHost,
        ["dns" | "svc" | "pod"] => Qname::Ent,
        [ns, "svc"] => Qname::Namespace { ns },
        [svc, ns, "svc"] => Qname::Service { ns, svc },
        [first, svc, ns, "svc"] => match first.strip_prefix('_') {
            Some(proto) => Qname::ProtoEnt { ns, svc, proto },
            None => Qname::Endpoint { ns, svc, host: first },
        },
        [port, proto, svc, ns, "svc"] => match (port.strip_prefix('_'), proto.strip_prefix('_')) {
            (Some(port), Some(proto)) => Qname::Port { ns, svc, port, proto },
            (None, None) => Qname::ClusterEndpoint {
                ns,
                svc,
                cluster: proto,
                host: port,
            },
            _ => Qname::Unknown,
        },
        [ns, "pod"] => Qname::PodNamespace { ns },
        [ip, ns, "pod"] => Qname::Pod { ns, ip },
        _ => Qname::Unknown,
    }
}

/// The label anchoring a zonal name, right of the directive.
const ANCHOR: &str = "_zone";

/// Parses a name of `rel` (> 5) labels below the zone: a [`Qname::Zonal`]
/// when it has the shape, else [`Qname::Unknown`]. The labels are
/// lower-cased into `buf`, the topology zone's with dots between them.
fn zonal<'a>(name: &Name, rel: usize, buf: &'a mut [u8; 255]) -> Qname<'a> {
    let zone_labels = rel - 5;
    // Where the topology zone ends and each of the five labels after it.
    let mut ends = [0usize; 6];
    let mut len = 0;
    for (i, label) in name.iter().take(rel).enumerate() {
        if i > 0 && i < zone_labels {
            let Some(dot) = buf.get_mut(len) else {
                return Qname::Unknown;
            };
            *dot = b'.';
            len += 1;
        }
        let Some(dst) = buf.get_mut(len..len + label.len()) else {
            return Qname::Unknown;
        };
        dst.copy_from_slice(label);
        dst.make_ascii_lowercase();
        len += label.len();
        if let Some(end) = (i + 1).checked_sub(zone_labels).and_then(|k| ends.get_mut(k)) {
            *end = len;
        }
    }
    let buf: &'a [u8] = buf;
    let mut parts = [""; 6];
    let mut start = 0;
    for (part, end) in parts.iter_mut().zip(ends) {
        match buf.get(start..end).map(std::str::from_utf8) {
            Some(Ok(text)) => *part = text,
            _ => return Qname::Unknown,
        }
        start = end;
    }
    match parts {
        [zone, directive @ ("pin" | "prefer"), ANCHOR, svc, ns, "svc"] => Qname::Zonal {
            ns,
            svc,
            zone,
            prefer: directive == "prefer",
        },
        _ => Qname::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> String {
        let mut buf = [0u8; 255];
        format!("{:?}", parse(&Name::from_ascii(name).expect("name"), 2, &mut buf))
    }

    #[test]
    fn grammar() {
        assert_eq!(p("cluster.local."), "Apex");
        assert_eq!(p("dns-version.cluster.local."), "DnsVersion");
        assert_eq!(p("ns.dns.cluster.local."), "NsHost");
        assert_eq!(p("svc.cluster.local."), "Ent");
        assert_eq!(p("Shop.svc.cluster.local."), r#"Namespace { ns: "shop" }"#);
        assert_eq!(
            p("web.shop.svc.cluster.local."),
            r#"Service { ns: "shop", svc: "web" }"#
        );
        assert_eq!(
            p("_tcp.web.shop.svc.cluster.local."),
            r#"ProtoEnt { ns: "shop", svc: "web", proto: "tcp" }"#
        );
        assert_eq!(
            p("pg-0.pg.db.svc.cluster.local."),
            r#"Endpoint { ns: "db", svc: "pg", host: "pg-0" }"#
        );
        assert_eq!(
            p("_HTTP._tcp.web.shop.svc.cluster.local."),
            r#"Port { ns: "shop", svc: "web", port: "http", proto: "tcp" }"#
        );
        assert_eq!(p("x._tcp.web.shop.svc.cluster.local."), "Unknown");
        assert_eq!(
            p("pg-0.east.pg.db.svc.clusterset.local."),
            r#"ClusterEndpoint { ns: "db", svc: "pg", cluster: "east", host: "pg-0" }"#
        );
        assert_eq!(p("shop.pod.cluster.local."), r#"PodNamespace { ns: "shop" }"#);
        assert_eq!(
            p("10-1-2-3.shop.pod.cluster.local."),
            r#"Pod { ns: "shop", ip: "10-1-2-3" }"#
        );
        // Five labels under svc parse as a multicluster endpoint name; the
        // cluster zone answers it NXDOMAIN as it did when it was Unknown.
        assert_eq!(
            p("www.example.com.default.svc.cluster.local."),
            r#"ClusterEndpoint { ns: "default", svc: "com", cluster: "example", host: "www" }"#
        );
        assert_eq!(p("a.b.c.d.e.f.cluster.local."), "Unknown");
        assert_eq!(
            p("US-West-2a.pin._zone.db.prod.svc.cluster.local."),
            r#"Zonal { ns: "prod", svc: "db", zone: "us-west-2a", prefer: false }"#
        );
        assert_eq!(
            p("corp.example.com.prefer._zone.db.prod.svc.cluster.local."),
            r#"Zonal { ns: "prod", svc: "db", zone: "corp.example.com", prefer: true }"#
        );
        assert_eq!(p("a.florp._zone.db.prod.svc.cluster.local."), "Unknown");
        assert_eq!(p("a.pin.zone.db.prod.svc.cluster.local."), "Unknown");
        assert_eq!(p("a.pin._zone.db.prod.pod.cluster.local."), "Unknown");
        assert_eq!(p("web.shop.cluster.local."), "Unknown");
    }
}
