//! Cache hits replayed as bytes ([`crate::query::replay::hits`]) against
//! the full path's answer from the same cache entry, on any bytes: a
//! block forwarding everything with a `cache`, an upstream answer put in
//! the cache for the input's question (its shape and size chosen by the
//! input's ID: addresses, a CNAME with addresses, NXDOMAIN or NODATA with
//! the SOA), then the question asked by a fresh worker (the full path)
//! and twice by a warm one (learned, then replayed). The replay keeps the
//! query's ID, flags and question spelling, and its TTLs are the time the
//! entry has left: it is the full path's reply byte for byte.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::reply::{hickory_writes_the_same, reply_holds};
use crate::metrics::{Metrics, Transport};
use crate::query::defer::Sink;
use crate::query::forward::cache::Cache;
use crate::query::forward::Forwarding;
use crate::query::reply::{self as records, Zone};
use crate::query::request::{self, Triage};
use crate::query::{Block, Handler, Router, Scratch};

/// The block's `cache` caps every TTL at this.
const CACHE_TTL: u32 = 30;

/// A forwarding block with a cache (its upstream is never asked: a miss
/// is shed at an in-flight cap of 0), and one warm worker per transport.
pub struct CacheHits {
    /// The forwarding's runtime (kept alive; nothing is spawned on it).
    _runtime: tokio::runtime::Runtime,
    handler: Handler,
    forwarding: Arc<Forwarding>,
    warm: [Scratch; 2],
}

impl Default for CacheHits {
    fn default() -> Self {
        CacheHits::new()
    }
}

impl CacheHits {
    pub fn new() -> CacheHits {
        let text = format!(".:53 {{\n    forward . 127.0.0.1:9\n    cache {CACHE_TTL}\n}}\n");
        let config = crate::config::load_str(std::path::Path::new("Corefile"), &text, 53).expect("the Corefile loads");
        let server = &config.servers[0];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let metrics = Arc::new(Metrics::default());
        let forwarding = {
            let _inside = runtime.enter();
            Arc::new(Forwarding::of(server.forwarding(), "dns://:53".into(), metrics.clone()).expect("forwards"))
        };
        let block = Block {
            forwarding: Some(forwarding.clone()),
            ..Block::new(server.zones.clone())
        };
        let mut router = Router::new(vec![block], Vec::new());
        router.in_flight = 0;
        CacheHits {
            _runtime: runtime,
            handler: Handler::new(router, metrics),
            forwarding,
            warm: [Scratch::default(), Scratch::default()],
        }
    }

    /// Puts an answer to `data`'s question in the cache and checks the
    /// replies to it (see the module doc).
    pub fn check(&mut self, data: &[u8]) {
        let Triage::Query(req) = request::check(data) else {
            return;
        };
        let dnssec_ok = req.edns.is_some_and(|e| e.dnssec_ok);
        let key = Cache::key(&req.query, dnssec_ok, req.meta.checking_disabled);
        let Some(cache) = self.forwarding.cache.as_ref() else {
            return;
        };
        let before = cache.peek(&key);
        cache.put(key.clone(), &req.query, &upstream(&req.query, data));
        let put = cache
            .peek(&key)
            .filter(|now| before.as_ref().is_none_or(|b| !Arc::ptr_eq(b, now)));
        if put.is_none() {
            return; // not cacheable (an earlier input's entry may still be there)
        }
        let peer = SocketAddr::from(([10, 1, 2, 3], 5353));
        let sink = || Sink::None;
        let parsed = Message::from_vec(data).ok();
        let (now, router) = (Instant::now(), self.handler.router.load_full());
        for (i, transport) in [Transport::Udp, Transport::Tcp].into_iter().enumerate() {
            let mut fresh = Scratch::default();
            if !self
                .handler
                .handle_guarded(&router, data, (peer, transport), &mut fresh, &sink, now)
            {
                assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
                continue; // not routed to the cache (shed, never forwarded)
            }
            assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
            reply_holds(data, &fresh.out, parsed.as_ref(), transport);
            hickory_writes_the_same(data, &fresh, transport);
            if fresh.answer.tags.plugin != crate::metrics::Plugin::Cache {
                continue; // answered before the cache (ANY: RFC 8482)
            }
            for _ in 0..2 {
                let warm = &mut self.warm[i];
                assert!(self
                    .handler
                    .handle_guarded(&router, data, (peer, transport), warm, &sink, now));
                assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
                ttls_are_left(&warm.out, 0);
                assert!(
                    warm.out == fresh.out,
                    "over {transport:?}, a replayed cache hit is the full path's reply:\n{:?}\nfull path:\n{:?}",
                    Message::from_vec(&warm.out),
                    Message::from_vec(&fresh.out)
                );
            }
            if replayable(data) {
                self.counts_down(i, data, (peer, transport), &fresh.out, now);
            }
        }
    }

