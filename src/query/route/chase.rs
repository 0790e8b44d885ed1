//! Lookups of a second name on the client's behalf, each sent through the
//! plugins of the block that serves it: the records of a CNAME's target
//! outside the zone that answered (an ExternalName Service, a `template`
//! or `rewrite` CNAME), and `dns64`'s A question for an AAAA question with
//! no AAAA answer. (`autopath`'s walk of a pod's search path is
//! `autopath.rs`.)

use hickory_proto::op::Query;
use hickory_proto::rr::{Name, RecordType};

use super::{Asker, Block, Onward, Routed, Router};
use crate::query::plugins::dns64::Dns64;
use crate::query::reply::Answer;
use crate::query::settle::{self, ChaseKind};

impl Router {
    /// The block serving a second name asked on the client's behalf (a
    /// chased CNAME target, an `autopath` search name): by view when blocks
    /// have views, else by zone alone.
    pub(crate) fn home(&self, query: &Query, asker: &Asker) -> Option<(&Block, u16)> {
        if self.views {
            self.viewed(query, asker)
        } else {
            self.block(query.name())
        }
    }

    /// The records of an ExternalName's `target` outside the cluster zone,
    /// looked up through the plugins of the block that serves it (its
    /// guard, then its `hosts`, `file`, `cache`, or a `forward`, answered
    /// later) and put after the CNAME in `out`. Without any, when the
    /// lookup fails or the guard denies it, the CNAME stays alone.
    pub(super) fn outside<'a>(
        &'a self,
        block: &'a Block,
        target: Name,
        query: &Query,
        asker: Asker,
        out: &mut Answer,
    ) -> Routed<'a> {
        let chased = Query::query(target, query.query_type());
        let Some((home, _)) = self.home(&chased, &asker) else {
            return Routed::Done;
        };
        let mut found = Answer::default();
        let routed = self.guarded(home, home, &chased, asker, &mut found);
        out.tags.memoizable &= found.tags.memoizable; // also a denial (found by the guard) is not memoized
        match routed {
            Routed::Done => {
                // as the forwarding task puts an upstream's answer under the CNAME
                let prefix = std::mem::take(&mut out.answers);
                settle::put_under(&prefix, out.tags.plugin, &mut found);
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
    /// judged by its guard as CoreDNS's second lookup is); a forwarded one
    /// is marked for the forwarding task when the guard lets the client
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
                // the task asks A too: only if the guard would let this client ask it
                let (a, client) = (u16::from(RecordType::A), asker.client);
                let admission = match self.views {
                    true => super::admission(block, query.name(), a, client),
                    false => self.admits(query.name(), a, client),
                };
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
                    Routed::Forward(..) if out.tags.denied => Routed::Done, // the guard denied the AAAA question
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
