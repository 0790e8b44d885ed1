//! Queries answered later: forwarded names leave the synchronous path as a
//! [`Job`] and are answered from a task through the [`Sink`] they came
//! from (the worker's UDP socket, or the TCP connection's writer).

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{Metadata, Query};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::reply::echo::Echo;
use super::reply::wire;
use super::reply::Answer;
use super::reply::Summary;
use super::request::edns::ClientEdns;
use super::settle::record::{record, Exchange};
use super::settle::Continuation;
use crate::metrics::{Metrics, Transport, ZoneStats};
use crate::query::log::setup::LogStyle;

/// Where a reply goes.
#[derive(Clone, Debug)]
pub enum Sink {
    Udp(Arc<UdpSocket>),
    /// The TCP connection's writer (and its pipeline slot).
    Tcp(Arc<Pending>),
    /// Nobody waits (prefetch, probes).
    None,
    /// To the sink inside, signed first with the request's TSIG key.
    Signed(Arc<(Sink, crate::query::tsig::Signer)>),
}

/// A reply on its way to a TCP connection's writer, holding one of the
/// connection's pipeline slots until it is sent. (Here rather than in
/// `tcp`, which makes them: `tcp` uses this module, never the reverse.)
#[derive(Debug)]
pub struct Pending {
    tx: mpsc::Sender<Vec<u8>>,
    _slot: Option<OwnedSemaphorePermit>,
}

impl Pending {
    /// A reply slot of the connection whose writer reads `tx`.
    pub fn new(tx: mpsc::Sender<Vec<u8>>, slot: Option<OwnedSemaphorePermit>) -> Pending {
        Pending { tx, _slot: slot }
    }

    /// Frames `reply` and queues it for the writer (waits while the
    /// writer's queue is full; a closed connection drops it).
    pub async fn send(&self, reply: &[u8]) {
        let mut frame = Vec::with_capacity(reply.len() + 2);
        push_frame(&mut frame, reply);
        let _ = self.tx.send(frame).await;
    }
}

/// Appends `reply` to `out` with its 2-byte length (DNS over TCP).
pub fn push_frame(out: &mut Vec<u8>, reply: &[u8]) {
    out.extend_from_slice(&u16::try_from(reply.len()).unwrap_or(u16::MAX).to_be_bytes());
    out.extend_from_slice(reply);
}

/// A query that is answered later.
#[derive(Debug)]
pub struct Job {
    /// What is sent upstream: the client's message, or (autopath) one for
    /// a later name of its search walk.
    pub request: Vec<u8>,
    pub meta: Metadata,
    /// The question forwarded (cached, coalesced under).
    pub query: Query,
    pub edns: Option<ClientEdns>,
    pub transport: Transport,
    pub peer: SocketAddr,
    pub sink: Sink,
    pub log: Option<LogStyle>,
    pub started: Instant,
    /// Where the answer is counted (`coredns_dns_*`).
    pub stats: Option<Arc<ZoneStats>>,
    /// The block's `dnstap` taps, told of the reply.
    pub taps: Option<Arc<crate::dnstap::Taps>>,
    /// The block's `trace` tracer, told of the reply.
    pub trace: Option<Arc<crate::query::plugins::trace::Tracer>>,
    /// What the router left for the answer (chase, the plugin after the answer, `rewrite`, `loadbalance`).
    pub then: Continuation,
    /// The rest of an `autopath` walk, walked on when the forwarded name
    /// comes back NXDOMAIN ([`walk_on`]).
    pub walk: Option<Box<dyn WalkOn>>,
    /// The upstream last asked for it (the label `forward/upstream`).
    pub upstream: Option<SocketAddr>,
}

/// The names an `autopath` walk has still to try after the one forwarded
/// (the router's, which this layer cannot name: it sits above `forward`).
pub trait WalkOn: Send + Sync + std::fmt::Debug {
    /// `answer` holds the forwarded name's NXDOMAIN: tries the next names
    /// as the router does, each judged by the guard.
    fn walk_on(self: Box<Self>, job: Job, answer: &mut Answer) -> Walked;
}

