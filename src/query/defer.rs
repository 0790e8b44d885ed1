//! Queries answered later: forwarded names leave the synchronous path as a
//! [`Job`] and are answered from a task through the [`Sink`] they came
//! from (the worker's UDP socket, or the TCP connection's writer).

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{Metadata, Query, ResponseCode};

use super::answer::Answer;
use super::finish::{self, Echo};
use super::log;
use super::request::ClientEdns;
use crate::config::local::LogStyle;
use crate::metrics::{type_slot, Metrics, Served, Transport, ZoneStats};

/// Where a reply goes.
#[derive(Clone, Debug)]
pub enum Sink {
    Udp(Arc<UdpSocket>),
    /// The TCP connection's writer (and its pipeline slot).
    Tcp(Arc<super::tcp::Pending>),
    /// Nobody waits (prefetch, probes).
    None,
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
    /// The client's own question when autopath forwards another name: the
    /// answer comes back under a CNAME from it.
    pub asked: Option<Query>,
    pub edns: Option<ClientEdns>,
    pub transport: Transport,
    pub peer: SocketAddr,
    pub sink: Sink,
    pub log: Option<LogStyle>,
    pub loadbalance: bool,
    pub started: Instant,
    /// Where the answer is counted (`coredns_dns_*`).
    pub stats: Option<Arc<ZoneStats>>,
    /// A `rewrite` to undo on the reply (`None`: the question went as asked).
    pub rewrite: Option<Box<Rewritten>>,
    /// A CNAME answered here (`template`, `rewrite cname`) whose target is
    /// what was forwarded: the target's records follow it.
    pub target: Option<Box<Target>>,
}

/// What `rewrite` changed in a forwarded question.
#[derive(Debug)]
pub struct Rewritten {
    /// The client's question, echoed in the reply.
    pub question: Query,
    pub revert: super::rewrite::Revert,
    /// The client's own message (logged and counted as it came).
    pub request: Vec<u8>,
}

/// A CNAME answered here whose target was forwarded.
#[derive(Debug)]
pub struct Target {
    /// The client's question, echoed in the reply.
    pub asked: Query,
    /// The records answered here: they come first.
    pub prefix: Vec<hickory_proto::rr::Record>,
}

impl Job {
    pub fn dnssec_ok(&self) -> bool {
        self.edns.is_some_and(|e| e.dnssec_ok)
    }
}

/// Encodes `answer` for `job`'s client, sends it, counts and logs it.
pub async fn deliver(job: &Job, answer: &mut Answer, metrics: &Metrics) {
    if job.loadbalance {
        answer.shuffle_addresses();
    }
    if let Some(asked) = &job.asked {
        if answer.rcode == ResponseCode::NoError {
            let cname = super::answer::cname(asked.name(), 5, job.query.name().clone());
            answer.answers.insert(0, cname);
            answer.plugin = crate::metrics::Plugin::Autopath;
            metrics
                .autopath_success
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            answer.error(ResponseCode::NXDomain);
        }
    }
    if let Some(target) = &job.target {
        let upstream = std::mem::take(&mut answer.answers);
        answer.answers = target.prefix.iter().cloned().chain(upstream).collect();
    }
    if let Some(rewritten) = &job.rewrite {
        rewritten.revert.answer(answer);
    }
    let mut out = Vec::with_capacity(512);
    let question = (job.rewrite.as_ref().map(|r| &r.question))
        .or(job.target.as_ref().map(|t| &t.asked))
        .or(job.asked.as_ref());
    let echo = Echo {
        meta: &job.meta,
        query: Some(question.unwrap_or(&job.query)),
        edns: job.edns,
    };
    let truncated = finish::write_for(&mut out, &echo, answer, job.transport);
    if matches!(job.sink, Sink::None) {
        return;
    }
    metrics.in_flight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    if out.is_empty() {
        return;
    }
    let asked = job.rewrite.as_ref().map_or(&job.request[..], |r| &r.request[..]);
    if let Some(stats) = &job.stats {
        stats.record(&Served {
            transport: job.transport,
            ipv6: job.peer.is_ipv6(),
            qtype: type_slot(job.query.query_type()),
            dnssec_ok: job.dnssec_ok(),
            request_size: asked.len(),
            response_size: out.len(),
            rcode: answer.rcode,
            plugin: answer.plugin,
            truncated,
            expansion: None,
            nanos: job.started.elapsed().as_nanos() as u64,
        });
    }
    if let Some(style) = job.log {
        log::query(style, job.peer, job.transport, asked, &out, answer.rcode, job.started);
    }
    match &job.sink {
        Sink::Udp(socket) => {
            if let Err(e) = socket.send_to(&out, job.peer) {
                tracing::debug!(target: "udp", "send to {} failed: {e}", job.peer);
            }
        }
        Sink::Tcp(pending) => pending.send(&out).await,
        Sink::None => {}
    }
}
