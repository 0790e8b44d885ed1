//! One UDP worker's loop. While nobody is limited it is the plain batch
//! loop: one waiting `recvmmsg` on the shared socket, the batch answered,
//! one `sendmmsg`; while misses it read are in flight on its own runtime,
//! it waits for the socket through that runtime instead ([`super::wait`]).
//! When fairness limits a client ([`super::fair`]), the worker reads in
//! rounds instead: one batch from the shared socket, then one from each
//! limited client's own queue ([`super::boxes`]), none waiting (deficit
//! round robin with a quantum of one batch), and waits in `poll` on all of
//! them only when every one was empty. A limited client so gets at most a
//! batch per round, while the polite clients' queries in the shared queue
//! wait at most one round. Meanwhile new misses go to the shared forwarding
//! lanes, and those still in flight here run between rounds (which then
//! wait at most [`SHORT`]).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::batch::{Batch, BATCH};
use super::boxes::ClientQueue;
use super::door::adjust;
use super::fair::{Fairness, Verdict, WINDOW};
use super::queue::Queue;
use super::wait::{poll, Lane, POLL};
use crate::metrics::Transport;
use crate::query::defer::Sink;
use crate::query::handler::Handler;
use crate::query::proxyproto::{self, sessions::Sessions};
use crate::query::route::Router;
use crate::query::scratch::Scratch;

/// A round's wait while misses are in flight on the worker's runtime.
const SHORT: Duration = Duration::from_millis(1);

/// Batches read from a released client's queue before it is closed.
const LAST_READS: usize = 4;
/// Talkers of a window published to `clusterdns_fair_top_talkers`.
const PUBLISHED: usize = 4;

/// A limited client's queue and what is known of it.
struct Limited {
    queue: ClientQueue,
    namespace: Option<Arc<str>>,
    /// Queries shed since the last window's report, and in all.
    shed: u64,
    shed_all: u64,
}

struct Worker<'a> {
    socket: &'a Arc<UdpSocket>,
    handler: &'a Handler,
    batch: Batch,
    /// Buffers for the limited clients' queues (made when one is).
    apart: Option<Box<Batch>>,
    scratch: Scratch,
    queue: Queue,
    fair: Fairness,
    limited: Vec<Limited>,
    /// `proxyproto`'s UDP sessions seen by this worker.
    sessions: Sessions,
    /// The socket's address.
    bound: Option<SocketAddr>,
    /// Its port when it is bound to the unspecified address: each
    /// datagram's destination (`Datagram::to`) is then the query's address.
    wildcard: Option<u16>,
    /// Its misses run on its own runtime (`wait.rs`) while nobody is limited.
    own_lane: bool,
    /// The router as last loaded (a pointer compared per batch, not a load).
    router: arc_swap::Cache<&'a arc_swap::ArcSwap<Router>, Arc<Router>>,
    /// The last round found every queue empty: the next one waits first.
    idle_round: bool,
}

/// The loop, until `stop`; `lane`: the worker's own runtime (`wait.rs`),
/// when its misses run there.
pub(super) async fn serve(socket: &Arc<UdpSocket>, handler: &Handler, stop: &AtomicBool, mut lane: Option<Lane>) {
    let now = Instant::now();
    let tcp = handler.router.load().tcp;
    let bound = socket.local_addr().ok();
    let mut w = Worker {
        socket,
        handler,
        batch: Batch::new(bound),
        apart: None,
        scratch: Scratch {
            local: bound,
            ..Scratch::default()
        },
        queue: Queue::new(now),
        fair: Fairness::new(tcp.client_share, tcp.limited_clients, now),
        limited: Vec::new(),
        sessions: Sessions::default(),
        bound,
        wildcard: bound.filter(|a| a.ip().is_unspecified()).map(|a| a.port()),
        own_lane: lane.is_some(),
        router: arc_swap::Cache::new(&handler.router),
        idle_round: false,
    };
    w.batch.reports(false, w.wildcard.is_some()); // drop counts while tight (`door.rs`)
    while !stop.load(Ordering::Relaxed) {
        let busy = lane.as_ref().is_some_and(Lane::busy);
        let now = if !w.limited.is_empty() {
            if busy {
                tokio::task::yield_now().await;
            }
            w.round(if busy { SHORT } else { POLL })
        } else if let Some(lane) = lane.as_mut().filter(|_| busy) {
            w.wait(lane).await
        } else {
            let before = w.prepare();
            w.shared(true, before, POLL)
        };
        w.judge(now);
    }
    for l in w.limited.drain(..) {
        handler.metrics.fair.limited(false);
        handler.metrics.fair.shed(l.namespace.as_ref(), l.shed);
    }
    if let Some(lane) = lane {
        lane.drain().await;
    }
}

