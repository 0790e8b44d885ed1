//! `autopath`: a client pod's search walk done here, as CoreDNS's autopath
//! does it. The asked name first, then each later name of the pod's search
//! path in turn, each judged by the guard and sent through the plugins of the
//! block that serves it; the first that is not NXDOMAIN (nor a SERVFAIL made here) answers behind a
//! CNAME from the asked name. A later name that goes upstream leaves the
//! rest of the walk ([`Rest`]) with the forwarded query: when that name
//! comes back NXDOMAIN the forwarding task walks on through the router
//! that began the walk ([`WalkOn`]), which answers, forwards the next
//! name, or, with every name NXDOMAIN, answers the asked name as it is.
//! Each step consumes a name, so a walk has at most the search path's
//! length + 1 steps.

use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::Name;

use super::asker::Asker;
use super::block::Block;
pub use super::routed::Rest;
use super::routed::{Onward, Routed};
use super::router::Router;
use crate::metrics::Plugin;
use crate::query::defer::{Job, WalkOn, Walked};
use crate::query::plugins::{cluster, rewrite};
use crate::query::reply::Answer;
use crate::query::settle::{self, Chase, ChaseKind};

impl Router {
    /// `autopath`: for a client pod in namespace `ns` asking
    /// `<base>.<ns>.svc.<zone>` (the first name of its search walk), walks
    /// the rest of the pod's search path here — `<base>.svc.<zone>`,
    /// `<base>.<zone>`, the extra search domains, then `<base>` itself — and
    /// answers the first name that is not NXDOMAIN under a CNAME from the
    /// asked name, so the walk costs the client one query. `None`: not
    /// applicable (no single Running pod for the client, or another name).
    pub(super) fn autopath<'a>(
        &'a self,
        block: &'a Block,
        query: &Query,
        asker: Asker,
        out: &mut Answer,
    ) -> Option<Routed<'a>> {
        let path = search_path(block, query, asker)?;
        let qname = query.name();
        let keep = usize::from(qname.num_labels() - path.first.num_labels());
        let base = Name::from_labels(qname.iter().take(keep)).ok()?;
        // The asked name first: anything but NXDOMAIN or SERVFAIL is its own answer.
        let asked = self.through(block, query, asker, out);
        out.tags.memoizable = false; // depends on the client from here on
        let asked = match asked {
            // it goes upstream: its NXDOMAIN walks on there, and is the
            // answer when every later name is NXDOMAIN too
            Routed::Forward(mut on) if on.left.chase.is_none() && on.walk.is_none() => {
                let mut rest = self.rest(block, base, path.walk.into_iter(), query, asker);
                rest.asked_went = true;
                on.walk = Some(Box::new(rest));
                return Some(Routed::Forward(on));
            }
            asked => asked,
        };
        if !matches!(asked, Routed::Done) || !walks_on(out.rcode) {
            return Some(asked);
        }
        if let Some(routed) = self.walk(block, &base, path.walk.into_iter(), query, asker, out) {
            return Some(routed);
        }
        // Every name of the walk failed: the asked one's answer stands.
        let routed = self.through(block, query, asker, out);
        out.tags.memoizable = false;
        Some(routed)
    }

    /// Asks `base` under each of `domains` in turn; the first that is not
    /// NXDOMAIN answers `query` under a CNAME from the asked name. Each
    /// name is judged by the guard first (coredns#8290): a denied one ends the
    /// walk with the denial, as in CoreDNS. A forwarded name takes the
    /// domains left with it (its NXDOMAIN walks on, [`Walking`]). `None`:
    /// all were NXDOMAIN.
    fn walk<'a>(
        &'a self,
        entry: &Block,
        base: &Name,
        mut domains: std::vec::IntoIter<Name>,
        query: &Query,
        asker: Asker,
        out: &mut Answer,
    ) -> Option<Routed<'a>> {
        let mut found = Answer::default();
        while let Some(domain) = domains.next() {
            let Ok(name) = base.clone().append_domain(&domain) else {
                continue;
            };
            let candidate = Query::query(name, query.query_type());
            let Some((home, _)) = self.home(&candidate, &asker) else {
                continue;
            };
            found.clear();
            match self.guarded(entry, home, &candidate, asker, &mut found) {
                Routed::Drop => return Some(Routed::Drop),
                Routed::Done if walks_on(found.rcode) => continue,
                Routed::Done => {
                    answered(out, &mut found, query.name());
                    return Some(Routed::Done);
                }
                Routed::Forward(on) => {
                    let rest = self.rest(entry, base.clone(), domains, query, asker);
                    let mut onward = Onward::to(on.forwarding, on.balance);
                    onward.left.chase = Some((candidate, ChaseKind::Autopath));
                    onward.walk = Some(Box::new(rest));
                    return Some(Routed::Forward(onward));
                }
            }
        }
        None
    }
}

