//! The whole query path over the demo cluster, bytes in → bytes out, and
//! what every reply must be: strict, echoing the query, within the
//! client's limit, byte for byte what hickory's encoder writes for the
//! same answer, and the same whether a fresh worker or one with a warm
//! memo answers. Each input also goes through the request parser's check
//! ([`super::request`]) and the cache-hit replay ([`super::hits`]).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use hickory_proto::op::Message;

use super::hits::CacheHits;
use super::{demo_handler, parse_strict};
use crate::metrics::Transport;
use crate::query::defer::Sink;
use crate::query::finish::{self, Echo};
use crate::query::request::{self, Checked};
use crate::query::{Handler, Scratch};

/// The demo cluster's handler, with one worker's scratch space per
/// transport kept across inputs (so the memo replays across queries).
pub struct QueryPath {
    handler: Handler,
    /// The same cluster with every answer taking the Record path: what
    /// the direct writer ([`crate::query::cluster::direct`]) must equal.
    records: Handler,
    warm: [Scratch; 2],
    hits: CacheHits,
}

impl QueryPath {
    /// Over the demo cluster in `root`/zones.
    pub fn demo(root: &Path) -> QueryPath {
        let handler = demo_handler(root, true);
        QueryPath {
            records: super::without_direct(&handler),
            handler,
            warm: [Scratch::default(), Scratch::default()],
            hits: CacheHits::new(),
        }
    }

    /// Answers `data` over UDP and TCP, by a worker with an empty memo
    /// twice (the second from its memo), then twice by the warm one
    /// (from its memo, if an earlier input's spelling of the question
    /// left an entry). Every reply parses strictly ([`parse_strict`]),
    /// carries the query's ID and question (with its spelling), and fits
    /// the client's limit: 512 bytes over UDP without EDNS, our 1232 with
    /// it, 65535 over TCP. The fresh reply is the Record path's bytes,
    /// and those are hickory's for the Record path's answer (so a reply
    /// written straight from the snapshot is held to hickory's bytes
    /// too); its replay is the same bytes; the warm worker's is the
    /// same message up to the case of names. Nothing panics.
    pub fn check(&mut self, data: &[u8]) {
        super::request::parser_agrees(data);
        let peer: SocketAddr = SocketAddr::from(([10, 1, 2, 3], 5353));
        let sink = || Sink::None;
        let query = Message::from_vec(data).ok();
        for (i, transport) in [Transport::Udp, Transport::Tcp].into_iter().enumerate() {
            let mut fresh = Scratch::default();
            let now = Instant::now();
            let answered = self
                .handler
                .handle_guarded(data, peer, transport, &mut fresh, &sink, now);
            assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
            let mut records = Scratch::default();
            let by_records = self
                .records
                .handle_guarded(data, peer, transport, &mut records, &sink, now);
            assert_eq!(by_records, answered, "the Record path answers when the direct one does");
            if answered {
                reply_holds(data, &fresh.out, query.as_ref(), transport);
                hickory_writes_the_same(data, &records, transport);
                assert!(
                    fresh.out == records.out,
                    "over {transport:?}, the direct writer's bytes are not the Record path's:\n{:?}\nRecord path:\n{:?}",
                    Message::from_vec(&fresh.out),
                    Message::from_vec(&records.out)
                );
            }
            // The same worker again: from its memo, built for this spelling.
            let first = std::mem::take(&mut fresh.out);
            let again = self
                .handler
                .handle_guarded(data, peer, transport, &mut fresh, &sink, now);
            assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
            assert_eq!(again, answered, "answered again");
            assert!(
                !answered || fresh.out == first,
                "over {transport:?}, a replay is the fresh reply:\n{:?}\nfresh:\n{:?}",
                Message::from_vec(&fresh.out),
                Message::from_vec(&first)
            );
            for _ in 0..2 {
                let warm = &mut self.warm[i];
                let again = self.handler.handle_guarded(data, peer, transport, warm, &sink, now);
                assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
                assert_eq!(again, answered, "a warm worker answers when a fresh one does");
                if answered {
                    reply_holds(data, &warm.out, query.as_ref(), transport);
                    same_but_case(&warm.out, &first, transport);
                }
            }
        }
        self.hits.check(data);
    }
}

/// A reply replayed from a memo entry built for another spelling of the
/// question is the fresh reply up to the case of names: the question's
/// spelling is carried into every name that points at it, so the bytes
/// (and lengths) differ where compression met a name spelled otherwise.
fn same_but_case(replayed: &[u8], fresh: &[u8], transport: Transport) {
    if replayed == fresh {
        return;
    }
    let (a, b) = (parse_strict(replayed), parse_strict(fresh));
    assert!(
        a.is_ok() && a == b,
        "over {transport:?}, a warm worker's reply is a fresh one's (names without case):\n{a:?}\nfresh:\n{b:?}"
    );
}

/// The properties of any reply `out` to `data` over `transport`.
pub(super) fn reply_holds(data: &[u8], out: &[u8], query: Option<&Message>, transport: Transport) {
    let parsed = parse_strict(out).unwrap_or_else(|e| panic!("reply over {transport:?}: {e}"));
    assert_eq!(out[..2], data[..2], "the reply's ID is the query's");
    let limit = match transport {
        Transport::Udp => 1232,
        Transport::Tcp => 65535,
    };
    assert!(out.len() <= limit, "{} bytes over {transport:?}", out.len());
    let Some(query) = query else { return };
    if let (Some(q), Some(r), 1) = (query.queries.first(), parsed.queries.first(), query.queries.len()) {
        assert!(q.name().eq_case(r.name()), "the question is echoed with its spelling");
        assert_eq!(q.query_type(), r.query_type(), "the question's type is echoed");
    }
    if query.edns.is_none() && transport == Transport::Udp {
        assert!(out.len() <= 512, "no EDNS: at most 512 bytes");
    }
}

/// Calls `f` with what the query path echoed in its reply to `data` (the
/// header, the question, the client's EDNS under the answer's `bufsize`)
/// and the reply's size limit over `transport`: what an encoder needs to
/// write the reply again from `scratch.answer`.
pub fn with_echo<R>(data: &[u8], scratch: &Scratch, transport: Transport, f: impl FnOnce(&Echo<'_>, usize) -> R) -> R {
    let (meta, query, edns) = match request::check(data) {
        Checked::Query(r) => (r.meta, Some(r.query), request::capped(r.edns, scratch.answer.bufsize)),
        Checked::Reject { meta, query, edns, .. } => (meta, query, edns),
        Checked::Drop => panic!("a dropped query was answered"),
    };
    let echo = Echo {
        meta: &meta,
        query: query.as_ref(),
        edns,
    };
    f(&echo, request::limit(transport, edns))
}

/// The reply the query path wrote for `data` is what hickory's encoder
/// writes for the answer it built.
pub(super) fn hickory_writes_the_same(data: &[u8], scratch: &Scratch, transport: Transport) {
    let mut hickory = Vec::new();
    with_echo(data, scratch, transport, |echo, limit| {
        finish::write_with_hickory(&mut hickory, echo, &scratch.answer, limit)
    });
    assert!(
        hickory == scratch.out,
        "over {transport:?}, hickory writes other bytes:\n{:?}\nours:\n{:?}",
        Message::from_vec(&hickory),
        Message::from_vec(&scratch.out)
    );
}
