//! The zone's own names: the apex (SOA, NS), `dns-version` (TXT) and the
//! name server host `ns.dns.<zone>`.

use std::net::IpAddr;

use hickory_proto::rr::RecordType;

use super::ctx::Ctx;
use super::found::Found;
use crate::query::reply;
use crate::store::ServiceKind;

/// The schema version of the Kubernetes DNS specification we implement.
pub const SCHEMA_VERSION: &str = "1.1.0";

/// The TTL of the `dns-version` TXT record: fixed, as CoreDNS answers it
/// (the schema version changes with the server, not with the cluster).
pub const DNS_VERSION_TTL: u32 = 28800;

/// The Service whose cluster IPs are the name server's addresses.
pub(super) const DNS_SERVICE: (&str, &str) = ("kube-system", "kube-dns");

pub fn apex(c: &mut Ctx<'_, '_>) -> Found {
    let ttl = c.cfg.ttl;
    match c.qtype {
        RecordType::SOA => c.out.answers.push(reply::soa(c.zone, ttl, c.snap.serial)),
        RecordType::NS => {
            let host = c.zone.ns_host.clone();
            c.out.answers.push(reply::ns(&c.zone.name, ttl, host.clone()));
            for ip in ns_addresses(c) {
                c.out.additional.extend(reply::address(&host, ttl, ip, RecordType::ANY));
            }
        }
        _ => return Found::NoData,
    }
    Found::Records
}

pub fn dns_version(c: &mut Ctx<'_, '_>) -> Found {
    if c.qtype != RecordType::TXT {
        return Found::NoData;
    }
    let owner = &c.owner;
    c.out.answers.push(reply::txt(owner, DNS_VERSION_TTL, SCHEMA_VERSION));
    Found::Records
}

pub fn ns_host(c: &mut Ctx<'_, '_>) -> Found {
    let owner = &c.owner;
    for ip in ns_addresses(c) {
        c.out.answers.extend(reply::address(owner, c.cfg.ttl, ip, c.qtype));
    }
    if c.out.answers.is_empty() {
        Found::NoData
    } else {
        Found::Records
    }
}

fn ns_addresses(c: &Ctx<'_, '_>) -> Vec<IpAddr> {
    match c
        .snap
        .service(DNS_SERVICE.0, DNS_SERVICE.1)
        .and_then(|s| s.kind.as_ref())
    {
        Some(ServiceKind::ClusterIp(ips)) => ips.to_vec(),
        _ => Vec::new(),
    }
}