impl Router {
    /// The walk's rest after a name that goes upstream.
    fn rest(&self, entry: &Block, base: Name, domains: std::vec::IntoIter<Name>, query: &Query, asker: Asker) -> Rest {
        Rest {
            entry: self.blocks.iter().position(|b| std::ptr::eq(b, entry)),
            base,
            domains,
            asked: query.clone(),
            asker,
            asked_went: false,
            first: None,
        }
    }
}

/// Whether a name answered here with `rcode` lets the walk go on: NXDOMAIN,
/// and SERVFAIL, which a CoreDNS plugin returns without writing it (`hosts`
/// without an entry, a cluster not synced yet), so CoreDNS's autopath walks
/// on past it (`plugin.ClientWrite`). A written denial (`acl`'s REFUSED)
/// ends the walk.
fn walks_on(rcode: ResponseCode) -> bool {
    matches!(rcode, ResponseCode::NXDomain | ResponseCode::ServFail)
}

/// `found`, a later name's answer, made `out`, the asked `qname`'s: a
/// denial as it is, anything else behind the CNAME from `qname`.
fn answered(out: &mut Answer, found: &mut Answer, qname: &Name) {
    let (log, zone) = (out.tags.log, out.tags.zone);
    std::mem::swap(out, found);
    (out.tags.log, out.tags.zone, out.tags.memoizable) = (log, zone, false);
    if !out.tags.denied {
        settle::cnamer(qname, out);
        (out.tags.plugin, out.tags.autopath) = (Plugin::Autopath, true);
    }
}

impl Rest {
    /// The rest of the walk, to go on through `router` (the one that began it).
    pub fn with(self: Box<Self>, router: Arc<Router>) -> Box<dyn WalkOn> {
        Box::new(Walking { router, rest: self })
    }
}

/// A walk's rest with the router it goes on through.
struct Walking {
    router: Arc<Router>,
    rest: Box<Rest>,
}

impl std::fmt::Debug for Walking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walking")
            .field("rest", &self.rest)
            .finish_non_exhaustive()
    }
}

impl WalkOn for Walking {
    fn walk_on(self: Box<Self>, mut job: Job, answer: &mut Answer) -> Walked {
        let Walking { router, rest } = *self;
        let Some(entry) = rest.entry.and_then(|i| router.blocks.get(i)) else {
            return Walked::Reply(job);
        };
        let Rest {
            base,
            domains,
            asked,
            asker,
            asked_went,
            mut first,
            ..
        } = *rest;
        if asked_went && first.is_none() {
            first = Some(Box::new(std::mem::take(answer))); // the asked name's NXDOMAIN
        }
        let mut out = Answer::default();
        out.tags.log = job.log;
        match router.walk(entry, &base, domains, &asked, asker, &mut out) {
            Some(Routed::Forward(mut onward)) => {
                if let Some(rest) = onward.walk.as_mut() {
                    rest.first = first;
                }
                hand_on(&router, job, onward);
                return Walked::HandedOn;
            }
            Some(Routed::Drop) => return Walked::Dropped(job),
            Some(Routed::Done) => {}
            // every name is NXDOMAIN: the asked one's answer (its SOA), as
            // it came from upstream or made here again
            None => match first {
                Some(first) => out = *first,
                None => {
                    if !matches!(router.through(entry, &asked, asker, &mut out), Routed::Done) {
                        return Walked::Reply(job);
                    }
                }
            },
        }
        // `out` is the asked name's answer already, and the reply echoes
        // the asked question, not the name forwarded last
        job.then.chase = None;
        job.query = asked;
        std::mem::swap(answer, &mut out);
        Walked::Reply(job)
    }
}

