//! The task of one query that missed the cache: it leads a flight (or
//! joins the identical one already in flight), asks upstream once, and
//! answers every waiter from what came back: the entry the cache kept, the
//! message as relayed, or a stale entry when the upstreams failed; an
//! `autopath` name's NXDOMAIN walks on to the next search name (answered
//! there, or handed to the task of that name); then it adds what the
//! router left for later (a `rewrite cname` target's
//! records, the amending of the plugin after the answer).

use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::RecordType;

use super::block::Forwarding;
use super::cache::{self, Cache, Key, Lookup};
use crate::metrics::{Plugin, Transport};
use crate::query::defer::{deliver, walk_on, Job};
use crate::query::forward::cache::setup::StaleMode;
use crate::query::reply::Answer;

impl Forwarding {
    /// Answers `job` and every identical query that arrives while its
    /// upstream query is in flight (or joins one already in flight).
    pub(super) async fn run(self: Arc<Self>, job: Job) {
        let tcp = self.over_tcp(&job);
        let key = Cache::key(&job.query, job.dnssec_ok(), job.meta.checking_disabled);
        let flight = (key.clone(), tcp);
        let Some(job) = self.lead(job, &flight) else {
            return;
        };
        // `serve_stale verify TIMEOUT` of an entry it may serve
        let verify = self.cache.as_ref().and_then(|c| match c.cfg.serve_stale {
            Some((window, StaleMode::Verify)) if !c.cfg.verify_timeout.is_zero() => {
                Some((c.expired(&key, window)?, c.cfg.verify_timeout))
            }
            _ => None,
        });
        let mut asked = None;
        let (result, kept) = match verify {
            Some((entry, timeout)) => self.verify_within(&job, key.clone(), tcp, entry, timeout).await,
            None => {
                let request = (&job.request[..], &job.query);
                let result = self.resolve(request, key.clone(), tcp, true, &mut asked).await;
                let kept = self.kept(&result, &key);
                (result, kept)
            }
        };
        let waiters = self
            .flights
            .lock()
            .ok()
            .and_then(|mut f| f.remove(&flight))
            .unwrap_or_default();
        for mut job in std::iter::once(job).chain(waiters) {
            job.upstream = asked;
            let tags = crate::query::reply::Tags {
                log: job.log,
                ..Default::default()
            };
            let mut answer = Answer {
                tags,
                ..Default::default()
            };
            self.fill(&result, kept.as_ref(), &mut answer);
            if answer.tags.plugin == Plugin::Forward && self.by_grpc(job.query.name()) {
                answer.tags.plugin = Plugin::Grpc;
            }
            // an `autopath` name that came back NXDOMAIN: the walk goes on
            let Some(job) = walk_on(job, &mut answer, &self.metrics) else {
                continue;
            };
            self.complete(&job, &mut answer, tcp).await;
            deliver(&job, &mut answer, &self.metrics).await;
        }
    }

    /// Whether `job` goes upstream over TCP (`force_tcp`, or a TCP client
    /// without `prefer_udp`), by the first `forward` that takes it.
    fn over_tcp(&self, job: &Job) -> bool {
        let forward = self.chain.iter().find(|f| f.handles(job.query.name()));
        forward.is_some_and(|f| f.cfg.force_tcp || (job.transport == Transport::Tcp && !f.cfg.prefer_udp))
    }

    /// Whether the answer for `qname` came from a `grpc` directive: no
    /// `forward` of the block takes the name (one that does answers first,
    /// as `grpc` runs after every `forward`).
    fn by_grpc(&self, qname: &hickory_proto::rr::Name) -> bool {
        let first = self.chain.iter().find(|f| f.handles(qname));
        first.is_some_and(|f| f.cfg.grpc.is_some())
    }

    /// `job` back when it leads `flight` (nothing identical in flight);
    /// `None` when it joined the waiters of the one in flight.
    fn lead(&self, job: Job, flight: &(Key, bool)) -> Option<Job> {
        let mut flights = self.flights.lock().ok()?;
        if let Some(waiting) = flights.get_mut(flight) {
            waiting.push(job);
            return None;
        }
        flights.insert(flight.clone(), Vec::new());
        Some(job)
    }

