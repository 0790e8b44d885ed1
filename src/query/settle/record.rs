//! Telling of a served query, once, wherever its reply was written: the
//! zone's `coredns_dns_*` metrics, the query log line (`log`),
//! `dnstap`'s client messages and the block's `trace` spans. The worker
//! calls it for the replies it sends (fresh or replayed), a forwarding
//! task for the ones it sends later ([`super::super::defer::deliver`]).

use std::net::SocketAddr;
use std::time::Instant;

use crate::dnstap::Taps;
use crate::metrics::{Served, Transport, ZoneStats};
use crate::query::log;
use crate::query::metadata::Carried;
use crate::query::plugins::trace::Tracer;
use crate::query::reply::Summary;

/// Who else is told of a served query: the block's `dnstap` taps and its
/// `trace` tracer.
pub type Observers<'a> = (Option<&'a Taps>, Option<&'a Tracer>);

/// One query and the reply sent to it.
pub struct Exchange<'a> {
    pub peer: SocketAddr,
    pub transport: Transport,
    /// The client's message, as it came.
    pub request: &'a [u8],
    /// The reply's bytes, as sent.
    pub reply: &'a [u8],
    /// When the query arrived: durations count from here.
    pub started: Instant,
    /// The upstream `forward` last asked for it (`forward/upstream`).
    pub upstream: Option<SocketAddr>,
}

/// Tells the zone's metrics (`stats`), the query log (the summary's
/// style), `taps` and the block's `trace` of `x`, summarized by `summary`.
#[inline(always)]
pub fn record(summary: &Summary, stats: Option<&ZoneStats>, (taps, trace): Observers<'_>, x: &Exchange<'_>) {
    if let Some(stats) = stats {
        stats.record(&Served {
            transport: x.transport,
            ipv6: x.peer.is_ipv6(),
            qtype: summary.qtype,
            dnssec_ok: summary.dnssec_ok,
            request_size: x.request.len(),
            response_size: x.reply.len(),
            rcode: summary.rcode,
            plugin: summary.plugin,
            truncated: summary.truncated,
            expansion: summary.expansion,
            nanos: x.started.elapsed().as_nanos() as u64,
        });
    }
    let traced = trace.and_then(|t| Some((t, t.sample()?)));
    if let Some(style) = summary.log {
        let carried = Carried {
            trace_id: traced.map(|(t, id)| t.label(id)),
            upstream: x.upstream,
        };
        log::query(
            style,
            (x.peer, x.transport),
            x.request,
            x.reply,
            summary.rcode,
            x.started,
            carried,
        );
    }
    if let Some(taps) = taps {
        taps.served(x.peer, x.transport == Transport::Tcp, x.request, x.reply, x.started);
    }
    if let Some((trace, id)) = traced {
        let peer = (x.peer, x.transport == Transport::Tcp);
        trace.served(id, peer, x.request, (summary.rcode, summary.plugin), x.started);
    }
}