impl Worker<'_> {
    /// Before each wait for the shared socket (and each read that does not wait): notes the time
    /// away since the last batch, and asks for stamps only while a queue may stand
    /// ([`Queue::stamps`]). Returns the clock read. Done after the wait, the wait would count as time away.
    #[inline(always)]
    fn prepare(&mut self) -> Instant {
        let now = Instant::now();
        self.queue.reading(now);
        self.batch.stamps(self.socket, self.queue.stamps(now));
        now
    }

    /// One batch from the shared socket (`wait`: for the first datagram, up to [`POLL`]), after
    /// a wait (or this one) prepared at `before` and bounded by `limit`; returns the clock read.
    #[inline(always)]
    fn shared(&mut self, wait: bool, before: Instant, limit: Duration) -> Instant {
        let got = if wait {
            self.batch.receive(self.socket)
        } else {
            self.batch.receive_now(self.socket)
        };
        match got {
            Ok(()) => {}
            Err(Errno::EAGAIN) => {
                let now = Instant::now();
                self.idle(before, limit, now);
                return now;
            }
            Err(Errno::EINTR) => {
                // Stopped and resumed (or a signal): what queued meanwhile
                // is read with its stamps.
                let now = Instant::now();
                self.queue.away(now);
                return now;
            }
            Err(e) => {
                tracing::warn!(target: "udp", "receive failed: {e}");
                return Instant::now();
            }
        }
        let now = Instant::now();
        self.queue.woke(before, limit, now);
        let least = self.batch.got.iter().filter_map(|d| d.waited).min();
        let change = self.queue.observe(least, self.batch.got.len(), self.batch.drops, now);
        adjust(self.socket, &mut self.batch, change);
        if self.queue.overloaded() {
            self.fair.overloaded();
        }
        let late = self.answer(now, true);
        if late > 0 {
            self.handler.metrics.udp_late_dropped.fetch_add(late, Ordering::Relaxed);
        }
        now
    }

    /// A wait begun at `before`, bounded by `limit`, ended at `now` with nothing read.
    fn idle(&mut self, before: Instant, limit: Duration, now: Instant) {
        self.queue.woke(before, limit, now);
        let change = self.queue.observe(Some(Duration::ZERO), 0, None, now);
        adjust(self.socket, &mut self.batch, change);
    }

    /// While misses are in flight: a batch from the shared socket once the
    /// runtime finds it readable (see `wait.rs`); returns the clock read.
    async fn wait(&mut self, lane: &mut Lane) -> Instant {
        let before = self.prepare();
        let Some(mut ready) = lane.readable().await else {
            let now = Instant::now();
            self.idle(before, POLL, now);
            return now;
        };
        let now = self.shared(false, before, POLL);
        if self.batch.got.len() < BATCH {
            // the queue is empty: the next arrival is a new event
            ready.clear_ready();
        } else {
            drop(ready);
            // more is queued: the misses run first
            tokio::task::yield_now().await;
        }
        now
    }

    /// One round: a batch from the shared socket and from each limited
    /// client's queue, none waiting; first waits in `poll` (up to `wait`)
    /// when the last round found all of them empty.
    fn round(&mut self, wait: Duration) -> Instant {
        let before = self.prepare();
        if self.idle_round {
            poll(self.socket, self.limited.iter().map(|l| &l.queue.socket), wait);
        }
        let mut now = self.shared(false, before, wait);
        let mut any = !self.batch.got.is_empty();
        // The limited queues' batches carry drop counts the shared one's
        // do not: read into buffers of their own, whose control space the
        // shared socket's batches do not shrink (`batch`'s module comment).
        self.swap_apart();
        for i in 0..self.limited.len() {
            if self.batch.receive_now(&self.limited[i].queue.socket).is_err() {
                continue;
            }
            any = true;
            now = Instant::now();
            let l = &mut self.limited[i];
            let dropped = l.queue.dropped(self.batch.drops);
            let full = self.batch.got.len() >= BATCH;
            self.fair.behind(l.queue.ip, full, dropped > 0);
            // Counted too, so that the top talkers show limited clients.
            let late = self.answer(now, true);
            if late > 0 {
                self.handler.metrics.udp_late_dropped.fetch_add(late, Ordering::Relaxed);
            }
            let l = &mut self.limited[i];
            l.shed += dropped + late;
            l.shed_all += dropped + late;
        }
        self.swap_apart();
        self.idle_round = !any;
        now
    }

    /// Swaps the shared socket's buffers with the limited queues' ones.
    fn swap_apart(&mut self) {
        if let Some(apart) = self.apart.as_mut() {
            std::mem::swap(&mut self.batch, apart);
        }
    }

    /// Answers the batch read at `now` and sends the replies (from the shared socket); returns
    /// how many queries were too late to answer. `count`: the sources are counted for fairness.
    #[inline(always)]
    fn answer(&mut self, now: Instant, count: bool) -> u64 {
        let (handler, socket) = (self.handler, self.socket);
        let sink = || Sink::Udp(socket.clone());
        let count = count && self.fair.counts(self.batch.got.len(), BATCH);
        let router = self.router.load();
        let proxy = router.proxy.as_deref();
        let mut late = 0;
        for i in 0..self.batch.got.len() {
            let d = self.batch.got[i];
            let Some(peer) = self.batch.peers.get(i).copied().flatten() else {
                continue;
            };
            if count {
                self.fair.talkers.note(peer.ip());
            }
            if d.truncated {
                handler.metrics.dropped(Transport::Udp);
                continue;
            }
            // unstamped (stamps off): read at `now`, fresh
            let started = match d.waited {
                Some(waited) if !self.queue.fresh(waited, now) => {
                    late += 1;
                    continue;
                }
                Some(waited) => now.checked_sub(waited).unwrap_or(now),
                None => now,
            };
            if let Some(port) = self.wildcard {
                // a wildcard bind: the datagram's destination (the bound address if not told)
                self.scratch.local = d.to.map(|ip| SocketAddr::new(ip, port)).or(self.bound);
            }
            let query = &self.batch.bufs[i][..d.len];
            let (start, client) = match proxy.map(|p| proxyproto::datagram(p, query, peer, &mut self.sessions, now)) {
                None => (0, peer),
                Some(Ok(found)) => found,
                Some(Err(why)) => {
                    proxyproto::refused(&handler.metrics, Transport::Udp, peer, why);
                    continue;
                }
            };
            if handler.handle_guarded(
                router,
                &query[start..],
                (client, Transport::Udp),
                &mut self.scratch,
                &sink,
                started,
            ) {
                // from the query's destination (`d.to`: wildcard sockets only), else the bound address
                self.batch.reply(i, &self.scratch.out, d.to);
            }
        }
        self.batch.send(socket);
        late
    }

    /// Ends a fairness window when one is due: publishes its talkers and
    /// shed counts, and limits or releases a client.
    fn judge(&mut self, now: Instant) {
        if !self.fair.due(now) {
            return;
        }
        let (verdict, ended) = self.fair.judge(now);
        if !ended {
            return;
        }
        let router = self.router.load().clone();
        self.fair.configure(router.tcp.client_share, router.tcp.limited_clients);
        let metrics = &self.handler.metrics.fair;
        let per_sec = 1000 / WINDOW.as_millis().max(1) as u64;
        for (ip, n) in self.fair.talkers.top::<PUBLISHED>().into_iter().filter(|t| t.1 > 0) {
            metrics.talker(ip, router.client_namespace(ip), u64::from(n) * per_sec, now);
        }
        self.fair.next_window();
        for l in &mut self.limited {
            metrics.shed(l.namespace.as_ref(), std::mem::take(&mut l.shed));
        }
        match verdict {
            Some(Verdict::Limit(ip)) => self.limit(ip, router.client_namespace(ip)),
            Some(Verdict::Release(ip)) => self.release(ip),
            None => {}
        }
    }

    fn limit(&mut self, ip: IpAddr, namespace: Option<Arc<str>>) {
        let opened = self.socket.local_addr().and_then(|local| ClientQueue::open(local, ip));
        let queue = match opened {
            Ok(q) => q,
            Err(e) => {
                tracing::debug!(target: "udp", "no queue of its own for client {ip}: {e}");
                self.fair.forget(ip);
                return;
            }
        };
        let ns = namespace.as_deref().unwrap_or("unknown");
        tracing::info!(
            target: "udp",
            "client {ip} (namespace {ns}) limited: it sent more than its share of an overloaded worker's queries; its queries now queue apart"
        );
        self.handler.metrics.fair.limited(true);
        // rounds do not wait through the runtime: misses to the shared lanes
        crate::query::forward::lanes::set_local(false);
        self.apart.get_or_insert_with(|| Box::new(Batch::new(self.bound)));
        self.limited.push(Limited {
            queue,
            namespace,
            shed: 0,
            shed_all: 0,
        });
    }

    /// Answers what is left in a released client's queue (a few batches
    /// at most) and closes it: the client is back in the shared queue.
    fn release(&mut self, ip: IpAddr) {
        let Some(at) = self.limited.iter().position(|l| l.queue.ip == ip) else {
            return;
        };
        let mut l = self.limited.swap_remove(at);
        if self.limited.is_empty() {
            crate::query::forward::lanes::set_local(self.own_lane);
        }
        self.swap_apart();
        for _ in 0..LAST_READS {
            if self.batch.receive_now(&l.queue.socket).is_err() {
                break;
            }
            l.shed += l.queue.dropped(self.batch.drops);
            l.shed += self.answer(Instant::now(), false);
        }
        self.swap_apart();
        l.shed_all += l.shed;
        let metrics = &self.handler.metrics.fair;
        metrics.shed(l.namespace.as_ref(), l.shed);
        metrics.limited(false);
        let ns = l.namespace.as_deref().unwrap_or("unknown");
        tracing::info!(
            target: "udp",
            "client {ip} (namespace {ns}) no longer limited ({} of its queries shed)",
            l.shed_all
        );
    }
}
