//! Lookups of a second name on the client's behalf, each sent through the
//! plugins of the block that serves it: the records of a CNAME's target
//! outside the zone that answered (an ExternalName Service, a `template`
//! or `rewrite` CNAME), and the second question of the block's plugin after
//! the answer (an AAAA question's A) when the answer calls for it.
//! (`autopath`'s walk of a pod's search path is `autopath.rs`.)

use hickory_proto::op::Query;
use hickory_proto::rr::Name;

use super::asker::Asker;
use super::block::Block;
use super::routed::{Onward, Routed};
use super::router::Router;
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
    /// The block's plugin after the answer, once `block`'s plugins
    /// answered `query` for `asker`: a reply made here is amended now
    /// (its second question asked through the block, judged by its guard
    /// as CoreDNS's second lookup is); a forwarded one is marked for the
    /// forwarding task when the guard lets the client ask the second
    /// question.
    pub(super) fn after_answer<'a>(
        &'a self,
        block: &'a Block,
        query: &Query,
        asker: Asker,
        routed: Routed<'a>,
        out: &mut Answer,
    ) -> Routed<'a> {
        let Some(d) = block.plugins.after.as_ref().filter(|d| d.takes(query)) else {
            return routed;
        };
        out.tags.deps = crate::store::Deps::EVERYTHING; // the reply may come from a second lookup
        if d.reads_client() {
            out.tags.memoizable = false; // the reply depends on the client's address
        }
        if !d.serves(asker.client) {
            return routed;
        }
        match routed {
            Routed::Forward(mut onward) => {
                // the task asks the second question too: only if the guard would let this client ask it
                let second = d.second(query);
                let (qtype, client) = (u16::from(second.query_type()), asker.client);
                let admission = match self.views {
                    true => super::guard::admission(block, second.name(), qtype, client),
                    false => self.admits(second.name(), qtype, client),
                };
                if admission.allowed {
                    admission.credit();
                    onward.left.after = Some(d.clone());
                }
                Routed::Forward(onward)
            }
            Routed::Done if d.wanted(out) => {
                let mut second = Answer::default();
                let asked = d.second(query);
                match self.guarded(block, block, &asked, asker, &mut second) {
                    Routed::Forward(..) if out.tags.denied => Routed::Done, // the guard denied the first question
                    Routed::Forward(mut onward) => {
                        // the second answer is not known here: the task asks both and amends.
                        onward.left.after = Some(d.clone());
                        Routed::Forward(onward)
                    }
                    _ => {
                        d.amend(out, &second);
                        out.tags.memoizable &= second.tags.memoizable;
                        Routed::Done
                    }
                }
            }
            other => other,
        }
    }
}
