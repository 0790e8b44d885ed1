//! When a watcher retries: at once after the first failure that follows a
//! healthy period, then exponentially longer (with jitter, so replicas do
//! not retry in step) while attempts keep failing; the count is forgotten
//! once the kind has been healthy for [`HEALTHY`].
//!
//! A watch that ends cleanly or expires (`410`) is not a failure: the
//! watcher resumes or relists at once. It counts as one only when it ends
//! within [`QUICK_END`] of being opened, so a server that closes every
//! watch at once is not hammered.

use std::time::{Duration, Instant};

/// Healthy this long (a list or watch working, no failure): the next
/// failure is retried at once again.
pub const HEALTHY: Duration = Duration::from_secs(10);
/// The second attempt in a row waits about this long; each further one twice as long.
pub const FIRST: Duration = Duration::from_millis(500);
/// The longest wait between attempts.
pub const MAX: Duration = Duration::from_secs(30);
/// A watch ending sooner than this after it opened counts as a failure.
pub const QUICK_END: Duration = Duration::from_secs(1);

/// The retry state of one watched kind.
#[derive(Debug, Default)]
pub struct Backoff {
    /// Failures since the last healthy period.
    failures: u32,
    /// Since when the kind has worked without a failure.
    healthy_since: Option<Instant>,
}

impl Backoff {
    /// A list or watch worked.
    pub fn ok(&mut self, now: Instant) {
        self.healthy_since.get_or_insert(now);
    }

    /// An attempt failed and the server asked for a wait (`Retry-After`,
    /// already capped): the longer of that and the backoff's.
    pub fn failed_asking(&mut self, now: Instant, asked: Option<Duration>) -> Duration {
        let wait = self.failed(now);
        asked.map_or(wait, |a| wait.max(a.min(MAX)))
    }

    /// An attempt failed: how long to wait before the next one.
    pub fn failed(&mut self, now: Instant) -> Duration {
        if self.healthy_since.is_some_and(|t| now.duration_since(t) >= HEALTHY) {
            self.failures = 0;
        }
        self.healthy_since = None;
        self.failures = self.failures.saturating_add(1);
        if self.failures == 1 {
            return Duration::ZERO;
        }
        let exp = (self.failures - 2).min(16);
        let full = FIRST.saturating_mul(1 << exp).min(MAX);
        // jitter: somewhere in the upper half of the full wait
        full.mul_f64(0.5 + fastrand::f64() / 2.0)
    }

    /// Failures since the last healthy period.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_failure_is_immediate_then_grows_with_jitter_and_caps() {
        let mut b = Backoff::default();
        let t = Instant::now();
        assert_eq!(b.failed(t), Duration::ZERO);
        let waits: Vec<Duration> = (0..12).map(|_| b.failed(t)).collect();
        assert!(waits[0] >= FIRST / 2 && waits[0] <= FIRST, "{waits:?}");
        assert!(waits[1] >= FIRST && waits[1] <= FIRST * 2, "{waits:?}");
        assert!(waits.iter().all(|w| *w <= MAX), "{waits:?}");
        assert!(waits[11] >= MAX / 2, "{waits:?}");
    }

    #[test]
    fn retry_after_is_honoured_even_first_but_capped() {
        let mut b = Backoff::default();
        let t = Instant::now();
        assert_eq!(b.failed_asking(t, Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(b.failed_asking(t, Some(Duration::from_secs(3600))), MAX);
        assert!(b.failed_asking(t, None) <= MAX);
    }

    #[test]
    fn a_healthy_period_resets_but_a_short_one_does_not() {
        let mut b = Backoff::default();
        let t = Instant::now();
        b.failed(t);
        b.failed(t);
        b.ok(t);
        assert!(
            b.failed(t + Duration::from_secs(1)) > Duration::ZERO,
            "healthy for 1 s only"
        );
        b.ok(t + Duration::from_secs(1));
        assert_eq!(b.failed(t + Duration::from_secs(1) + HEALTHY), Duration::ZERO);
        assert_eq!(b.failures(), 1);
    }
}