    /// Later, the replay's TTLs count down and nothing else changes (an
    /// input the full path answers without reading the clock).
    fn counts_down(
        &mut self,
        i: usize,
        data: &[u8],
        (peer, transport): (SocketAddr, Transport),
        fresh: &[u8],
        now: Instant,
    ) {
        let (sink, router) = (|| Sink::None, self.handler.router.load_full());
        let later = u32::from(data[1] % 29) + 1;
        let at = now + Duration::from_secs(u64::from(later));
        let warm = &mut self.warm[i];
        assert!(self
            .handler
            .handle_guarded(&router, data, (peer, transport), warm, &sink, at));
        assert_eq!(self.handler.metrics.panics.load(Ordering::Relaxed), 0, "a panic");
        let mut replayed = ttls_are_left(&warm.out, later);
        let fresh = super::strict::parse_strict(fresh).expect("strict");
        for r in records(&mut replayed) {
            r.ttl += later;
        }
        assert_eq!(replayed, fresh, "{later} s later, only the TTLs changed");
    }
}

/// Whether a cache hit for `data` is replayed as bytes here: a plain
/// query ([`request::parse`]), not ANY or the loop probe's HINFO.
fn replayable(data: &[u8]) -> bool {
    request::parse(data).is_some_and(|w| !matches!(RecordType::from(w.qtype), RecordType::ANY | RecordType::HINFO))
}

/// The records of `reply` that have a TTL (all but OPT).
fn records(reply: &mut Message) -> impl Iterator<Item = &mut hickory_proto::rr::Record> {
    let sections = reply.answers.iter_mut().chain(&mut reply.authorities);
    sections
        .chain(&mut reply.additionals)
        .filter(|r| r.record_type() != RecordType::OPT)
}

/// Every TTL of a reply from a cache entry just put, `later` seconds
/// on, is the time the entry has left: the cache's cap less `later` (or
/// one less, across a second's turn). Returns the reply.
fn ttls_are_left(out: &[u8], later: u32) -> Message {
    let mut reply = super::strict::parse_strict(out).expect("strict");
    let left = CACHE_TTL - later;
    for r in records(&mut reply) {
        assert!((left - 1..=left).contains(&r.ttl), "TTL {} of {r}, {later} s on", r.ttl);
    }
    reply
}

/// An upstream's answer to `query`, shaped by the input's ID: its low
/// byte picks how many records (1–6), its high byte what kind.
fn upstream(query: &Query, data: &[u8]) -> Message {
    let (count, kind) = (1 + data[1] % 6, data[0] % 4);
    let mut m = Message::new(1, MessageType::Response, OpCode::Query);
    m.metadata.recursion_available = true;
    m.add_query(query.clone());
    let owner = query.name();
    let zone = Zone::new(Name::from_ascii("example.org.").unwrap_or_else(|_| Name::root()));
    let qtype = query.query_type();
    let mut owner_of_addresses = owner.clone();
    match kind {
        0 | 1 => {
            if kind == 1 {
                let target = Name::from_ascii("target.example.org.").unwrap_or_else(|_| Name::root());
                m.answers.push(records::cname(owner, 300, target.clone()));
                owner_of_addresses = target;
            }
            for i in 1..=count {
                let addr = match qtype {
                    RecordType::AAAA => std::net::IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(i)]),
                    _ => std::net::IpAddr::from([192, 0, 2, i]),
                };
                match records::address(&owner_of_addresses, 300, addr, qtype) {
                    Some(record) => m.answers.push(record),
                    None if kind == 0 => m.answers.push(records::txt(owner, 300, &format!("text {i}"))),
                    None => {}
                }
            }
        }
        _ => {
            if kind == 2 {
                m.metadata.response_code = ResponseCode::NXDomain;
            }
            m.authorities.push(records::soa(&zone, 60, u32::from(count)));
        }
    }
    m
}
