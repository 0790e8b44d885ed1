//! Counters that cost one plain store on the hot path: per-thread stripes
//! ([`STRIPE`], [`bump`]) and fixed-bucket histograms ([`Hist`]), plus the
//! histograms other modules keep ([`Durations`] of upstreams, the
//! programming latency's [`Histogram`]).
//!
//! (The `metrics` crate's histograms keep every observation until the next
//! scrape, which at 200,000 queries per second is memory that grows with
//! the scrape interval. Fixed bucket arrays cost the same per query and
//! nothing more.)

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::catalogue::{duration_bound, programming_bound, DURATION_BUCKETS, PROGRAMMING_BUCKETS, SIZES};
use super::render::histogram;

/// Stripes owned by one thread each; threads beyond them share the last
/// one.
pub(super) const OWNED_STRIPES: usize = 64;
pub(super) const STRIPES: usize = OWNED_STRIPES + 1;

thread_local! {
    /// This thread's stripe, and whether it is the only writer of it.
    pub(super) static STRIPE: (usize, bool) = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let i = NEXT.fetch_add(1, Relaxed);
        if i < OWNED_STRIPES { (i, true) } else { (OWNED_STRIPES, false) }
    };
}

/// Adds `n`: a plain load and store when this thread is the counter's
/// only writer (no locked instruction), else an atomic add.
#[inline]
pub(super) fn bump(counter: &AtomicU64, n: u64, owned: bool) {
    if owned {
        counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
    } else {
        counter.fetch_add(n, Relaxed);
    }
}

/// A histogram with fixed bounds; buckets hold counts per bucket (made
/// cumulative when rendered), the last one is +Inf.
#[derive(Debug)]
pub(super) struct Hist<const N: usize> {
    pub(super) buckets: [AtomicU64; N],
    pub(super) over: AtomicU64,
    /// Nanoseconds or bytes.
    pub(super) sum: AtomicU64,
}

impl<const N: usize> Default for Hist<N> {
    fn default() -> Self {
        Hist {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            over: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Hist<N> {
    #[inline]
    pub(super) fn add(&self, slot: usize, sum: u64, owned: bool) {
        bump(self.buckets.get(slot).unwrap_or(&self.over), 1, owned);
        bump(&self.sum, sum, owned);
    }

    /// The per-bucket counts, the overflow and the sum.
    pub(super) fn load(&self) -> (Vec<u64>, u64, u64) {
        let counts = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        (counts, self.over.load(Relaxed), self.sum.load(Relaxed))
    }
}

/// The smallest k with `nanos` ≤ 0.25 ms · 2^k (integer arithmetic).
/// Most replies (every replayed one) take less than the first bound: a
/// compare, before any division.
#[inline]
pub(super) fn duration_slot(nanos: u64) -> usize {
    if nanos <= 250_000 {
        return 0;
    }
    let quarters = nanos.div_ceil(250_000);
    (64 - (quarters - 1).leading_zeros()) as usize
}

/// The first [`SIZES`] bucket that holds `bytes`. Up to 400 bytes (most
/// queries and replies) the bounds are 100 apart from 0: a division, not
/// a search (two of them per query).
#[inline]
#[allow(clippy::manual_div_ceil)] // `div_ceil` also takes the remainder: a multiply more
pub(super) fn size_slot(bytes: usize) -> usize {
    if bytes <= 400 {
        return (bytes + 99) / 100;
    }
    SIZES.partition_point(|b| *b < bytes as f64)
}

/// A histogram with CoreDNS's request-duration buckets, for use outside
/// this module (`coredns_proxy_request_duration_seconds`).
#[derive(Debug, Default)]
pub struct Durations(Hist<DURATION_BUCKETS>);

impl Durations {
    pub fn observe(&self, nanos: u64) {
        self.0.add(duration_slot(nanos), nanos, false);
    }

    /// Writes its series under `name{labels}`, if it has any observation.
    pub fn render(&self, s: &mut String, name: &str, labels: &str) {
        let (counts, over, sum) = self.0.load();
        if counts.iter().sum::<u64>() + over == 0 {
            return;
        }
        let bounds: Vec<f64> = (0..DURATION_BUCKETS).map(duration_bound).collect();
        histogram(s, name, labels, &bounds, &counts, over, sum as f64 / 1e9);
    }
}

/// A histogram with CoreDNS's programming-latency buckets.
#[derive(Default)]
pub struct Histogram {
    pub(super) buckets: [AtomicU64; PROGRAMMING_BUCKETS],
    pub(super) count: AtomicU64,
    pub(super) sum_micros: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, seconds: f64) {
        for (k, bucket) in self.buckets.iter().enumerate() {
            if seconds <= programming_bound(k) {
                bucket.fetch_add(1, Relaxed);
            }
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros.fetch_add((seconds.max(0.0) * 1e6) as u64, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_slot_is_the_first_bucket_that_holds_it() {
        for bytes in 0..=70_000usize {
            let searched = SIZES.partition_point(|b| *b < bytes as f64);
            assert_eq!(size_slot(bytes), searched, "{bytes} bytes");
        }
    }

    #[test]
    fn a_duration_slot_is_the_first_bucket_that_holds_it() {
        for micros in (0..=20_000_000u64)
            .step_by(997)
            .chain([250, 251, 500, 501, 8_192_000, 8_192_001])
        {
            let nanos = micros * 1_000;
            let searched = (0..DURATION_BUCKETS)
                .find(|k| nanos as f64 / 1e9 <= duration_bound(*k))
                .unwrap_or(DURATION_BUCKETS);
            assert_eq!(duration_slot(nanos).min(DURATION_BUCKETS), searched, "{micros} µs");
        }
    }
}
