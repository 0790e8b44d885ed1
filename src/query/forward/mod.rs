//! Everything a server block answers by asking someone else: its `forward`
//! directives (tried in order; `next RCODE` passes an answer on to the
//! next one) behind its `cache`.
//!
//! ```text
//!  worker ── hit replayed as bytes (hits) ──────────────► reply now
//!     ├──── cache hit (routed, then learned by hits) ──► reply now
//!     └──── miss: Job ─► task ─► join an identical query in flight, or
//!                                 forward (upstreams by policy, read_timeout each)
//!                                 ─► cache ─► reply to every waiter
//! ```
//!
//! Identical concurrent misses (same question, DO/CD bits and upstream
//! protocol) share one upstream query. An upstream that fails a query is
//! probed in the background (`. IN NS`, `health.rs`) until it answers, and
//! marked down after `max_fails` failures in a row; when every upstream is
//! down one is tried anyway. A
//! client always gets an answer or SERVFAIL within `read_timeout` × the
//! upstreams tried. A miss's task (joining, asking, replying to every
//! waiter) is `flight.rs`; each upstream (sockets, health) is `upstream.rs`.

mod attempts;
mod block;
pub mod cache;
pub mod cancel;
mod chain;
mod directive;
mod doh;
mod dot;
pub mod encrypted;
pub mod exchange;
mod flight;
mod grpc;
pub mod grpc_setup;
pub mod grpcwire;
mod h2;
mod health;
pub mod lanes;
pub mod outgoing;
pub mod print;
mod render;
mod rrsig;
pub mod setup;
pub mod upstream;

pub use block::Forwarding;
pub use directive::Forward;
pub use render::render;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use crate::metrics::Metrics;
use crate::query::defer::Job;
use crate::query::forward::cache::setup::StaleMode;
use crate::query::forward::cache::{Cache, Key, Lookup};
use crate::query::reply::Answer;
use upstream::Upstream;

/// What [`Forwarding::of`] reads of a server block: its `forward`
/// directives in order, its `cache`, its `errors` and its zones.
pub struct Setup<'a> {
    pub forward: &'a [setup::ForwardConfig],
    pub cache: Option<&'a cache::setup::CacheConfig>,
    pub errors: Option<&'a crate::query::errors::setup::ErrorsConfig>,
    /// `cancel`: the whole query's budget.
    pub cancel: Option<std::time::Duration>,
    pub zones: &'a [Name],
}

impl Forwarding {
    /// The forwarding of one server block (its `forward` directives in
    /// order, and its `cache`, by default for the block's zones); `None`
    /// when the block forwards nothing. Must be called inside the runtime
    /// that will run the tasks.
    pub fn of(block: Setup<'_>, label: String, metrics: Arc<Metrics>) -> Option<Forwarding> {
        if block.forward.is_empty() {
            return None;
        }
        // `grpc` runs after every `forward`, as in CoreDNS's plugin.cfg.
        let (forwards, grpcs): (Vec<_>, Vec<_>) = block.forward.iter().partition(|f| f.grpc.is_none());
        let chain = forwards
            .into_iter()
            .chain(grpcs)
            .cloned()
            .map(|f| Arc::new(Forward::new(f)))
            .collect();
        let mut cache = block.cache.cloned();
        if let Some(c) = cache.as_mut().filter(|c| c.zones.is_empty()) {
            c.zones = block.zones.to_vec();
        }
        let mut forwarding = Forwarding::new(label, chain, cache.map(Cache::new), metrics);
        forwarding.errors = block.errors.map(crate::query::errors::ErrorLog::new);
        forwarding.budget = block.cancel.map_or(attempts::BUDGET, |c| c.min(attempts::BUDGET));
        Some(forwarding)
    }

    /// Must be called inside the runtime that will run the tasks.
    pub fn new(server: String, chain: Vec<Arc<Forward>>, cache: Option<Cache>, metrics: Arc<Metrics>) -> Forwarding {
        // `force_tcp` keeps its connections shared by the shared lanes
        let local = chain
            .iter()
            .all(|f| !f.cfg.force_tcp && f.upstreams.iter().all(|u| u.encrypted.is_none()));
        Forwarding {
            local,
            server,
            chain,
            cache,
            flights: Mutex::default(),
            runtime: tokio::runtime::Handle::current(),
            metrics,
            max_concurrent_rejects: AtomicU64::new(0),
            healthcheck_broken: AtomicU64::new(0),
            loop_detected: AtomicU64::new(0),
            probe: Mutex::new((None, Vec::new())),
            errors: None,
            taps: None,
            budget: attempts::BUDGET,
        }
    }

