//! What is left to do to an answer once the plugins have spoken, and the
//! one function that does it. [`apply`]: `loadbalance` shuffles, a chased
//! name's answer is put under the client's question, a `rewrite` is
//! undone. The worker calls it for an answer made here (a CNAME target
//! outside answered here is put under the CNAME by the same
//! [`Chase::put_under`]); for a forwarded query the router leaves the
//! same steps as plain data, a [`Continuation`], that the query's
//! [`super::defer::Job`] carries to the forwarding task, which applies it
//! to the upstream's answer. Beside [`apply`], both paths then drop a
//! successful answer's extra sections under `minimal` ([`minimal`]), and
//! the continuation carries the block's `nsid` to the forwarded answer.
//! The task also reads the plugin after the answer and the
//! `rewrite cname` target, which need a second upstream question
//! (`forward::Forwarding::complete`).
//!
//! Then the served query is told to the metrics, the query log and
//! `dnstap` by one function for both paths, [`record::record`].
//!
//! This module sits above the plugins (it holds their types) and below
//! the router and the forwarding task, which both use it.

pub mod minimal;
pub mod record;

use std::net::SocketAddr;
use std::sync::Arc;

use hickory_proto::op::{Query, ResponseCode};
use hickory_proto::rr::{Name, Record};

use super::plugins::after::{AfterAnswer, Signing};
use super::plugins::rewrite::{self, Revert};
use super::reply::{self, Answer};
use crate::metrics::{Plugin, Transport};
use crate::query::reply::loadbalance::setup::LoadbalanceConfig;

/// What remains to do to a forwarded query's answer.
#[derive(Debug, Default)]
pub struct Continuation {
    /// Another name than the client's was forwarded (autopath, an
    /// ExternalName's target): how its answer is put under the client's.
    pub chase: Option<Chase>,
    /// The block's plugin after the answer, which amends the reply (asking
    /// its second question) when the reply calls for it.
    pub after: Option<Arc<dyn AfterAnswer>>,
    /// A `rewrite` to undo on the reply (`None`: the question went as asked).
    pub rewrite: Option<Box<Rewritten>>,
    /// `loadbalance` of the block the answer goes back through.
    pub loadbalance: Option<Arc<LoadbalanceConfig>>,
    /// `nsid` of that block (written only if the client asked for it).
    pub nsid: Option<Arc<[u8]>>,
    /// `minimal` of that block ([`minimal`]).
    pub minimal: bool,
    /// `header` of that block (its rules, for the reply writer).
    pub header: Option<Arc<crate::query::reply::header::Rules>>,
    /// `dnssec` of that block, for a question with DO under its zones: it
    /// signs the reply last.
    pub sign: Option<Arc<dyn Signing>>,
}

/// What the router leaves for a query it forwards, before it is sent:
/// [`Left::upstream`] makes the message that goes and the
/// [`Continuation`] that comes back with the answer.
#[derive(Debug, Default)]
pub struct Left {
    /// Another name than the client's goes: `autopath`'s next name of the
    /// search walk, or a CNAME's target outside; its answer comes back
    /// under the client's question.
    pub chase: Option<(Query, ChaseKind)>,
    /// The plugin after the answer amends it (the task asks its second
    /// question as well).
    pub after: Option<Arc<dyn AfterAnswer>>,
    /// `rewrite` changed the question: the one that goes, and how the
    /// answer is changed back.
    pub rewrite: Option<Box<(Query, Revert)>>,
    /// The block's `metadata` when `rewrite` changed the question and it
    /// covers the name asked (`rewrite`'s `{PLUGIN/LABEL}`).
    pub metadata: Option<Arc<crate::query::metadata::Metadata>>,
    /// `minimal` of the block: the answer loses its extra sections ([`minimal`]).
    pub minimal: bool,
    /// `header` of the block: its query rules on the request sent, all on the reply.
    pub header: Option<Arc<crate::query::reply::header::Rules>>,
    /// `dnssec` of the block, when it signs the reply ([`Continuation::sign`]).
    pub sign: Option<Arc<dyn Signing>>,
}

