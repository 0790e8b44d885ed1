//! Lookups of a second name on the client's behalf, each sent through the
//! plugins of the block that serves it: `autopath`'s walk of a pod's
//! search path, the records of a CNAME's target outside the zone that
//! answered (an ExternalName Service, a `template` or `rewrite` CNAME),
//! and `dns64`'s A question for an AAAA question with no AAAA answer.

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::{Asker, Block, Onward, Routed, Router};
use crate::metrics::Plugin;
use crate::query::plugins::cluster;
use crate::query::plugins::dns64::Dns64;
use crate::query::reply::{self, Answer};
use crate::query::settle::{self, ChaseKind};

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
        // The asked name first: anything but NXDOMAIN is its own answer.
        let asked = self.through(block, query, asker, out);
        out.tags.memoizable = false; // depends on the client from here on
        if !matches!(asked, Routed::Done) || out.rcode != ResponseCode::NXDomain {
            return Some(asked);
        }
        let qname = query.name();
        let keep = usize::from(qname.num_labels() - path.first.num_labels());
        let base = Name::from_labels(qname.iter().take(keep)).ok()?;
        if let Some(routed) = self.walk(block, &base, path, query, asker, out) {
            return Some(routed);
        }
        // Every name of the walk is NXDOMAIN: so is the asked one.
        let routed = self.through(block, query, asker, out);
        out.tags.memoizable = false;
        Some(routed)
    }

    /// Asks `base` under each domain still to walk of `path` in turn; the
    /// first that is not NXDOMAIN answers `query` under a CNAME from the
    /// asked name (or is forwarded, to come back so). Each name is judged
    /// by `acl` first (coredns#8290): a denied one ends the walk with the
    /// denial, as in CoreDNS. `None`: all were NXDOMAIN.
    fn walk<'a>(
        &'a self,
        entry: &Block,
        base: &Name,
        path: SearchPath,
        query: &Query,
        asker: Asker,
        out: &mut Answer,
    ) -> Option<Routed<'a>> {
        let mut found = Answer::default();
        for domain in path.walk {
            let Ok(name) = base.clone().append_domain(&domain) else {
                continue;
            };
            let Some((home, _)) = self.block(&name) else {
                continue;
            };
            let candidate = Query::query(name.clone(), query.query_type());
            found.clear();
            match self.guarded(entry, home, &candidate, asker, &mut found) {
                Routed::Drop => return Some(Routed::Drop),
                Routed::Done if found.rcode == ResponseCode::NXDomain => continue,
                Routed::Done if found.tags.denied => {
                    let (log, zone) = (out.tags.log, out.tags.zone);
                    std::mem::swap(out, &mut found);
                    (out.tags.log, out.tags.zone, out.tags.memoizable) = (log, zone, false);
                    return Some(Routed::Done);
                }
                Routed::Done => {
                    let (log, zone) = (out.tags.log, out.tags.zone);
                    std::mem::swap(out, &mut found);
                    out.answers.insert(0, reply::cname(query.name(), path.ttl, name));
                    (
                        out.tags.log,
                        out.tags.zone,
                        out.tags.plugin,
                        out.tags.memoizable,
                        out.tags.autopath,
                    ) = (log, zone, Plugin::Autopath, false, true);
                    return Some(Routed::Done);
                }
                Routed::Forward(on) => {
                    let mut onward = Onward::to(on.forwarding, on.balance);
                    onward.left.chase = Some((candidate, ChaseKind::Autopath));
                    return Some(Routed::Forward(onward));
                }
            }
        }
        None
    }

    /// The records of an ExternalName's `target` outside the cluster zone,
    /// looked up through the plugins of the block that serves it (its
    /// `acl`, then its `hosts`, `file`, `cache`, or a `forward`, answered
    /// later) and put after the CNAME in `out`. Without any, when the
    /// lookup fails or `acl` denies it, the CNAME stays alone.
    pub(super) fn outside<'a>(
        &'a self,
        block: &'a Block,
        target: Name,
        query: &Query,
        asker: Asker,
        out: &mut Answer,
    ) -> Routed<'a> {
        let Some((home, _)) = self.block(&target) else {
            return Routed::Done;
        };
        let chased = Query::query(target, query.query_type());
        let mut found = Answer::default();
        let routed = self.guarded(home, home, &chased, asker, &mut found);
        out.tags.memoizable &= found.tags.memoizable; // also a denial (found by `acl`) is not memoized
        match routed {
            Routed::Done => {
                // as the forwarding task puts an upstream's answer under the CNAME
                let prefix = std::mem::take(&mut out.answers);
                settle::put_under(&prefix, ChaseKind::Target(out.tags.plugin), &mut found);
                // that reply, tagged as the asked name's (and the target's store keys)
                let deps = found.tags.deps;
                found.tags = std::mem::take(&mut out.tags);
                found.tags.deps.union(&deps);
                std::mem::swap(out, &mut found);
                Routed::Done
            }
            Routed::Forward(on) => {
                let mut onward = Onward::to(on.forwarding, block.loadbalance.as_ref());
                onward.left.chase = Some((chased, ChaseKind::Target(out.tags.plugin)));
                Routed::Forward(onward)
            }
            Routed::Drop => Routed::Done,
        }
    }
}

