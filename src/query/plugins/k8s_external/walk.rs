//! The records of one of the plugin's forward zones in transfer order,
//! read from one snapshot a Service at a time (CoreDNS's k8s_external
//! `Transfer`), as the chain offers them `transfer` ([`ExternalSource`]):
//!
//! ```text
//! SOA; NS ns1.<apex>.<zone> + its A/AAAA
//! per Service (namespace, name order)
//!   <svc>.<ns>                   A AAAA | CNAME, SRV
//!   _<port>._<proto>.<svc>.<ns>  SRV            named ports
//!   <host>.<svc>.<ns>            A AAAA SRV     with `headless`: endpoints
//! SOA
//! ```
//!
//! Every name is asked of the plugin's own lookup
//! ([`K8sExternal::answer`]), so a transferred record is what a query for
//! it answers; a name without records adds none.

use std::sync::Arc;

use hickory_proto::rr::{Name, Record, RecordType};

use super::answer::K8sExternal;
use crate::query::plugins::zone_source::{ports, ZoneSource, ZoneWalk};
use crate::query::reply::{prefixed, Answer};
use crate::store::{ServiceId, Snapshot, Store};

/// One forward zone of the plugin, and the cluster store it reads.
pub struct ExternalSource {
    pub zone: Name,
    pub ext: Arc<K8sExternal>,
    pub store: Arc<Store>,
}

impl ZoneSource for ExternalSource {
    fn name(&self) -> &Name {
        &self.zone
    }

    fn serial(&self) -> Option<u32> {
        self.store.synced().then(|| self.store.serial())
    }

    fn walk(&self) -> Option<Box<dyn ZoneWalk + '_>> {
        let walk = ExternalWalk::new(&self.ext, &self.store, &self.zone)?;
        Some(Box::new(walk))
    }
}

/// A walk through one of the plugin's zones.
struct ExternalWalk<'a> {
    ext: &'a K8sExternal,
    store: &'a Store,
    snap: Arc<Snapshot>,
    zone: Name,
    ids: Vec<Arc<ServiceId>>,
    /// 0: the head; 1..=ids: that Service; then the tail.
    step: usize,
    soa: Record,
    scratch: Answer,
}

impl<'a> ExternalWalk<'a> {
    fn new(ext: &'a K8sExternal, store: &'a Store, zone: &Name) -> Option<ExternalWalk<'a>> {
        let snap = arc_swap::Guard::into_inner(store.load());
        if !snap.synced {
            return None;
        }
        let ids = snap.services().iter().map(|s| s.id.clone()).collect();
        let mut scratch = Answer::default();
        ext.answer(zone, RecordType::SOA, store, &mut scratch);
        let soa = scratch.answers.pop().filter(|r| r.record_type() == RecordType::SOA)?;
        Some(ExternalWalk {
            ext,
            store,
            snap,
            zone: zone.clone(),
            ids,
            step: 0,
            soa,
            scratch,
        })
    }

    /// The names (with the types to ask) of Service number `i`.
    fn names(&self, i: usize) -> Vec<(Name, RecordType)> {
        let Some(service) = self
            .ids
            .get(i)
            .and_then(|id| self.snap.service(&id.namespace, &id.name))
        else {
            return Vec::new();
        };
        let base = prefixed(&self.zone, &[&service.id.name, &service.id.namespace]);
        let mut names = vec![
            (base.clone(), RecordType::A),
            (base.clone(), RecordType::AAAA),
            (base.clone(), RecordType::SRV),
        ];
        let slices = service.slices.iter().flat_map(|s| s.ports.iter());
        ports(&mut names, &base, service.ports.iter().chain(slices));
        if ext_headless(service) {
            let mut hosts: Vec<String> = service.endpoints().map(|e| e.host().into_owned()).collect();
            hosts.sort_unstable();
            hosts.dedup();
            for host in hosts {
                let owner = prefixed(&base, &[&host]);
                for qtype in [RecordType::A, RecordType::AAAA, RecordType::SRV] {
                    names.push((owner.clone(), qtype));
                }
            }
        }
        names
    }

    /// Appends what the plugin answers for `owner`/`qtype` that `owner`
    /// owns (a CNAME too, once), never a chased target's.
    fn ask(&mut self, owner: &Name, qtype: RecordType, out: &mut Vec<Record>) {
        self.scratch.clear();
        self.ext.answer(owner, qtype, self.store, &mut self.scratch);
        for r in self.scratch.answers.drain(..) {
            let kind = r.record_type();
            let mine = &r.name == owner && (kind == qtype || kind == RecordType::CNAME);
            if mine && !out.iter().rev().take(64).any(|o| o == &r) {
                out.push(r);
            }
        }
    }
}

/// Whether a Service may answer endpoint names (the plugin judges the
/// rest: a name it does not answer adds nothing).
fn ext_headless(service: &crate::store::Service) -> bool {
    service.endpoints().next().is_some()
}

impl ZoneWalk for ExternalWalk<'_> {
    fn serial(&self) -> u32 {
        self.snap.serial
    }

    fn soa(&self) -> Record {
        self.soa.clone()
    }

    fn current(&self, held: u32) -> bool {
        // RFC 1982: the SOA alone unless the zone's serial is newer.
        !crate::zonefile::newer(self.snap.serial, held)
    }

    fn next(&mut self, out: &mut Vec<Record>) -> bool {
        let step = self.step;
        self.step += 1;
        match step {
            0 => {
                out.push(self.soa());
                let zone = self.zone.clone();
                self.ask(&zone, RecordType::NS, out);
                let apex = self.ext.cfg.apex.clone().append_domain(&zone).unwrap_or(zone);
                let ns_host = prefixed(&apex, &["ns1"]);
                for qtype in [RecordType::A, RecordType::AAAA] {
                    self.ask(&ns_host, qtype, out);
                }
            }
            i if i <= self.ids.len() => {
                for (name, qtype) in self.names(i - 1) {
                    self.ask(&name, qtype, out);
                }
            }
            i if i == self.ids.len() + 1 => out.push(self.soa()),
            _ => return false,
        }
        true
    }
}