/// What became of a query whose `autopath` walk went on.
pub enum Walked {
    /// `answer` holds the reply to deliver to `job`'s client.
    Reply(Job),
    /// The guard drops the query on a later name: no reply.
    Dropped(Job),
    /// A later name was forwarded: that query answers the client.
    HandedOn,
}

/// The job to deliver `answer` to, once an `autopath` walk that came back
/// NXDOMAIN has walked on (`None`: handed on, or dropped). Anything but
/// NXDOMAIN ends the walk, as in CoreDNS: an answer, an upstream's
/// SERVFAIL or a timeout is the client's reply.
pub fn walk_on(mut job: Job, answer: &mut Answer, metrics: &Metrics) -> Option<Job> {
    if answer.rcode != hickory_proto::op::ResponseCode::NXDomain {
        return Some(job);
    }
    let Some(walk) = job.walk.take() else {
        return Some(job);
    };
    match walk.walk_on(job, answer) {
        Walked::Reply(job) => Some(job),
        Walked::Dropped(job) => {
            if !matches!(job.sink, Sink::None) {
                metrics.in_flight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                metrics.dropped(job.transport);
            }
            None
        }
        Walked::HandedOn => None,
    }
}

impl Job {
    pub fn dnssec_ok(&self) -> bool {
        self.edns.is_some_and(|e| e.dnssec_ok)
    }
}

/// Encodes `answer` for `job`'s client, sends it, counts and logs it.
pub async fn deliver(job: &Job, answer: &mut Answer, metrics: &Metrics) {
    job.then.apply(answer);
    if let Some(signer) = &job.then.sign {
        signer.sign(job.then.question(&job.query), answer);
    }
    if answer.tags.autopath {
        metrics
            .autopath_success
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let mut out = Vec::with_capacity(512);
    let echo = Echo {
        meta: &job.meta,
        query: Some(job.then.question(&job.query)),
        edns: job.edns,
    };
    let truncated = wire::write_for(&mut out, &echo, answer, job.transport);
    let sink = tsig_signed(job, &mut out);
    if matches!(sink, Sink::None) {
        return;
    }
    metrics.in_flight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    if out.is_empty() {
        return;
    }
    let summary = Summary {
        log: job.log,
        ..Summary::of(answer, truncated, Some(&job.query), job.edns)
    };
    let exchange = Exchange {
        peer: job.peer,
        transport: job.transport,
        request: job.then.asked(&job.request),
        reply: &out,
        started: job.started,
        upstream: job.upstream,
    };
    record(
        &summary,
        job.stats.as_deref(),
        (job.taps.as_deref(), job.trace.as_deref()),
        &exchange,
    );
    match sink {
        Sink::Udp(socket) => {
            if let Err(e) = socket.send_to(&out, job.peer) {
                tracing::debug!(target: "udp", "send to {} failed: {e}", job.peer);
            }
        }
        Sink::Tcp(pending) => pending.send(&out).await,
        Sink::None | Sink::Signed(_) => {}
    }
}

/// The sink `out` goes to, TSIG-signed first when the request was signed.
fn tsig_signed<'a>(job: &'a Job, out: &mut Vec<u8>) -> &'a Sink {
    match &job.sink {
        Sink::Signed(signed) => {
            if !out.is_empty() {
                let udp = (job.transport == Transport::Udp).then(|| super::request::edns::udp_limit(job.edns));
                signed.1.sign_within(out, udp);
            }
            &signed.0
        }
        sink => sink,
    }
}

/// Sends the reply in `out` to `peer` through `sink` after `delay`
/// (a plugin's, noted on the answer: its runtime and how long), from a
/// task; true when it did so (the worker sends nothing now).
pub fn later(
    delay: Option<(std::time::Duration, tokio::runtime::Handle)>,
    out: &[u8],
    peer: SocketAddr,
    sink: &dyn Fn() -> Sink,
) -> bool {
    let Some((after, runtime)) = delay else { return false };
    let (reply, sink) = (out.to_vec(), sink());
    runtime.spawn(async move {
        tokio::time::sleep(after).await;
        match &sink {
            Sink::Udp(socket) => drop(socket.send_to(&reply, peer)),
            Sink::Tcp(pending) => pending.send(&reply).await,
            Sink::None | Sink::Signed(_) => {} // `handle` signs first and passes its own sink
        }
    });
    true
}
