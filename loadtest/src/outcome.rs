//! What a step of load measured: counts, answers by rcode, and latency in
//! a log-linear histogram (16 buckets per power of two of microseconds).
//! Histograms of several generators add bucket by bucket, so a merged
//! step's percentiles are computed from all its answers, never averaged.

/// Log-linear latency buckets: `SUB` per power of two of microseconds.
pub const SUB: usize = 16;
pub const BUCKETS: usize = 40 * SUB;

/// What a step measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub offered: f64,
    pub sent: u64,
    pub answered: u64,
    pub lost: u64,
    pub seconds: f64,
    /// Answers by rcode (0..15).
    pub rcodes: [u64; 16],
    buckets: Vec<u64>,
    sum_us: f64,
}

impl Default for Outcome {
    fn default() -> Outcome {
        Outcome {
            offered: 0.0,
            sent: 0,
            answered: 0,
            lost: 0,
            seconds: 0.0,
            rcodes: [0; 16],
            buckets: vec![0; BUCKETS],
            sum_us: 0.0,
        }
    }
}

fn bucket(us: f64) -> usize {
    if us < 1.0 {
        return 0;
    }
    let exp = us.log2().floor();
    let frac = us / exp.exp2() - 1.0;
    ((exp as usize) * SUB + (frac * SUB as f64) as usize).min(BUCKETS - 1)
}

fn bucket_value(i: usize) -> f64 {
    let (exp, sub) = (i / SUB, i % SUB);
    (exp as f64).exp2() * (1.0 + (sub as f64 + 0.5) / SUB as f64)
}

impl Outcome {
    /// Counts one answer with its latency and rcode.
    pub fn record(&mut self, us: f64, rcode: usize) {
        self.answered += 1;
        self.rcodes[rcode & 15] += 1;
        self.buckets[bucket(us)] += 1;
        self.sum_us += us;
    }

    /// Adds another generator's step: counts, rcodes and buckets summed.
    /// `seconds` is left to the caller (see `report::merge`).
    pub fn add(&mut self, other: &Outcome) {
        self.offered += other.offered;
        self.sent += other.sent;
        self.answered += other.answered;
        self.lost += other.lost;
        for (a, b) in self.rcodes.iter_mut().zip(other.rcodes) {
            *a += b;
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.sum_us += other.sum_us;
    }

    /// The non-empty buckets as `(index, count)`, in order.
    pub fn histogram(&self) -> Vec<(usize, u64)> {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (i, *n))
            .collect()
    }

    /// The sum of all latencies, in microseconds (for an exact mean).
    pub fn sum_us(&self) -> f64 {
        self.sum_us
    }

    /// Restores a histogram written by [`Outcome::histogram`] and its sum.
    pub fn set_histogram(&mut self, counts: &[(usize, u64)], sum_us: f64) -> Result<(), String> {
        self.buckets = vec![0; BUCKETS];
        for (i, n) in counts {
            *self
                .buckets
                .get_mut(*i)
                .ok_or(format!("histogram bucket {i} is out of range (0..{BUCKETS})"))? += n;
        }
        self.sum_us = sum_us;
        Ok(())
    }

    /// Achieved answers per second.
    pub fn achieved(&self) -> f64 {
        self.answered as f64 / self.seconds.max(1e-9)
    }

    pub fn loss(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.lost as f64 / self.sent as f64
        }
    }

    pub fn mean_ms(&self) -> f64 {
        if self.answered == 0 {
            0.0
        } else {
            self.sum_us / self.answered as f64 / 1000.0
        }
    }

    /// The `q` quantile (0..1) of latency, in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let want = (q * total as f64).ceil() as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want.max(1) {
                return bucket_value(i) / 1000.0;
            }
        }
        bucket_value(BUCKETS - 1) / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_buckets() {
        let mut o = Outcome::default();
        for us in [100.0, 200.0, 400.0, 800.0] {
            for _ in 0..25 {
                o.record(us, 0);
            }
        }
        let p50 = o.quantile_ms(0.5);
        assert!((0.19..0.22).contains(&p50), "{p50}");
        let p99 = o.quantile_ms(0.99);
        assert!((0.78..0.84).contains(&p99), "{p99}");
    }

    #[test]
    fn added_halves_are_the_whole() {
        let (mut whole, mut a, mut b) = (Outcome::default(), Outcome::default(), Outcome::default());
        for i in 0..1000u32 {
            let us = f64::from(i * 37 % 5000) + 3.0;
            whole.record(us, (i % 4) as usize);
            if i % 3 == 0 { &mut a } else { &mut b }.record(us, (i % 4) as usize);
        }
        a.add(&b);
        assert_eq!(a.histogram(), whole.histogram());
        assert_eq!(a.rcodes, whole.rcodes);
        assert_eq!(a.quantile_ms(0.99), whole.quantile_ms(0.99));
        let mut back = Outcome::default();
        back.set_histogram(&whole.histogram(), whole.sum_us())
            .expect("in range");
        assert_eq!(back.quantile_ms(0.5), whole.quantile_ms(0.5));
        assert!(back.set_histogram(&[(BUCKETS, 1)], 0.0).is_err());
    }
}
