//! Requests by client namespace (client IP → pod → namespace, when pods
//! are watched), with a bounded number of series.
//!
//! The hot path takes no lock and shares no cache line: a worker resolves a
//! client's address to a series slot once per store generation
//! ([`ClientSlots`], in the worker's scratch space), and a request then
//! bumps that slot in the worker's own stripe. Only the first request from
//! a namespace not seen before takes the write lock that names its slot.

use std::fmt::Write;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, RwLock};

use super::catalogue::CLIENT_REQUESTS;
use super::hist::{bump, STRIPE, STRIPES};

/// Series slots: one per named namespace, then `other`.
const SLOTS: usize = Clients::MAX + 1;
const OTHER: u16 = Clients::MAX as u16;

/// One thread's counters, padded so that threads never share a line.
#[repr(align(128))]
struct Stripe([AtomicU64; SLOTS]);

/// Requests by client namespace. At most [`Clients::MAX`] namespaces get
/// their own series; the rest count as `other`, clients without a known
/// pod as `unknown`.
pub struct Clients {
    /// The namespace of each named slot, in order of first sight.
    names: RwLock<Vec<Arc<str>>>,
    /// Per-thread counters, allocated when a thread first counts.
    stripes: Box<[OnceLock<Box<Stripe>>]>,
}

impl Default for Clients {
    fn default() -> Self {
        Clients {
            names: RwLock::default(),
            stripes: (0..STRIPES).map(|_| OnceLock::new()).collect(),
        }
    }
}

impl Clients {
    pub const MAX: usize = 256;

    /// The series slot of namespace `ns`: its own while fewer than
    /// [`Clients::MAX`] namespaces have one, else `other`.
    pub fn slot(&self, ns: &str) -> u16 {
        let find = |names: &Vec<Arc<str>>| names.iter().position(|n| **n == *ns).map(|i| i as u16);
        if let Some(slot) = self.names.read().ok().and_then(|names| find(&names)) {
            return slot;
        }
        let Ok(mut names) = self.names.write() else {
            return OTHER;
        };
        match find(&names) {
            Some(slot) => slot,
            None if names.len() < Self::MAX => {
                names.push(ns.into());
                (names.len() - 1) as u16
            }
            None => OTHER,
        }
    }

    /// Counts one request in `slot` (from [`Clients::slot`]).
    pub fn count_slot(&self, slot: u16) {
        let (stripe, owned) = STRIPE.with(|i| *i);
        let Some(stripe) = self.stripes.get(stripe) else {
            return;
        };
        let counters = stripe.get_or_init(|| Box::new(Stripe(std::array::from_fn(|_| AtomicU64::new(0)))));
        if let Some(counter) = counters.0.get(usize::from(slot)) {
            bump(counter, 1, owned);
        }
    }

    /// Counts a request from a client in `ns` (clients without a known
    /// pod are not counted here: `unknown` is the rest of all requests).
    pub fn count(&self, ns: &str) {
        self.count_slot(self.slot(ns));
    }

    fn total(&self, slot: usize) -> u64 {
        let live = self.stripes.iter().filter_map(OnceLock::get);
        live.map(|s| s.0[slot].load(Relaxed)).sum()
    }

    pub(super) fn render(&self, s: &mut String, all_requests: u64) {
        let name = CLIENT_REQUESTS.name;
        CLIENT_REQUESTS.head(s);
        let other = self.total(usize::from(OTHER));
        let mut known = other;
        if let Ok(names) = self.names.read() {
            for (slot, ns) in names.iter().enumerate() {
                let n = self.total(slot);
                known += n;
                let _ = writeln!(s, "{name}{{namespace=\"{ns}\"}} {n}");
            }
        }
        let _ = writeln!(s, "{name}{{namespace=\"other\"}} {other}");
        let unknown = all_requests.saturating_sub(known);
        let _ = writeln!(s, "{name}{{namespace=\"unknown\"}} {unknown}");
    }
}

/// One worker's map from client address to series slot, valid for one
/// store generation (a pod's address may move to another namespace).
#[derive(Default)]
pub struct ClientSlots {
    generation: u64,
    /// `None`: no single running pod has the address (not counted).
    slots: crate::store::Map<IpAddr, Option<u16>>,
}

impl ClientSlots {
    /// Addresses remembered before the map starts over.
    const MAX_ENTRIES: usize = 16_384;

    /// The slot of the client at `ip` under `generation`, resolving it with
    /// `lookup` (the namespace of its pod) the first time.
    pub fn slot(
        &mut self,
        generation: u64,
        ip: IpAddr,
        clients: &Clients,
        lookup: impl FnOnce() -> Option<Arc<str>>,
    ) -> Option<u16> {
        if generation != self.generation || self.slots.len() >= Self::MAX_ENTRIES {
            self.slots.clear();
            self.generation = generation;
        }
        *self
            .slots
            .entry(ip)
            .or_insert_with(|| lookup().map(|ns| clients.slot(&ns)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(c: &Clients, all: u64) -> String {
        let mut s = String::new();
        c.render(&mut s, all);
        s
    }

    #[test]
    fn namespaces_beyond_the_limit_count_as_other_and_the_rest_as_unknown() {
        let c = Clients::default();
        for i in 0..Clients::MAX + 3 {
            c.count(&format!("ns-{i}"));
        }
        c.count("ns-0");
        let s = page(&c, 1000);
        assert!(s.contains("{namespace=\"ns-0\"} 2\n"), "{s}");
        assert!(s.contains("{namespace=\"ns-255\"} 1\n"));
        assert!(!s.contains("ns-256"));
        assert!(s.contains("{namespace=\"other\"} 3\n"));
        let known = Clients::MAX as u64 + 1 + 3;
        assert!(s.contains(&format!("{{namespace=\"unknown\"}} {}\n", 1000 - known)));
    }

    #[test]
    fn counts_from_many_threads_add_up() {
        let c = Arc::new(Clients::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| c.count("shop")))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().expect("thread"));
        assert!(page(&c, 4000).contains("{namespace=\"shop\"} 4000\n"));
    }

    #[test]
    fn a_worker_resolves_each_client_once_per_generation() {
        let c = Clients::default();
        let mut slots = ClientSlots::default();
        let ip: IpAddr = [10, 0, 0, 1].into();
        let mut lookups = 0;
        for _ in 0..3 {
            let slot = slots.slot(1, ip, &c, || {
                lookups += 1;
                Some("shop".into())
            });
            assert_eq!(slot, Some(0));
        }
        assert_eq!(lookups, 1);
        let moved = slots.slot(2, ip, &c, || Some("bank".into()));
        assert_eq!(moved, Some(1), "a new generation looks the address up again");
        assert_eq!(slots.slot(2, [10, 0, 0, 2].into(), &c, || None), None);
    }
}
