//! The records of a name, read from the mirror as CoreDNS's etcd plugin
//! reads etcd (its `Records` and `backend_lookup.go`): a name's key and
//! every key below it (or, with none below, the key alone), filtered by
//! wildcard labels and `group`; A, AAAA and TXT follow a name-valued
//! `host` as a CNAME, chased in the zone (at most 10 deep, never to a
//! name at or below the one asked) or handed to the router when outside.
//! SRV, MX, NS and SOA are in [`targets`](super::targets).

use std::collections::HashSet;
use std::net::IpAddr;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::rr::rdata::{A, AAAA, CNAME, PTR, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::mirror::{Leases, Records, Stored};
use super::service::{self, fqdn, Found, HostKind, Service};

/// A service without a TTL is answered with this one.
pub const DEFAULT_TTL: u32 = 300;
/// A service without a priority has this one.
const DEFAULT_PRIORITY: i64 = 10;
/// The longest CNAME chain followed in the zone.
const MAX_CHAIN: usize = 10;

/// Why a lookup found nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// No key for the name: NXDOMAIN (or `fallthrough`).
    NotFound,
    /// A key's value is not a record: SERVFAIL.
    Failed(String),
}

/// One question's view of the mirror: its records, the prefix and the
/// zone that matched (lower case, with its final dot).
pub struct Lookup<'a> {
    pub records: &'a Records,
    pub leases: &'a Leases,
    /// `min-lease-ttl` and `max-lease-ttl`.
    pub bounds: (u32, u32),
    pub prefix: &'a str,
    pub zone: &'a str,
}

/// A record's TTL as CoreDNS's `TTL`: the smaller of its own `ttl` and
/// its lease's time left (held within `bounds`), whichever is set; 300
/// when neither is.
pub fn ttl(own: u32, lease_left: u64, (min, max): (u32, u32)) -> u32 {
    let lease = match lease_left {
        0 => 0,
        left => left.clamp(u64::from(min), u64::from(max.max(min))) as u32,
    };
    match (own, lease) {
        (0, 0) => DEFAULT_TTL,
        (own, 0) => own,
        (0, lease) => lease,
        (own, lease) => own.min(lease),
    }
}

/// A name as the lookups compare it: lower case, with its final dot.
pub fn lower(name: &Name) -> String {
    name.to_lowercase().to_ascii()
}

/// Whether `child` is `parent` or below it (both lower case, final dot).
pub fn within(child: &str, parent: &str) -> bool {
    parent == "." || child == parent || child.ends_with(&format!(".{parent}"))
}

/// A name from text, `None` when it is not one.
pub fn name(text: &str) -> Option<Name> {
    Name::from_ascii(fqdn(text)).ok()
}

