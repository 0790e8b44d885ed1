//! A small fixed set of counters kept in per-thread stripes, for counters
//! that every worker bumps on its hot path (the `cache` plugin's requests
//! and hits): each thread adds to its own cache line with a plain load and
//! store ([`super::hist::bump`]), and a scrape sums the stripes, so no
//! counter line moves between cores per query. 65 stripes of one 64-byte
//! line each: about 4 KiB per set. [`Slots`] is the same for a number of
//! counters the configuration decides.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::hist::{bump, STRIPE, STRIPES};

/// One thread's counters, alone on its cache line (N up to 8).
#[derive(Debug)]
#[repr(align(64))]
struct Line<const N: usize>([AtomicU64; N]);

/// `N` counters, striped by thread.
#[derive(Debug)]
pub struct Counts<const N: usize> {
    lines: Box<[Line<N>]>,
}

impl<const N: usize> Default for Counts<N> {
    fn default() -> Self {
        Counts {
            lines: (0..STRIPES)
                .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }
}

impl<const N: usize> Counts<N> {
    /// Adds `n` to counter `i` (ignored when `i` is out of range).
    #[inline]
    pub fn add(&self, i: usize, n: u64) {
        let (stripe, owned) = STRIPE.with(|s| *s);
        if let Some(counter) = self.lines.get(stripe).and_then(|line| line.0.get(i)) {
            bump(counter, n, owned);
        }
    }

    /// Counter `i` summed over every thread.
    pub fn get(&self, i: usize) -> u64 {
        self.lines
            .iter()
            .filter_map(|line| line.0.get(i))
            .map(|c| c.load(Relaxed))
            .sum()
    }
}

/// Eight counters on one cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Eight([AtomicU64; 8]);

/// A number of counters known when the configuration is built (one per
/// zone a guard counts denials in, say), striped by thread like [`Counts`]: each stripe is
/// whole cache lines of its own.
#[derive(Debug)]
pub struct Slots {
    /// Lines per stripe.
    width: usize,
    lines: Box<[Eight]>,
}

impl Slots {
    pub fn new(n: usize) -> Slots {
        let width = n.div_ceil(8).max(1);
        Slots {
            width,
            lines: (0..STRIPES * width).map(|_| Eight::default()).collect(),
        }
    }

    /// Adds 1 to counter `i` (ignored when `i` is out of range).
    #[inline]
    pub fn bump(&self, i: usize) {
        let (stripe, owned) = STRIPE.with(|s| *s);
        if i / 8 < self.width {
            if let Some(line) = self.lines.get(stripe * self.width + i / 8) {
                bump(&line.0[i % 8], 1, owned);
            }
        }
    }

    /// Counter `i` summed over every thread.
    pub fn get(&self, i: usize) -> u64 {
        if i / 8 >= self.width {
            return 0;
        }
        (0..STRIPES)
            .filter_map(|s| self.lines.get(s * self.width + i / 8))
            .map(|line| line.0[i % 8].load(Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_from_many_threads_sum_at_a_scrape() {
        let counts = std::sync::Arc::new(Counts::<3>::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let counts = counts.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        counts.add(1, 1);
                        counts.add(2, 2);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        counts.add(7, 1); // out of range: ignored
        assert_eq!(
            (counts.get(0), counts.get(1), counts.get(2), counts.get(7)),
            (0, 8000, 16000, 0)
        );
    }

    #[test]
    fn slots_of_several_lines_sum_at_a_scrape() {
        let slots = std::sync::Arc::new(Slots::new(11));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let slots = slots.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        [0, 8, 10].into_iter().for_each(|i| slots.bump(i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        slots.bump(16); // out of range: ignored
        assert_eq!([0, 1, 8, 10, 16].map(|i| slots.get(i)), [400, 0, 400, 400, 0]);
    }
}