impl Router {
    /// `dns64` after `block`'s plugins answered `query` for `asker`: a
    /// reply made here is translated now (asking A through the block,
    /// judged by its `acl` as CoreDNS's second lookup is); a forwarded one
    /// is marked for the forwarding task when the `acl` lets the client
    /// ask A.
    pub(super) fn dns64<'a>(
        &'a self,
        block: &'a Block,
        query: &Query,
        asker: Asker,
        routed: Routed<'a>,
        out: &mut Answer,
    ) -> Routed<'a> {
        let Some(d) = block.dns64.as_ref().filter(|_| Dns64::question(query)) else {
            return routed;
        };
        out.tags.deps = crate::store::Deps::EVERYTHING; // the reply may come from a second lookup
        if !d.cfg.allow_ipv4 {
            out.tags.memoizable = false; // the reply depends on the client's address family
        }
        if !d.serves(asker.client) {
            return routed;
        }
        match routed {
            Routed::Forward(mut onward) => {
                // the task asks A too: only if `acl` would let this client ask it
                let admission = self.admits(query.name(), u16::from(RecordType::A), asker.client);
                if admission.allowed {
                    admission.credit();
                    onward.left.dns64 = Some(d.clone());
                }
                Routed::Forward(onward)
            }
            Routed::Done if d.wanted(out) => {
                let mut a = Answer::default();
                let asked = Query::query(query.name().clone(), RecordType::A);
                match self.guarded(block, block, &asked, asker, &mut a) {
                    Routed::Forward(..) if out.tags.denied => Routed::Done, // `acl` denied the AAAA question
                    Routed::Forward(mut onward) => {
                        // A is not known here: the task asks both and translates.
                        onward.left.dns64 = Some(d.clone());
                        Routed::Forward(onward)
                    }
                    _ => {
                        d.synthesize(out, &a);
                        out.tags.memoizable &= a.tags.memoizable;
                        Routed::Done
                    }
                }
            }
            other => other,
        }
    }
}

/// A client pod's search path, as `autopath` walks it.
struct SearchPath {
    /// The first search domain, `<ns>.svc.<zone>`: the asked name is under it.
    first: Name,
    /// The domains still to walk: `svc.<zone>`, `<zone>`, the extra search
    /// domains, the root.
    walk: Vec<Name>,
    /// The TTL of the CNAME from the asked name (the cluster zone's).
    ttl: u32,
}

/// The client's search path, when `autopath` applies to `query` in `block`.
fn search_path(block: &Block, query: &Query, asker: Asker) -> Option<SearchPath> {
    let ap = block.autopath.as_ref()?;
    let cluster = block.cluster.as_ref()?;
    let qname = query.name();
    if !ap.zones.is_empty() && !ap.zones.iter().any(|z| z.zone_of(qname)) {
        return None;
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
    if !first.zone_of(qname) || qname.num_labels() <= first.num_labels() {
        return None;
    }
    let mut walk = vec![svc_zone, zone];
    walk.extend(ap.search.iter().cloned());
    walk.push(Name::root());
    Some(SearchPath {
        first,
        walk,
        ttl: cluster.cfg.ttl,
    })
}