impl Left {
    /// What a forwarded query sends upstream, the question it is cached
    /// and coalesced under, and what its answer goes through on the way
    /// back: as is; under the client's question when another name goes
    /// ([`Chase`], whose CNAME records are taken from `answer`); mapped
    /// back when `rewrite` changed the question ([`Rewritten`]). `bytes`
    /// and `asked` are the client's message and question, `(peer, local)`
    /// the client's address and the listener's it came in on (`rewrite`'s
    /// `{server_ip}`, `{server_port}`).
    pub fn upstream(
        self,
        bytes: &[u8],
        asked: &Query,
        answer: &mut Answer,
        loadbalance: Option<Arc<LoadbalanceConfig>>,
        (peer, local): (SocketAddr, Option<SocketAddr>),
        transport: Transport,
    ) -> (Vec<u8>, Query, Continuation) {
        let rewritten = self.rewrite.map(|r| {
            let (q, revert) = *r;
            let rewritten = Rewritten {
                question: asked.clone(),
                revert,
                request: bytes.to_vec(),
            };
            (q, Box::new(rewritten))
        });
        let (forwarded, chase) = match self.chase {
            None => (rewritten.as_ref().map(|(q, _)| q.clone()), None),
            Some((forwarded, kind)) => {
                let prefix = match kind {
                    ChaseKind::Autopath => Vec::new(), // the CNAME is made from the answer
                    ChaseKind::Target(_) => std::mem::take(&mut answer.answers),
                };
                let asked = asked.clone();
                (Some(forwarded), Some(Chase { asked, prefix, kind }))
            }
        };
        let then = Continuation {
            chase,
            after: self.after,
            rewrite: rewritten.map(|(_, r)| r),
            loadbalance: loadbalance.filter(|lb| lb.touches(asked.query_type())),
            nsid: answer.tags.nsid.clone(),
            minimal: self.minimal,
            header: self.header,
            sign: self.sign,
        };
        let (mut request, forwarded) = match forwarded {
            None => (bytes.to_vec(), asked.clone()),
            Some(forwarded) => {
                let revert = then.rewrite.as_ref().map(|r| &r.revert);
                let how = (revert, self.metadata.as_deref());
                let request = rewrite::upstream_request(bytes, &forwarded, how, peer, local, transport);
                (request, forwarded)
            }
        };
        if let Some(rules) = &then.header {
            crate::query::reply::header::request(rules, &mut request);
        }
        (request, forwarded, then)
    }
}

/// What `rewrite` changed in a forwarded question.
#[derive(Debug)]
pub struct Rewritten {
    /// The client's question, echoed in the reply.
    pub question: Query,
    pub revert: Revert,
    /// The client's own message (logged and counted as it came).
    pub request: Vec<u8>,
}

/// A forwarded name that is not the client's: the answer to it is put
/// under the client's own question.
#[derive(Debug)]
pub struct Chase {
    /// The client's question, echoed in the reply.
    pub asked: Query,
    /// The CNAME records leading from the asked name to the forwarded one
    /// (none for `autopath`, whose CNAME is made from the answer).
    pub prefix: Vec<Record>,
    pub kind: ChaseKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaseKind {
    /// A later name of the search walk: its answer is the asked name's,
    /// behind a CNAME ([`cnamer`]); its NXDOMAIN walks on
    /// (`defer::walk_on`), a failure (SERVFAIL, REFUSED) ends the walk as
    /// it is.
    Autopath,
    /// A CNAME's target outside the zone (an ExternalName Service, a
    /// Service's external ingress hostname), as CoreDNS's upstream lookup: the
    /// CNAME, then whatever records the target has (none when it fails),
    /// NOERROR, authoritative, answered by this plugin; an upstream's TC
    /// is kept.
    Target(Plugin),
}

impl Continuation {
    /// Does to `answer` (the upstream's, amended by the plugin after the
    /// answer and a `rewrite cname` target added) what the router left for it, through the
    /// same [`apply`] the worker uses for an answer made here.
    pub fn apply(&self, answer: &mut Answer) {
        if self.nsid.is_some() {
            answer.tags.nsid = self.nsid.clone();
        }
        let revert = self.rewrite.as_ref().map(|r| &r.revert);
        apply(answer, self.loadbalance.as_deref(), self.chase.as_ref(), revert);
        if self.minimal {
            minimal::minimize(answer);
        }
        answer.tags.header.clone_from(&self.header);
    }

