//! Reverse names (`in-addr.arpa`, `ip6.arpa`): PTR records for cluster IPs
//! and endpoint addresses.
//!
//! ```text
//! <d>.<c>.<b>.<a>.in-addr.arpa         → PTR <svc>.<ns>.svc.<zone> | <host>.<svc>.<ns>.svc.<zone>
//! <32 nibbles, reversed>.ip6.arpa      → the same for IPv6
//!   (else, with a `multicluster` zone)  → PTR <svc>.<ns>.svc.<mczone> | <host>.<cluster>.<svc>.<ns>.svc.<mczone>
//! anything else in the reverse zone    → NXDOMAIN (or fallthrough)
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hickory_proto::rr::{Name, RecordType};

use super::apex;
use super::ctx::Ctx;
use super::found::Found;
use crate::query::reply::{self, prefixed};
use crate::store::records::dashed;
use crate::store::{PtrHost, PtrTarget};

/// Whether `zone` is (under) `in-addr.arpa.` or `ip6.arpa.`.
pub fn is_reverse(zone: &Name) -> bool {
    let mut labels = zone.iter().rev();
    match (labels.next(), labels.next()) {
        (Some(arpa), Some(kind)) => {
            arpa.eq_ignore_ascii_case(b"arpa")
                && (kind.eq_ignore_ascii_case(b"in-addr") || kind.eq_ignore_ascii_case(b"ip6"))
        }
        _ => false,
    }
}

pub fn answer(c: &mut Ctx<'_, '_>) -> Found {
    if c.owner.num_labels() == c.zone.name.num_labels() {
        c.out.tags.deps = crate::store::Deps::EVERYTHING;
        return apex::apex(c);
    }
    let Some(addr) = parse(&c.owner) else {
        return Found::NxDomain;
    };
    // The writer marks an address's PTR key when its targets change and
    // when a service they name comes or goes.
    c.out.tags.deps.add(crate::store::Dep::ptr(addr));
    let snap = c.snap;
    let live = |t: &PtrTarget| snap.service(&t.service.namespace, &t.service.name).is_some();
    let targets: Vec<PtrTarget> = snap.reverse(addr).filter(live).collect();
    if targets.is_empty() {
        // Only an address the cluster does not name gets its import's names.
        return super::mcs::reverse(c, addr);
    }
    if c.qtype != RecordType::PTR {
        return Found::NoData;
    }
    let Some(zone) = c.zones.iter().map(|z| &z.name).find(|z| !is_reverse(z)) else {
        return Found::NoData;
    };
    let owner = &c.owner;
    for t in targets {
        let base = prefixed(zone, &[&t.service.name, &t.service.namespace, "svc"]);
        let target = match t.host() {
            PtrHost::Named(host) => prefixed(&base, &[&host]),
            PtrHost::Dashed => prefixed(&base, &[&dashed(addr)]),
            PtrHost::Service => base,
        };
        // One address listed by two EndpointSlices of a Service (a
        // migration between slices) has two index entries: one record.
        let record = reply::ptr(owner, c.cfg.ttl, target);
        if !c.out.answers.contains(&record) {
            c.out.answers.push(record);
        }
    }
    Found::Records
}

/// The address a full reverse name stands for.
pub fn parse(name: &Name) -> Option<IpAddr> {
    let labels: Vec<&[u8]> = name.iter().collect();
    let text = |l: &[u8]| std::str::from_utf8(l).ok().map(str::to_ascii_lowercase);
    match labels.as_slice() {
        [d, c, b, a, inaddr, arpa] if text(inaddr)? == "in-addr" && text(arpa)? == "arpa" => {
            let octet = |l: &[u8]| text(l)?.parse::<u8>().ok().filter(|_| l.len() == 1 || l[0] != b'0');
            Some(IpAddr::V4(Ipv4Addr::new(octet(a)?, octet(b)?, octet(c)?, octet(d)?)))
        }
        [nibbles @ .., ip6, arpa] if nibbles.len() == 32 && text(ip6)? == "ip6" && text(arpa)? == "arpa" => {
            let mut value: u128 = 0;
            for n in nibbles.iter().rev() {
                let [digit] = n else { return None };
                value = (value << 4) | u128::from((*digit as char).to_digit(16)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(value)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<IpAddr> {
        parse(&Name::from_ascii(s).expect("name"))
    }

    #[test]
    fn parses_full_reverse_names_only() {
        assert_eq!(p("1.0.96.10.in-addr.arpa."), "10.96.0.1".parse().ok());
        assert_eq!(p("1.0.96.10.IN-ADDR.ARPA."), "10.96.0.1".parse().ok());
        assert_eq!(p("0.96.10.in-addr.arpa."), None);
        assert_eq!(p("01.0.96.10.in-addr.arpa."), None);
        assert_eq!(p("256.0.96.10.in-addr.arpa."), None);
        let v6 = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.";
        assert_eq!(p(v6), "fd00::1".parse().ok());
        assert_eq!(p("0.d.f.ip6.arpa."), None);
    }
}