impl Lookup<'_> {
    /// The keys of `path`: every key below it, else the key itself.
    fn get(&self, path: &str, recursive: bool) -> Vec<(Arc<str>, &Stored)> {
        let exact = |p: &str| {
            let key = self.records.get_key_value(p);
            key.map(|(k, v)| (k.clone(), v.as_ref()))
                .into_iter()
                .collect::<Vec<_>>()
        };
        if !recursive {
            return exact(path);
        }
        let below = if path.ends_with('/') {
            path.to_string()
        } else {
            format!("{path}/")
        };
        let bounds: (Bound<&str>, Bound<&str>) = (Bound::Included(&below), Bound::Unbounded);
        let found: Vec<_> = self
            .records
            .range::<_, str>(bounds)
            .take_while(|(k, _)| k.starts_with(below.as_str()))
            .map(|(k, v)| (k.clone(), v.as_ref()))
            .collect();
        if found.is_empty() {
            exact(below.trim_end_matches('/'))
        } else {
            found
        }
    }

    /// The services of `name` for a question of `qtype` (CoreDNS's
    /// `Services`: `Records` then `Group`); `exact` reads its key alone.
    pub fn services(&self, name: &str, exact: bool, qtype: RecordType) -> Result<Vec<Found>, Miss> {
        let (path, star) = service::wildcard_path(name, self.prefix);
        let nodes = self.get(&path, !exact);
        if nodes.is_empty() {
            return Err(Miss::NotFound);
        }
        let full = service::path(name, self.prefix);
        let parts: Vec<&str> = full.split('/').collect();
        let mut found = Vec::new();
        let now = Instant::now();
        for (key, stored) in nodes {
            if star && !service::matches_wildcard(&key, &parts) {
                continue;
            }
            let mut s = stored.entry.clone().map_err(|e| Miss::Failed(format!("{key}: {e}")))?;
            let left = self
                .leases
                .get(&stored.lease)
                .map_or(0, |end| end.saturating_duration_since(now).as_secs());
            s.ttl = ttl(s.ttl, left, self.bounds);
            if s.priority == 0 {
                s.priority = DEFAULT_PRIORITY;
            }
            if (qtype == RecordType::TXT && !s.text.is_empty()) || !s.host.is_empty() {
                found.push(Found { key, service: s });
            }
        }
        Ok(service::group(found))
    }

    /// The services answering A or AAAA for `name`: for the zone itself
    /// those under `apex.dns.ZONE` when there are any (CoreDNS's
    /// `checkForApex`).
    fn apex_or(&self, name: &str, qtype: RecordType) -> Result<Vec<Found>, Miss> {
        if name != self.zone {
            return self.services(name, false, qtype);
        }
        match self.services(&format!("apex.dns.{}", self.zone.trim_start_matches('.')), false, qtype) {
            Err(Miss::NotFound) => self.services(name, false, qtype),
            other => other,
        }
    }

    /// The A (or AAAA, or TXT) records of `owner`, after the CNAMEs of
    /// `chain`; a CNAME to a name outside the zone sets `outside` for the
    /// router to chase.
    pub fn follow(
        &self,
        owner: &Name,
        qtype: RecordType,
        chain: &[Record],
        outside: &mut Option<Name>,
    ) -> Result<Vec<Record>, Miss> {
        let asked = lower(owner);
        let found = match qtype {
            RecordType::TXT => self.services(&asked, false, qtype)?,
            _ => self.apex_or(&asked, qtype)?,
        };
        let (mut records, mut seen) = (Vec::new(), HashSet::new());
        for f in found {
            let s = &f.service;
            match (s.kind(), qtype) {
                (HostKind::Name, _) => records.extend(self.alias(owner, s, qtype, chain, outside)),
                (HostKind::Addr(IpAddr::V4(ip)), RecordType::A) if seen.insert(s.host.clone()) => {
                    records.push(Record::from_rdata(owner.clone(), s.ttl, RData::A(A(ip))));
                }
                (HostKind::Addr(IpAddr::V6(ip)), RecordType::AAAA) if seen.insert(s.host.clone()) => {
                    records.push(Record::from_rdata(owner.clone(), s.ttl, RData::AAAA(AAAA(ip))));
                }
                (HostKind::Text, RecordType::TXT) if seen.insert(s.text.clone()) => {
                    let pieces = service::split255(&s.text);
                    let txt = TXT::from_bytes(pieces.iter().map(Vec::as_slice).collect());
                    records.push(Record::from_rdata(owner.clone(), s.ttl, RData::TXT(txt)));
                }
                _ => {}
            }
        }
        Ok(records)
    }

    /// `owner CNAME host` and what follows it: the target's records when
    /// in the zone (nothing when it has none), the CNAME alone for the
    /// router to chase when outside; nothing for a loop.
    fn alias(
        &self,
        owner: &Name,
        s: &Service,
        qtype: RecordType,
        chain: &[Record],
        outside: &mut Option<Name>,
    ) -> Vec<Record> {
        let Some(target) = name(&s.host) else { return Vec::new() };
        let to = lower(&target);
        let looped = chain
            .iter()
            .any(|r| matches!(&r.data, RData::CNAME(c) if c.0 == target));
        if within(&to, &lower(owner)) || chain.len() > MAX_CHAIN || looped {
            return Vec::new();
        }
        let cname = Record::from_rdata(owner.clone(), s.ttl, RData::CNAME(CNAME(target.clone())));
        if !within(&to, self.zone) {
            outside.get_or_insert(target);
            return vec![cname];
        }
        let mut longer = chain.to_vec();
        longer.push(cname.clone());
        match self.follow(&target, qtype, &longer, outside) {
            Ok(next) if !next.is_empty() => std::iter::once(cname).chain(next).collect(),
            _ => Vec::new(),
        }
    }

    /// CNAME: the first service of the name's own key, when its host is a name.
    pub fn cname(&self, owner: &Name) -> Result<Vec<Record>, Miss> {
        let found = self.services(&lower(owner), true, RecordType::CNAME)?;
        Ok(found
            .first()
            .filter(|f| f.service.host.parse::<IpAddr>().is_err())
            .and_then(|f| Some((f.service.ttl, name(&f.service.host)?)))
            .map(|(ttl, t)| Record::from_rdata(owner.clone(), ttl, RData::CNAME(CNAME(t))))
            .into_iter()
            .collect())
    }

    /// PTR: the name-valued hosts of the name's own key.
    pub fn ptr(&self, owner: &Name) -> Result<Vec<Record>, Miss> {
        let found = self.services(&lower(owner), true, RecordType::PTR)?;
        let mut seen = HashSet::new();
        Ok(found
            .iter()
            .filter(|f| f.service.host.parse::<IpAddr>().is_err() && seen.insert(f.service.host.clone()))
            .filter_map(|f| Some((f.service.ttl, name(&f.service.host)?)))
            .map(|(ttl, t)| Record::from_rdata(owner.clone(), ttl, RData::PTR(PTR(t))))
            .collect())
    }
}
