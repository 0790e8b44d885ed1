//! Queries answered later: forwarded names leave the synchronous path as a
//! [`Job`] and are answered from a task through the [`Sink`] they came
//! from (the worker's UDP socket, or the TCP connection's writer).

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{MessageType, Metadata, OpCode, Query, ResponseCode};
use hickory_proto::rr::Record;

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
    /// When another name than the client's is forwarded (autopath, an
    /// ExternalName's target): how its answer is put under the client's.
    pub chase: Option<Chase>,
    pub edns: Option<ClientEdns>,
    pub transport: Transport,
    pub peer: SocketAddr,
    pub sink: Sink,
    pub log: Option<LogStyle>,
    pub loadbalance: bool,
    pub started: Instant,
    /// Where the answer is counted (`coredns_dns_*`).
    pub stats: Option<Arc<ZoneStats>>,
    /// An AAAA question `dns64` translates (asking A) when the reply has no AAAA.
    pub dns64: Option<Arc<super::dns64::Dns64>>,
}

/// A forwarded name that is not the client's: the answer to it is put
/// under the client's own question.
#[derive(Debug)]
pub struct Chase {
    /// The client's question, echoed in the reply.
    pub asked: Query,
    /// The CNAME records leading from the asked name to the forwarded one.
    pub prefix: Vec<Record>,
    pub kind: ChaseKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaseKind {
    /// The rest of the search walk: a name that exists is answered under
    /// the CNAME, anything else is NXDOMAIN for the asked name.
    Autopath,
    /// A CNAME's target outside the zone (an ExternalName Service, a
    /// `k8s_external` ingress hostname), as CoreDNS's upstream lookup: the
    /// CNAME, then whatever records the target has (none when it fails),
    /// NOERROR, authoritative, answered by this plugin; an upstream's TC
    /// is kept.
    Target(crate::metrics::Plugin),
}

impl Chase {
    fn put_under(&self, answer: &mut Answer, metrics: &Metrics) {
        match self.kind {
            ChaseKind::Autopath if answer.rcode == ResponseCode::NoError => {
                answer.answers.splice(0..0, self.prefix.iter().cloned());
                answer.plugin = crate::metrics::Plugin::Autopath;
                metrics
                    .autopath_success
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            ChaseKind::Autopath => answer.error(ResponseCode::NXDomain),
            ChaseKind::Target(plugin) => {
                let (found, truncated) = (std::mem::take(&mut answer.answers), answer.truncated);
                answer.error(ResponseCode::NoError);
                answer.answers = self.prefix.iter().cloned().chain(found).collect();
                (answer.truncated, answer.authoritative) = (truncated, true);
                answer.plugin = plugin;
            }
        }
    }
}

impl Job {
    pub fn dnssec_ok(&self) -> bool {
        self.edns.is_some_and(|e| e.dnssec_ok)
    }
}

/// An upstream message asking `query` with the client's RD, CD and DO.
pub fn request_for(query: &Query, client: &request::Request) -> Vec<u8> {
    let mut m = hickory_proto::op::Message::new(client.meta.id, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = client.meta.recursion_desired;
    m.metadata.checking_disabled = client.meta.checking_disabled;
    m.add_query(query.clone());
    if let Some(e) = client.edns {
        let mut edns = hickory_proto::op::Edns::new();
        edns.set_max_payload(finish::OUR_PAYLOAD).set_dnssec_ok(e.dnssec_ok);
        m.edns = Some(edns);
    }
    m.to_vec().unwrap_or_default()
}

/// Encodes `answer` for `job`'s client, sends it, counts and logs it.
pub async fn deliver(job: &Job, answer: &mut Answer, metrics: &Metrics) {
    if job.loadbalance {
        answer.shuffle_addresses();
    }
    if let Some(chase) = &job.chase {
        chase.put_under(answer, metrics);
    }
    let mut out = Vec::with_capacity(512);
    let echo = Echo {
        meta: &job.meta,
        query: Some(job.chase.as_ref().map_or(&job.query, |c| &c.asked)),
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
        Sink::Tcp(pending) => pending.send(&out).await,
        Sink::None => {}
    }
}