    /// `serve_stale verify TIMEOUT` of a stale `entry`: the upstreams'
    /// answer if it comes within `timeout`, else the stale entry; the
    /// refresh goes on in the background (a query meanwhile is served the
    /// stale entry, as [`Cache::holds_stale`] says, and its failure starts
    /// the recheck period).
    async fn verify_within(
        self: &Arc<Self>,
        job: &Job,
        key: Key,
        tcp: bool,
        entry: Arc<cache::Entry>,
        timeout: Duration,
    ) -> (Result<Message, ResponseCode>, Option<Arc<cache::Entry>>) {
        let Some(cache) = self.cache.as_ref() else {
            return (Err(ResponseCode::ServFail), None);
        };
        if !cache.claim_refresh(&entry) {
            // a refresh is in flight, or the recheck period holds
            cache.stats.add(cache::Stat::ServedStale);
            return (Err(ResponseCode::ServFail), Some(entry));
        }
        let (this, request, query, refreshing) = (self.clone(), job.request.clone(), job.query.clone(), entry.clone());
        let k = key.clone();
        let verify = self.runtime.spawn(async move {
            let got = this.resolve((&request, &query), k, tcp, true, &mut None).await;
            Cache::refreshed(&refreshing, got.is_err());
            got
        });
        match tokio::time::timeout(timeout, verify).await {
            Ok(Ok(result)) => {
                let kept = self.kept(&result, &key);
                (result, kept)
            }
            _ => {
                cache.stats.add(cache::Stat::ServedStale);
                (Err(ResponseCode::ServFail), Some(entry))
            }
        }
    }

    /// The cache entry for `key` after `result`: the one just stored (its
    /// TTL cap applies to this first answer too), or on failure a stale
    /// one to serve instead.
    fn kept(&self, result: &Result<Message, ResponseCode>, key: &Key) -> Option<Arc<cache::Entry>> {
        let cache = self.cache.as_ref()?;
        if result.is_ok() {
            return cache.peek(key);
        }
        match cache.get(key) {
            Lookup::Stale(e, _) => {
                cache.stats.add(cache::Stat::ServedStale);
                cache::Cache::failed(&e);
                Some(e)
            }
            _ => None,
        }
    }

    /// Writes the upstream's `result` into `answer`: as the cache `kept`
    /// it, relayed as it came, or the stale entry kept in its place.
    fn fill(&self, result: &Result<Message, ResponseCode>, kept: Option<&Arc<cache::Entry>>, answer: &mut Answer) {
        answer.tags.plugin = Plugin::Forward;
        match (result, kept.zip(self.cache.as_ref())) {
            (Ok(_), Some((entry, cache))) => cache.fill(entry, answer),
            (Ok(msg), None) => {
                answer.relay(msg);
                if let Some(cache) = &self.cache {
                    uniform_ttls(&cache.cfg, answer);
                }
            }
            (Err(_), Some((entry, cache))) => {
                answer.tags.plugin = Plugin::Cache;
                cache.fill_hit(entry, answer);
            }
            (Err(rcode), None) => answer.error(*rcode),
        }
    }

    /// What the router left for after the upstream's answer: the records
    /// of a `rewrite cname` target, and the plugin after the answer's
    /// amending from its second question's answer (each asked
    /// in a boxed future, so that the common miss's task does not carry
    /// room for them).
    async fn complete(self: &Arc<Self>, job: &Job, answer: &mut Answer, tcp: bool) {
        let (dnssec_ok, cd) = (job.dnssec_ok(), job.meta.checking_disabled);
        let revert = job.then.rewrite.as_ref().map(|r| &r.revert);
        if let Some(target) = revert.and_then(|r| r.cname(answer)) {
            // `rewrite cname`: the new target's answer follows the CNAMEs
            // (a chain onward from it too), its TC the reply's, as CoreDNS's
            // cname_target writes them
            let q = Query::query(target, job.query.query_type());
            let found = Box::pin(self.ask(&q, dnssec_ok, cd, tcp)).await;
            answer.answers.extend(found.answers);
            answer.truncated = found.truncated;
        }
        if let Some(d) = job.then.after.as_ref().filter(|d| d.wanted(answer)) {
            let second = d.second(&job.query);
            let second = Box::pin(self.ask(&second, dnssec_ok, cd, tcp)).await;
            d.amend(answer, &second);
        }
    }
}

/// An answer the cache did not keep still leaves it as CoreDNS's cache
/// writes every reply: each TTL the lowest of the reply's, within the
/// `success` bounds for an answer, the `denial` bounds for NXDOMAIN or
/// NODATA with its SOA (so a client never sees 1799 then 8).
fn uniform_ttls(cfg: &crate::query::forward::cache::setup::CacheConfig, answer: &mut Answer) {
    let soa = || answer.authority.iter().any(|r| r.record_type() == RecordType::SOA);
    let b = match answer.rcode {
        ResponseCode::NoError if !answer.answers.is_empty() => &cfg.success,
        ResponseCode::NXDomain | ResponseCode::NoError if soa() => &cfg.denial,
        _ => return,
    };
    let Some(low) = answer.records().map(|r| r.ttl).min() else {
        return;
    };
    answer.set_ttls(low.clamp(b.min_ttl.min(b.max_ttl), b.max_ttl));
}