/// Sends `job` on as the later name of its walk that `onward` forwards:
/// the same client, sink and continuation; that name asked upstream.
fn hand_on(router: &Arc<Router>, mut job: Job, onward: Onward<'_>) {
    let Onward {
        forwarding,
        balance,
        left,
        walk,
    } = onward;
    if job.then.chase.is_none() {
        // the asked name went first: later names' answers go under it
        job.then.chase = Some(Chase {
            asked: job.query.clone(),
            prefix: Vec::new(),
            kind: ChaseKind::Autopath,
        });
    }
    if let Some((candidate, _)) = left.chase {
        // the request that went (EDNS as the router made it), asking this name
        job.request = rewrite::upstream_request(&job.request, &candidate, (None, None), job.peer, None, job.transport);
        job.query = candidate;
    }
    job.then.loadbalance = balance.filter(|lb| lb.touches(job.query.query_type())).cloned();
    job.walk = walk.map(|rest| rest.with(router.clone()));
    forwarding.submit(job);
}

/// A client's search path, as `autopath` walks it.
struct SearchPath {
    /// The first search domain: the asked name is under it.
    first: Name,
    /// The domains still to walk, the root last.
    walk: Vec<Name>,
}

/// The client's search path, when `autopath` applies to `query` in
/// `block`. A client that is a Running pod (kubernetes `pods verified`)
/// asking under its `<ns>.svc.<zone>`: the pod's path, `svc.<zone>
/// <zone>`, then a RESOLV-CONF's domains (what CoreDNS's kubernetes adds
/// from its host's resolv.conf). Any other client or name, with a
/// RESOLV-CONF: the file's `search` list, as CoreDNS's `autopath
/// RESOLV-CONF` walks it for every client.
fn search_path(block: &Block, query: &Query, asker: Asker) -> Option<SearchPath> {
    let ap = block.autopath.as_ref()?;
    let qname = query.name();
    if !ap.zones.is_empty() && !ap.zones.iter().any(|z| z.zone_of(qname)) {
        return None;
    }
    let under = |first: &Name| first.zone_of(qname) && qname.num_labels() > first.num_labels();
    let (first, mut walk) = match pod_path(block, asker).filter(|(first, ..)| under(first)) {
        Some((first, svc_zone, zone)) => {
            let mut walk = vec![svc_zone, zone];
            walk.extend(ap.search.iter().cloned());
            (first, walk)
        }
        None => {
            let (first, rest) = ap.search.split_first().filter(|_| ap.resolv.is_some())?;
            if !under(first) {
                return None;
            }
            (first.clone(), rest.to_vec())
        }
    };
    walk.push(Name::root());
    Some(SearchPath { first, walk })
}

/// `<ns>.svc.<zone>`, `svc.<zone>` and `<zone>` for a client that is a
/// Running pod in namespace `ns` (kubernetes `pods verified`).
fn pod_path(block: &Block, asker: Asker) -> Option<(Name, Name, Name)> {
    let cluster = block.cluster.as_ref()?;
    if cluster.cfg.pods != crate::kubernetes::PodMode::Verified {
        return None; // CoreDNS's kubernetes maps clients to pods only then
    }
    let ns = cluster.store.load().pod_namespace(asker.client)?;
    let zone = cluster
        .zones
        .iter()
        .find(|z| !cluster::reverse::is_reverse(&z.name))?
        .name
        .clone();
    let svc_zone = Name::from_ascii("svc").ok()?.append_domain(&zone).ok()?;
    let first = Name::from_ascii(&*ns).ok()?.append_domain(&svc_zone).ok()?;
    Some((first, svc_zone, zone))
}
