//! The cluster zone's common answers written straight from the snapshot
//! into the reply, with no hickory `Record` or `Name` built on the way:
//!
//! | question                                  | reply                               |
//! |-------------------------------------------|-------------------------------------|
//! | A/AAAA of a ClusterIP or headless Service | its addresses of that family        |
//! | A/AAAA of `<host>.<svc>.<ns>.svc`         | the endpoints named `host`          |
//! | the same, no address of that family       | NODATA, the zone's SOA in authority |
//! | A/AAAA of a missing Service, `<ns>.svc`,  | NXDOMAIN or NODATA, the zone's SOA  |
//! | or a name the grammar does not know       |                                     |
//!
//! Anything else (other types, ExternalName, pods, SRV, PTR,
//! `multicluster` zones, the apex, not yet synced, an NXDOMAIN that falls through) returns
//! `None` and takes the Record path ([`Cluster::answer`]), which decides
//! the same way: `service::find` and `service::named`, [`super::declare::declare`] and
//! [`Cluster::expansion`] serve both, and the bytes come from the same
//! writer ([`crate::query::reply::wire::Encoder`]). `direct/tests.rs` checks that
//! the two paths write the same bytes.

use std::net::IpAddr;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::RecordType;

use super::ctx::{spelled, Cluster};
use super::declare::declare;
use super::found::{exists, Found};
use super::qname::{self, Qname};
use super::service;
use crate::metrics::Plugin;
use crate::query::reply::echo::Echo;
use crate::query::reply::wire::{Encoder, Rec, ANSWER, AUTHORITY};
use crate::query::reply::{Answer, Zone};
use crate::store::{Deps, ServiceKind, Snapshot};

/// How the direct writer writes one reply.
pub struct Direct<'e> {
    pub echo: &'e Echo<'e>,
    /// The reply's size limit (transport and EDNS).
    pub limit: usize,
    /// `loadbalance`: shuffle the addresses (the reply is then not memoized).
    pub shuffle: bool,
}

impl Cluster {
    /// Writes the answer to `query` (class IN) in `zone` into `out`, with
    /// `answer` holding its rcode, flags and what the memo and metrics need
    /// (and its `addrs` used as scratch space). Returns whether the reply
    /// was truncated; `None`: this answer takes the Record path (`answer`
    /// and `out` are then to be cleared).
    pub fn write_direct(
        &self,
        query: &Query,
        zone: &Zone,
        how: &Direct<'_>,
        answer: &mut Answer,
        out: &mut Vec<u8>,
    ) -> Option<bool> {
        let qtype = query.query_type();
        let multicluster = self.cfg.is_multicluster(&zone.name); // answered by `mcs`
        if !matches!(qtype, RecordType::A | RecordType::AAAA) || super::reverse::is_reverse(&zone.name) || multicluster
        {
            return None;
        }
        let snap = self.store.load();
        if !snap.synced {
            return None;
        }
        let qname = query.name();
        let mut buf = [0u8; 255];
        let name = qname::parse(qname, zone.name.num_labels(), &mut buf);
        answer.tags.deps = Deps::NONE;
        declare(&self.cfg, &name, &mut answer.tags.deps);
        let found = self.addresses(&snap, &name, qtype, &mut answer.addrs)?;
        if found != Found::Records && spelled(qname, zone).is_some() {
            return None; // the SOA in the question's spelling: the Record path
        }
        if found == Found::NxDomain && self.cfg.falls_through(qname) {
            return None;
        }
        answer.authoritative = true;
        answer.tags.plugin = Plugin::Kubernetes;
        answer.tags.memoizable = true;
        answer.rcode = match found {
            Found::NxDomain => {
                answer.tags.expansion = self.expansion(qname, zone, &mut answer.tags.deps);
                ResponseCode::NXDomain
            }
            _ => ResponseCode::NoError,
        };
        if how.shuffle && answer.addrs.len() > 1 {
            shuffle(&mut answer.addrs);
            answer.tags.memoizable = false;
        }
        let mut reply = Encoder::start(out, how.echo, 0, how.limit).ok()?;
        let ttl = self.cfg.ttl;
        for addr in &answer.addrs {
            reply.push(ANSWER, &Rec::address(qname, ttl, *addr)).ok()?;
        }
        if found != Found::Records {
            reply.push(AUTHORITY, &Rec::zone_soa(zone, ttl, snap.serial)).ok()?;
        }
        reply.finish(how.echo, answer)
    }

    /// The addresses of `name` of `qtype`'s family into `addrs` (each
    /// once, in the Record path's order): `Records` when there are some,
    /// else NODATA or NXDOMAIN; `None` for a name the direct writer leaves
    /// to the Record path.
    fn addresses(
        &self,
        snap: &Snapshot,
        name: &Qname<'_>,
        qtype: RecordType,
        addrs: &mut Vec<IpAddr>,
    ) -> Option<Found> {
        addrs.clear();
        let found = match *name {
            Qname::Service { ns, svc } => match service::find(snap, &self.cfg, ns, svc) {
                None => Found::NxDomain,
                Some((_, ServiceKind::ExternalName(_))) => return None,
                Some((_, ServiceKind::ClusterIp(ips))) => collect(addrs, ips.iter().copied(), qtype),
                Some((service, ServiceKind::Headless)) => collect(addrs, service.endpoints().map(|e| e.addr), qtype),
            },
            Qname::Endpoint { ns, svc, host } => match service::named(snap, &self.cfg, ns, svc, host) {
                None => Found::NxDomain,
                Some(mut named) => match named.next() {
                    None => Found::NxDomain,
                    Some(first) => collect(addrs, std::iter::once(first).chain(named), qtype),
                },
            },
            Qname::Namespace { ns } => exists(snap.namespace(ns).is_some()),
            Qname::Unknown => Found::NxDomain,
            _ => return None,
        };
        Some(found)
    }
}

/// The addresses of `qtype`'s family, each once: `Records`, or NODATA
/// when there is none.
fn collect(addrs: &mut Vec<IpAddr>, all: impl Iterator<Item = IpAddr>, qtype: RecordType) -> Found {
    let v4 = qtype == RecordType::A;
    for addr in all.filter(|a| a.is_ipv4() == v4) {
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        Found::NoData
    } else {
        Found::Records
    }
}

/// `loadbalance`'s shuffle: the same draws as
/// [`Answer::balance`] makes over the same records.
fn shuffle(addrs: &mut [IpAddr]) {
    crate::query::reply::shuffle(addrs.len(), |k, j| addrs.swap(k, j));
}

#[cfg(test)]
pub(crate) mod tests;
