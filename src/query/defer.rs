//! Queries answered later: forwarded names leave the synchronous path as a
//! [`Job`] and are answered from a task through the [`Sink`] they came
//! from (the worker's UDP socket, or the TCP connection's writer).

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{Metadata, Query};
use tokio::sync::mpsc;

use super::answer::Answer;
use super::finish::{self, Echo};
use super::log;
use super::request::{self, ClientEdns};
use crate::config::local::LogStyle;
use crate::metrics::{type_slot, Metrics, Served, Transport, ZoneStats};

/// Where a reply goes.
#[derive(Clone, Debug)]
pub enum Sink {
    Udp(Arc<UdpSocket>),
    /// Length-prefixed frames for the connection's writer.
    Tcp(mpsc::Sender<Vec<u8>>),
    /// Nobody waits (prefetch, probes).
    None,
}

/// A query that is answered later.
#[derive(Debug)]
pub struct Job {
    pub request: Vec<u8>,
    pub meta: Metadata,
    pub query: Query,
    pub edns: Option<ClientEdns>,
    pub transport: Transport,
    pub peer: SocketAddr,
    pub sink: Sink,
    pub log: Option<LogStyle>,
    pub loadbalance: bool,
    pub started: Instant,
    /// Where the answer is counted (`coredns_dns_*`).
    pub stats: Option<Arc<ZoneStats>>,
}

impl Job {
    /// The largest reply this client takes.
    pub fn limit(&self) -> usize {
        match self.transport {
            Transport::Udp => request::udp_limit(self.edns),
            Transport::Tcp => usize::from(u16::MAX),
        }
    }

    pub fn dnssec_ok(&self) -> bool {
        self.edns.is_some_and(|e| e.dnssec_ok)
    }
}

/// Encodes `answer` for `job`'s client, sends it, counts and logs it.
pub async fn deliver(job: &Job, answer: &mut Answer, metrics: &Metrics) {
    if job.loadbalance {
        answer.shuffle_addresses();
    }
    let mut out = Vec::with_capacity(512);
    let echo = Echo {
        meta: &job.meta,
        query: Some(&job.query),
        edns: job.edns,
    };
    let truncated = finish::write(&mut out, &echo, answer, job.limit());
    if matches!(job.sink, Sink::None) {
        return;
    }
    metrics.in_flight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    if out.is_empty() {
        return;
    }
    if let Some(stats) = &job.stats {
        stats.record(&Served {
            transport: job.transport,
            ipv6: job.peer.is_ipv6(),
            qtype: type_slot(job.query.query_type()),
            dnssec_ok: job.dnssec_ok(),
            request_size: job.request.len(),
            response_size: out.len(),
            rcode: answer.rcode,
            plugin: answer.plugin,
            truncated,
            expansion: None,
            nanos: job.started.elapsed().as_nanos() as u64,
        });
    }
    if let Some(style) = job.log {
        log::query(
            style,
            job.peer,
            job.transport,
            &job.request,
            &out,
            answer.rcode,
            job.started,
        );
    }
    match &job.sink {
        Sink::Udp(socket) => {
            if let Err(e) = socket.send_to(&out, job.peer) {
                tracing::debug!(target: "udp", "send to {} failed: {e}", job.peer);
            }
        }
        Sink::Tcp(tx) => {
            let mut frame = Vec::with_capacity(out.len() + 2);
            frame.extend_from_slice(&u16::try_from(out.len()).unwrap_or(u16::MAX).to_be_bytes());
            frame.extend_from_slice(&out);
            let _ = tx.send(frame).await;
        }
        Sink::None => {}
    }
}
