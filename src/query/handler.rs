//! One query through the blocks of one listener: [`Handler::handle`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::Query;

use super::reply::echo::Echo;
use super::reply::wire;
use super::request::{self, edns::ClientEdns, Triage};
use super::route::{Asker, Routed, Router};
use super::scratch::{Arrival, Fate, Scratch};
use super::{defer, replay, reply, route, settle, tsig};
use crate::metrics::{Metrics, Transport};

/// Answers one query for the blocks of one listener.
pub struct Handler {
    /// Swapped whole by a reload; each query uses the one it loaded.
    pub router: arc_swap::ArcSwap<Router>,
    pub metrics: std::sync::Arc<Metrics>,
    /// Tells handlers apart (per-thread scratch space of TCP connections).
    pub id: u64,
}

impl Handler {
    pub fn new(router: Router, metrics: std::sync::Arc<Metrics>) -> Handler {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Handler {
            router: arc_swap::ArcSwap::from_pointee(router),
            metrics,
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// [`Handler::handle`] in `router` (the caller's, loaded from [`Handler::router`]: once per
    /// batch by a UDP worker, once per query by a TCP connection) behind a panic guard: a panic while
    /// answering is caught here, counted in `coredns_panics_total`, and answered SERVFAIL; the
    /// worker goes on.
    #[inline(always)]
    pub fn handle_guarded(
        &self,
        router: &Arc<Router>,
        bytes: &[u8],
        (peer, transport): (SocketAddr, Transport),
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
        started: Instant,
    ) -> bool {
        let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handle_in(router, bytes, (peer, transport), scratch, sink, started)
        }));
        match handled {
            Ok(reply) => reply,
            Err(_) => {
                self.metrics.panics.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::error!("panic while answering a query from {peer}; answered SERVFAIL, still serving");
                *scratch = Scratch {
                    local: scratch.local,
                    ..Scratch::default()
                };
                wire::servfail(bytes, transport, &mut scratch.out)
            }
        }
    }

    /// Handles one message from `peer`; the reply is left in `scratch.out`.
    /// Returns false when nothing is to be sent now (the packet is dropped,
    /// or a task answers it later through `sink`). `started` is when the
    /// query arrived (its batch's clock read, less the time the kernel
    /// queued it): request durations count from there. With `tsig`, a
    /// signed request goes on without its TSIG record, its reply signed.
    pub fn handle(
        &self,
        bytes: &[u8],
        peer: SocketAddr,
        transport: Transport,
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
        started: Instant,
    ) -> bool {
        self.handle_in(&self.router.load(), bytes, (peer, transport), scratch, sink, started)
    }

    /// [`Handler::handle`] in `router`.
    #[inline(always)]
    fn handle_in(
        &self,
        router: &Arc<Router>,
        bytes: &[u8],
        (peer, transport): (SocketAddr, Transport),
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
        started: Instant,
    ) -> bool {
        let at = (peer, transport, started);
        let sent = match tsig::admit(router.tsig.as_deref(), bytes, &mut scratch.out) {
            tsig::Admit::Plain => self.serve(router, bytes, at, scratch, sink),
            tsig::Admit::Answered => true,
            tsig::Admit::Signed(s) => {
                let signed = || defer::Sink::Signed(Arc::new((sink(), s.signer.clone())));
                let sent = self.serve(router, &s.request, at, scratch, &signed);
                s.signed(sent, transport == Transport::Udp, &mut scratch.out)
            }
        };
        let delay = scratch.answer.tags.delay.take(); // a plugin's delay: sent later (signed), counted now
        sent && (delay.is_none() || !defer::later(delay, &scratch.out, peer, sink))
    }

    /// [`Handler::handle`] past `tsig`. Plain repeated questions are
    /// replayed from the memo, and repeated cache hits from
    /// [`replay::hits`] (learned from the full path's reply, so their
    /// route is skipped too).
    #[inline(always)]
    fn serve(
        &self,
        router: &Arc<Router>,
        bytes: &[u8],
        (peer, transport, started): (SocketAddr, Transport, Instant),
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
    ) -> bool {
        let wire = request::parse(bytes);
        // The guard first: a denied client never reaches a replay (coredns#8289).
        // With views, nothing is replayed: the full path judges in the block chosen.
        let admitted =
            (wire.filter(|_| !router.views)).map(|w| router.admits(route::WireName(w.name(bytes)), w.qtype, peer.ip()));
        let memo_key = match &wire {
            Some(wire) if admitted.is_some_and(|a| a.allowed) => {
                replay::memo::Key::of(bytes, wire, transport, &mut scratch.key)
            }
            _ => None,
        };
        let at = Arrival {
            bytes,
            wire,
            admitted,
            peer,
            transport,
            started,
        };
        let full = match memo_key {
            None => self.answer(router, &at, scratch, sink),
            Some(key) => {
                let full = self.replayed(router, &at, &key, scratch, sink);
                key.recycle(&mut scratch.key);
                full
            }
        };
        self.finish(router, &at, full, scratch)
    }

    /// A plain question's reply replayed (memo, then cache hits), else the
    /// full path's, remembered or learned for the next time.
    #[inline(always)]
    fn replayed(
        &self,
        router: &Arc<Router>,
        at: &Arrival<'_>,
        key: &replay::memo::Key,
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
    ) -> Fate {
        let view = router.memo_view();
        let (bytes, out) = (at.bytes, &mut scratch.out);
        let replayed = (scratch.memo.replay(key, bytes, &view, out))
            .or_else(|| scratch.hits.replay(router.hits_id(), key, bytes, at.started, out));
        match (replayed, at.admitted) {
            (Some(summary), Some(admission)) => {
                admission.credit(); // the full path counts the others
                Fate::Reply(summary)
            }
            (Some(summary), None) => Fate::Reply(summary),
            (None, _) => self.learned(router, at, key, &view, scratch, sink),
        }
    }

    /// The full path for a question the memo and the cache-hit replay
    /// missed: its reply is remembered (a memoizable answer) or learned
    /// (a cache hit) for the next time it is asked.
    fn learned(
        &self,
        router: &Arc<Router>,
        at: &Arrival<'_>,
        key: &replay::memo::Key,
        view: &replay::memo::View<'_>,
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
    ) -> Fate {
        let outcome = match self.answer(router, at, scratch, sink) {
            Fate::Reply(outcome) => outcome,
            other => return other,
        };
        if scratch.answer.tags.memoizable {
            let tags = &scratch.answer.tags;
            let how = (tags.deps, tags.exact_case);
            scratch.memo.remember(key, view, &scratch.out, outcome, how);
        } else if outcome.plugin == crate::metrics::Plugin::Cache {
            let Scratch { hits, answer, out, .. } = &mut *scratch;
            hits.learn(|q| router.hit_route(q), key, at.bytes, answer, out, outcome, at.started);
        }
        Fate::Reply(outcome)
    }

    /// The end of every query's path, once: a dropped message is counted,
    /// the client of one answered now or later is counted, and a reply
    /// sent now is counted, logged and told to `dnstap` as the block asks.
    /// Returns whether `scratch.out` holds a reply to send.
    #[inline(always)]
    fn finish(&self, router: &Router, at: &Arrival<'_>, full: Fate, s: &mut Scratch) -> bool {
        if matches!(full, Fate::Nothing) {
            self.metrics.dropped(at.transport);
            return false;
        }
        router.count_client(&self.metrics.clients, at.peer.ip(), &mut s.clients);
        let Fate::Reply(o) = full else {
            return false; // answered later
        };
        let exchange = settle::record::Exchange {
            peer: at.peer,
            transport: at.transport,
            request: at.bytes,
            reply: &s.out,
            started: at.started,
            upstream: None,
        };
        let stats = router.stats.get(usize::from(o.zone)).map(|s| &**s);
        let (taps, trace) = (router.tap(o.zone).map(|t| &**t), router.trace(o.zone).map(|t| &**t));
        settle::record::record(&o, stats, (taps, trace), &exchange);
        !s.out.is_empty()
    }

    /// The full path: check, route, answer, encode.
    fn answer(
        &self,
        router: &Arc<Router>,
        at: &Arrival<'_>,
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
    ) -> Fate {
        scratch.answer.clear();
        let answer = &mut scratch.answer;
        let (meta, query, edns) = match request::check_parsed(at.bytes, at.wire) {
            Triage::Drop => return Fate::Nothing,
            reject @ Triage::Reject { .. } => match router.rejected(reject, at.peer.ip(), answer) {
                Some(echo) => echo,
                None => return Fate::Nothing, // a NOTIFY not from a primary
            },
            Triage::Query(req) => match self.route(router, at, req, scratch, sink) {
                Ok(routed) => routed,
                Err(done) => return done,
            },
        };
        let echo = Echo {
            meta: &meta,
            query: query.as_ref(),
            edns,
        };
        let (answer, out) = (&scratch.answer, &mut scratch.out);
        let truncated = wire::write_for(out, &echo, answer, at.transport);
        if out.is_empty() {
            return Fate::Nothing;
        }
        Fate::Reply(reply::Summary::of(answer, truncated, query.as_ref(), edns))
    }

    /// A checked query: written straight from the snapshot where the block allows, else routed. `Err` is the path's end
    /// (written, handed on, dropped); `Ok` is what to encode from `scratch.answer`.
    fn route(
        &self,
        router: &Arc<Router>,
        at: &Arrival<'_>,
        req: request::Request,
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
    ) -> Result<(hickory_proto::op::Metadata, Option<Query>, Option<ClientEdns>), Fate> {
        #[cfg(debug_assertions)]
        if req.query.name().to_ascii().eq_ignore_ascii_case(PANIC_TRIGGER) {
            panic!("test-only panic trigger (debug builds only)");
        }
        let (answer, local) = (&mut scratch.answer, scratch.local);
        let routed = match router.enter(&req.query, || asker(at, &req, (local, router.subnets)), answer) {
            None => Routed::Done, // REFUSED written: no block takes it
            Some(block) => {
                let (qtype, client) = (u16::from(req.query.query_type()), at.peer.ip());
                let admitted =
                    (at.admitted).unwrap_or_else(|| route::admission(block, req.query.name(), qtype, client));
                let (allowed, out) = (admitted.allowed, &mut scratch.out);
                if let Some((truncated, edns)) = router.write_direct(block, &req, allowed, at.transport, answer, out) {
                    admitted.credit();
                    let summary = reply::Summary::of(answer, truncated, Some(&req.query), edns);
                    return Err(Fate::Reply(summary));
                }
                answer.restart();
                router.answer_in(block, &req.query, asker(at, &req, (local, router.subnets)), answer)
            }
        };
        let edns = request::edns::capped(req.edns, answer.tags.bufsize);
        if answer.tags.autopath {
            self.metrics
                .autopath_success
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let onward = match routed {
            Routed::Drop => return Err(Fate::Nothing),
            Routed::Done => return Ok((req.meta, Some(req.query), edns)),
            Routed::Forward(onward) => onward,
        };
        let req = request::Request { edns, ..req };
        self.forward(router, at, req, onward, scratch, sink);
        Err(Fate::Later)
    }

    /// Hands a routed query to its forwarding task, or sheds it when too
    /// many are in flight (the client retries).
    fn forward(
        &self,
        router: &Arc<Router>,
        at: &Arrival<'_>,
        req: request::Request,
        onward: route::Onward<'_>,
        scratch: &mut Scratch,
        sink: &dyn Fn() -> defer::Sink,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.metrics.in_flight.fetch_add(1, Relaxed) >= router.in_flight as u64 {
            self.metrics.in_flight.fetch_sub(1, Relaxed);
            self.metrics.overload_dropped.fetch_add(1, Relaxed);
            return;
        }
        let left = onward.left;
        let answer = &mut scratch.answer;
        let forwarding = onward.forwarding;
        let balance = onward.balance.cloned();
        let (mut request, query, then) = left.upstream(
            at.bytes,
            &req.query,
            answer,
            balance,
            (at.peer, scratch.local),
            at.transport,
        );
        if let Some(cap) = answer.tags.bufsize {
            request::edns::cap_payload(&mut request, cap);
        }
        forwarding.submit(defer::Job {
            request,
            meta: req.meta,
            query,
            edns: req.edns,
            transport: at.transport,
            peer: at.peer,
            sink: sink(),
            log: answer.tags.log,
            started: at.started,
            stats: router.stats.get(usize::from(answer.tags.zone)).cloned(),
            taps: router.tap(answer.tags.zone).cloned(),
            trace: router.trace(answer.tags.zone).cloned(),
            then,
            walk: onward.walk.map(|rest| rest.with(router.clone())),
            upstream: None,
        });
    }
}

