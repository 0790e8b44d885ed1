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

use super::demo::demo_handler;
use super::hits::CacheHits;
use super::reply::{hickory_writes_the_same, reply_holds};
use super::strict::parse_strict;
use crate::metrics::Transport;
use crate::query::defer::Sink;
use crate::query::{Handler, Scratch};

/// The demo cluster's handler, with one worker's scratch space per
/// transport kept across inputs (so the memo replays across queries).
pub struct QueryPath {
    handler: Handler,
    /// The same cluster with every answer taking the Record path: what
    /// the direct writer ([`crate::query::plugins::cluster::direct`]) must equal.
    records: Handler,
    warm: [Scratch; 2],
    hits: CacheHits,
}

impl QueryPath {
    /// Over the demo cluster in `root`/zones.
    pub fn demo(root: &Path) -> QueryPath {
        let handler = demo_handler(root, true);
        QueryPath {
            records: super::demo::without_direct(&handler),
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
        let (router, records_router) = (self.handler.router.load_full(), self.records.router.load_full());
        let query = Message::from_vec(data).ok();
        for (i, transport) in [Transport::Udp, Transport::Tcp].into_iter().enumerate() {
            let mut fresh = Scratch::default();
            let now = Instant::now();
            let answered = self
                .handler
                .handle_guarded(&router, data, (peer, transport), &mut fresh, &sink, now);
            assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
            let mut records = Scratch::default();
            let by_records =
                self.records
                    .handle_guarded(&records_router, data, (peer, transport), &mut records, &sink, now);
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
                .handle_guarded(&router, data, (peer, transport), &mut fresh, &sink, now);
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
                let again = self
                    .handler
                    .handle_guarded(&router, data, (peer, transport), warm, &sink, now);
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