    /// Whether some `forward` of this block takes `qname`.
    pub fn handles(&self, qname: &Name) -> bool {
        self.chain.iter().any(|f| f.handles(qname))
    }

    /// Answers from the cache if it can (a fresh entry, or a stale one with
    /// `serve_stale immediate`, which also starts a refresh).
    pub fn cached(self: &Arc<Self>, query: &Query, dnssec_ok: bool, cd: bool, out: &mut Answer) -> bool {
        let Some(cache) = &self.cache else { return false };
        let key = Cache::key(query, dnssec_ok, cd);
        match cache.get(&key) {
            Lookup::Fresh { entry, prefetch } => {
                cache.fill_hit(&entry, out);
                if prefetch {
                    self.refresh(query.clone(), dnssec_ok, cd, Some(entry));
                }
                true
            }
            Lookup::Stale(entry, StaleMode::Immediate) => {
                cache.stats.add(cache::Stat::ServedStale);
                cache.fill_hit(&entry, out);
                if cache.claim_refresh(&entry) {
                    self.refresh(query.clone(), dnssec_ok, cd, Some(entry));
                }
                true
            }
            // verify: ask first, unless a failed refresh is being rechecked
            Lookup::Stale(entry, StaleMode::Verify) if cache.holds_stale(&entry) => {
                cache.stats.add(cache::Stat::ServedStale);
                cache.fill_hit(&entry, out);
                true
            }
            Lookup::Stale(_, StaleMode::Verify) | Lookup::Miss => false,
        }
    }

    /// Refreshes a cache entry in the background (nobody waits).
    pub(crate) fn refresh(
        self: &Arc<Self>,
        query: Query,
        dnssec_ok: bool,
        cd: bool,
        entry: Option<Arc<crate::query::forward::cache::Entry>>,
    ) {
        let this = self.clone();
        self.runtime.spawn(async move {
            let Some(request) = message(&query, dnssec_ok, cd) else {
                return;
            };
            let got = this
                .resolve(
                    (&request, &query),
                    Cache::key(&query, dnssec_ok, cd),
                    false,
                    false,
                    &mut None,
                )
                .await;
            if let Some(e) = entry {
                Cache::refreshed(&e, got.is_err());
            }
        });
    }