    /// The question the reply echoes: the client's own, where `rewrite` or
    /// a chase forwarded another one than `forwarded`.
    pub fn question<'a>(&'a self, forwarded: &'a Query) -> &'a Query {
        (self.rewrite.as_ref().map(|r| &r.question))
            .or(self.chase.as_ref().map(|c| &c.asked))
            .unwrap_or(forwarded)
    }

    /// The client's own message, where `rewrite` sent another one than `sent`.
    pub fn asked<'a>(&'a self, sent: &'a [u8]) -> &'a [u8] {
        self.rewrite.as_ref().map_or(sent, |r| &r.request[..])
    }
}

/// The step after the plugins, one function for both paths: `loadbalance`
/// shuffles, a chased name's answer is put under the client's question,
/// a `rewrite` is undone. The worker calls it for an answer made here
/// (its chase answered here too), the forwarding task for an upstream's
/// (through [`Continuation::apply`]). Returns whether `loadbalance` drew
/// an order (the reply is then not memoized).
pub fn apply(
    answer: &mut Answer,
    loadbalance: Option<&LoadbalanceConfig>,
    chase: Option<&Chase>,
    revert: Option<&Revert>,
) -> bool {
    let drawn = loadbalance.is_some_and(|lb| answer.balance(lb));
    if let Some(chase) = chase {
        chase.put_under(answer);
    }
    if let Some(revert) = revert {
        revert.answer(answer);
    }
    drawn
}

impl Chase {
    /// Puts `answer` (the chased name's) under the client's question; a
    /// successful `autopath` walk is marked in `answer.autopath` (counted
    /// where the reply is recorded).
    pub fn put_under(&self, answer: &mut Answer) {
        match self.kind {
            ChaseKind::Autopath => match answer.rcode {
                // the walk ended without walking on: the asked name's NXDOMAIN
                ResponseCode::NXDomain => answer.error(ResponseCode::NXDomain),
                // a failure (an upstream's SERVFAIL, a timeout, `max_concurrent`) ends the walk
                ResponseCode::ServFail | ResponseCode::Refused => {}
                _ => {
                    cnamer(self.asked.name(), answer);
                    (answer.tags.plugin, answer.tags.autopath) = (Plugin::Autopath, true);
                }
            },
            ChaseKind::Target(plugin) => put_under(&self.prefix, plugin, answer),
        }
    }
}

/// A later name's answer of an `autopath` walk as the `asked` name's, as
/// CoreDNS's autopath writes it: a CNAME from `asked` to the owner of the
/// first answer record `asked` does not own, with that record's TTL, ahead
/// of the answers (no CNAME when there is no such record: NODATA).
pub fn cnamer(asked: &Name, answer: &mut Answer) {
    let Some(first) = answer.answers.iter().find(|r| r.name != *asked) else {
        return;
    };
    let cname = reply::cname(asked, first.ttl, first.name.clone());
    answer.answers.insert(0, cname);
}

/// [`Chase::put_under`] for a CNAME's target outside the zone, from its
/// parts: the worker, which answers a chased name itself, has no client's
/// question to keep for the echo. The CNAME (`prefix`), then whatever
/// records the target has (none when it fails), NOERROR, authoritative,
/// answered by `plugin`; an upstream's TC is kept.
pub fn put_under(prefix: &[Record], plugin: Plugin, answer: &mut Answer) {
    let (found, truncated) = (std::mem::take(&mut answer.answers), answer.truncated);
    // A zone file's answer keeps the target's NXDOMAIN (with its SOA) or SERVFAIL,
    // as CoreDNS's file plugin does after its upstream lookup.
    let kept = match answer.rcode {
        ResponseCode::NXDomain | ResponseCode::ServFail if plugin == Plugin::File => {
            Some((answer.rcode, std::mem::take(&mut answer.authority)))
        }
        _ => None,
    };
    answer.error(ResponseCode::NoError);
    if let Some((rcode, authority)) = kept {
        (answer.rcode, answer.authority) = (rcode, authority);
    }
    answer.answers = prefix.iter().cloned().chain(found).collect();
    (answer.truncated, answer.authoritative) = (truncated, true);
    answer.tags.plugin = plugin;
}
