//! A worker's fairness windows ([`super::super::fair`]): each ended
//! window's talkers and shed counts published, and a client limited (its
//! queries queued apart, [`super::super::boxes`]) or released.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use super::super::boxes::ClientQueue;
use super::super::fair::{Verdict, WINDOW};
use super::{Batch, Limited};

/// Batches read from a released client's queue before it is closed.
const LAST_READS: usize = 4;
/// Talkers of a window published to `clusterdns_fair_top_talkers`.
const PUBLISHED: usize = 4;

impl super::Worker<'_> {
    /// Ends a fairness window when one is due: publishes its talkers and
    /// shed counts, and limits or releases a client.
    pub(super) fn judge(&mut self, now: Instant) {
        let (verdict, ended) = self.fair.judge(now);
        if !ended {
            return;
        }
        let router = self.handler.router.load();
        self.fair.configure(router.tcp.client_share, router.tcp.limited_clients);
        let metrics = &self.handler.metrics.fair;
        let per_sec = 1000 / WINDOW.as_millis().max(1) as u64;
        let mut top = [(IpAddr::from([0, 0, 0, 0]), 0u32); PUBLISHED];
        for (ip, n) in self.fair.talkers.all() {
            if let Some(least) = top.iter_mut().min_by_key(|t| t.1).filter(|t| t.1 < n) {
                *least = (ip, n);
            }
        }
        for (ip, n) in top.into_iter().filter(|t| t.1 > 0) {
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

    pub(super) fn limit(&mut self, ip: IpAddr, namespace: Option<Arc<str>>) {
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
        self.apart.get_or_insert_with(|| Box::new(Batch::new()));
        self.limited.push(Limited {
            queue,
            namespace,
            shed: 0,
            shed_all: 0,
        });
    }

    /// Answers what is left in a released client's queue (a few batches
    /// at most) and closes it: the client is back in the shared queue.
    pub(super) fn release(&mut self, ip: IpAddr) {
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