    /// Takes a query that missed the cache: answered from a task on this
    /// thread's forwarding lane (`lanes.rs`): a UDP worker's own runtime
    /// when its misses run there, else a shared lane. The task's future is
    /// boxed here, once: tokio's task cell then holds a pointer, where it
    /// copied the whole future (a few KB: the job and every await's state)
    /// three times into the cell it allocates (callgrind: 1.7k
    /// instructions of memcpy a miss).
    pub fn submit(self: &Arc<Self>, job: Job) {
        let this = self.clone();
        let metrics = self.metrics.clone();
        let task = Box::pin(async move {
            let guarded = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(this.run(job)));
            if guarded.await.is_err() {
                metrics.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(target: "forward", "panic while forwarding a query; still serving");
            }
        });
        if self.local && lanes::local() {
            // this worker's own runtime, on this thread: a local push
            tokio::spawn(task);
        } else {
            lanes::lane().unwrap_or(&self.runtime).spawn(task);
        }
    }

    /// One more question asked for a client (the second question of a plugin after the answer): from the cache,
    /// else through the chain.
    async fn ask(self: &Arc<Self>, query: &Query, dnssec_ok: bool, cd: bool, tcp: bool) -> Answer {
        let mut out = Answer::default();
        if self.cached(query, dnssec_ok, cd, &mut out) {
            return out;
        }
        let Some(request) = message(query, dnssec_ok, cd) else {
            out.error(ResponseCode::ServFail);
            return out;
        };
        match self
            .resolve(
                (&request, query),
                Cache::key(query, dnssec_ok, cd),
                tcp,
                true,
                &mut None,
            )
            .await
        {
            Ok(m) => out.relay(&m),
            Err(rcode) => out.error(rcode),
        }
        out
    }

    /// Forwards `request` through the chain and caches the outcome:
    /// the answer, or the rcode to reply with when there is none. A
    /// client's query (`report`) that failed goes to the `errors` plugin.
    /// `asked`: the last upstream asked (`forward/upstream`).
    async fn resolve(
        &self,
        (request, query): (&[u8], &Query),
        key: Key,
        tcp: bool,
        report: bool,
        asked: &mut Option<std::net::SocketAddr>,
    ) -> Result<Message, ResponseCode> {
        let mut last = Err(ResponseCode::ServFail);
        let mut handled = false;
        for fw in self.chain.iter().filter(|f| f.handles(query.name())) {
            handled = true;
            if fw.cfg.max_concurrent > 0 && fw.inflight.load(Ordering::Relaxed) >= fw.cfg.max_concurrent {
                self.max_concurrent_rejects.fetch_add(1, Ordering::Relaxed);
                if let Some(log) = self.errors.as_ref().filter(|_| report) {
                    let why = format!("concurrent queries exceeded maximum {}", fw.cfg.max_concurrent);
                    log.report(ResponseCode::Refused, query, &why);
                }
                return Err(ResponseCode::Refused);
            }
            fw.inflight.fetch_add(1, Ordering::Relaxed);
            let got = self.forward_one(fw, (request, query), tcp, asked).await;
            fw.inflight.fetch_sub(1, Ordering::Relaxed);
            match got {
                Ok(m) if fw.passes_on(&m) => last = Ok(m),
                Ok(m) => {
                    last = Ok(m);
                    break;
                }
                Err(_) if fw.falls_through(query.name()) => last = Err(ResponseCode::ServFail),
                Err(failed) => {
                    // No answer is SERVFAIL (`Failed::rcode`): only answers go on (`next`).
                    let rcode = failed.rcode();
                    if let Some(log) = self.errors.as_ref().filter(|_| report) {
                        log.report(rcode, query, &failed.why);
                    }
                    last = Err(rcode);
                    break;
                }
            }
        }
        if !handled {
            return Err(ResponseCode::Refused);
        }
        if let (Ok(m), Some(cache)) = (&last, &self.cache) {
            // An error (SERVFAIL, REFUSED...) or a truncated answer is a
            // failed refresh of an entry `serve_stale` holds: it neither
            // replaces the entry nor reaches the client, as in CoreDNS.
            let usable = matches!(m.metadata.response_code, ResponseCode::NoError | ResponseCode::NXDomain);
            if (!usable || m.metadata.truncation) && cache.expired(&key, std::time::Duration::MAX).is_some() {
                return Err(m.metadata.response_code);
            }
            cache.put(key, query, m);
        }
        last
    }

    pub(super) fn note_probe(&self, query: &Query, up: &Arc<Upstream>) {
        if query.query_type() != RecordType::HINFO {
            return;
        }
        if let Ok(mut probe) = self.probe.lock() {
            if probe.0.as_ref() == Some(query.name()) {
                probe.1.push(up.clone());
            }
        }
    }

    /// The loop probe came back: stop forwarding to the upstreams it went to.
    pub fn loop_found(&self) -> Vec<std::net::SocketAddr> {
        self.loop_detected.fetch_add(1, Ordering::Relaxed);
        let ups = self.probe.lock().map(|p| p.1.clone()).unwrap_or_default();
        for up in &ups {
            up.looping.store(true, Ordering::Relaxed);
        }
        ups.iter().map(|u| u.addr).collect()
    }
}

/// An upstream query for `query` with RD and AD, and CD and DO as given.
fn message(query: &Query, dnssec_ok: bool, cd: bool) -> Option<Vec<u8>> {
    let mut m = Message::new(fastrand::u16(..), MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.metadata.checking_disabled = cd;
    m.metadata.authentic_data = true; // the entry keeps the upstream's AD (see `attempts::ask_authentic`)
    m.add_query(query.clone());
    if dnssec_ok {
        let mut edns = hickory_proto::op::Edns::new();
        edns.set_max_payload(crate::query::reply::echo::OUR_PAYLOAD);
        edns.set_dnssec_ok(true);
        m.edns = Some(edns);
    }
    m.to_vec().ok()
}