/// Who asks, as the plugins of the full path see it: the request's fields
/// `template`'s functions read are copied only here, past the direct writes
/// (`local`: the listener's address, `server_ip()`); the ECS address
/// (`geoip { edns-subnet }`) is read only when `subnets` ([`Router::subnets`]).
fn asker(at: &Arrival<'_>, req: &request::Request, (local, subnets): (Option<SocketAddr>, bool)) -> Asker {
    let edns = req.edns.map(|e| (e.payload, e.dnssec_ok));
    let id = (req.meta.id, u8::from(req.meta.op_code));
    let tcp = at.transport == Transport::Tcp;
    Asker {
        client: at.peer.ip(),
        dnssec_ok: req.edns.is_some_and(|e| e.dnssec_ok),
        cd: req.meta.checking_disabled,
        wire: crate::corefile::expr::Wire {
            server: local,
            ..crate::corefile::expr::Wire::of(tcp, at.bytes.len(), id, edns, at.peer.port())
        },
        subnet: (subnets && req.edns.is_some())
            .then(|| crate::query::plugins::geoip::subnet::of_wire(at.bytes))
            .flatten(),
    }
}

/// In debug builds (the tests' binary) a query for this name panics, to
/// test that no panic reaches the process. Release builds have no trigger.
#[cfg(debug_assertions)]
pub const PANIC_TRIGGER: &str = "panic.clusterdns.test.";
