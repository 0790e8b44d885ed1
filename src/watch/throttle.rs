//! `apiserver_qps`, `apiserver_burst`, `apiserver_max_inflight`: the
//! client-side limits on the requests the watch path sends to the API
//! server (lists, list pages, watches, and every retry after an error).
//!
//! As CoreDNS's client (client-go) applies them:
//! - a token bucket: `burst` requests at once, refilled at `qps` a second;
//!   a request waits for its token (first come, first served). It is on
//!   when either option is written above 0; the other then takes
//!   client-go's default (5 QPS, burst 10). Without either there is no
//!   rate limit (CoreDNS has client-go's 5/10 even then; the followers
//!   here already back off on repeated failures and hold one watch per
//!   kind).
//! - at most `max_inflight` requests awaiting their response at once (a
//!   watch or list holds its slot until the response headers arrive, not
//!   while its body streams, as CoreDNS's round tripper does); 0: no cap.
//!
//! Every request sent is counted, and the time spent waiting here
//! (`clusterdns_kubernetes_api_*`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

use crate::kubernetes::client::{rate, ClientOptions};
use crate::metrics::Metrics;

/// The limits of one `kubernetes` block's API client.
#[derive(Default)]
pub struct Throttle {
    bucket: Option<Mutex<Bucket>>,
    inflight: Option<Semaphore>,
    metrics: Option<Arc<Metrics>>,
}

/// Tokens on hand (negative: owed by requests already waiting).
struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Takes one token; returns how long its request must wait for it.
    fn take(&mut self, now: Instant) -> Duration {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * self.qps;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.at = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

impl Throttle {
    /// The limits `o` asks for, counted in `metrics`.
    pub fn new(o: &ClientOptions, metrics: Option<Arc<Metrics>>) -> Throttle {
        let qps = o.qps.map(f64::from).filter(|q| *q > 0.0);
        let burst = o.burst.filter(|b| *b > 0);
        let bucket = (qps.is_some() || burst.is_some()).then(|| {
            let (qps, burst) = rate(o);
            let burst = f64::from(burst);
            Mutex::new(Bucket {
                qps: f64::from(qps),
                burst,
                tokens: burst,
                at: Instant::now(),
            })
        });
        let inflight = o.max_inflight.filter(|m| *m > 0);
        let inflight = inflight.map(|m| Semaphore::new(usize::try_from(m).unwrap_or(Semaphore::MAX_PERMITS)));
        Throttle {
            bucket,
            inflight,
            metrics,
        }
    }

    /// Waits until one more request may be sent; the permit returned (if
    /// `max_inflight` is set) is to be held until its response arrives.
    pub async fn admit(&self) -> Option<SemaphorePermit<'_>> {
        let started = Instant::now();
        let wait = match &self.bucket {
            Some(b) => b.lock().map_or(Duration::ZERO, |mut b| b.take(started)),
            None => Duration::ZERO,
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let permit = match &self.inflight {
            Some(s) => s.acquire().await.ok(),
            None => None,
        };
        if let Some(m) = &self.metrics {
            m.watch.api_requests.fetch_add(1, Relaxed);
            let waited = started.elapsed();
            if !waited.is_zero() {
                m.watch.api_throttled.fetch_add(1, Relaxed);
                m.watch
                    .api_throttle_micros
                    .fetch_add(waited.as_micros() as u64, Relaxed);
            }
        }
        permit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(qps: Option<f32>, burst: Option<u32>, inflight: Option<u32>) -> ClientOptions {
        ClientOptions {
            qps,
            burst,
            max_inflight: inflight,
            ..ClientOptions::default()
        }
    }

    /// The bucket's arithmetic, on a clock of our own.
    #[test]
    fn burst_then_one_token_per_interval() {
        let t = Throttle::new(&options(Some(2.0), Some(3), None), None);
        let mut b = t.bucket.expect("a bucket").into_inner().expect("lock");
        let start = b.at;
        let waits: Vec<Duration> = (0..5).map(|_| b.take(start)).collect();
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [0, 0, 0, 500, 1000], "3 at once, then one each 1/2 s");
        assert_eq!(
            b.take(start + Duration::from_secs(60)).as_millis(),
            0,
            "refilled, never above burst"
        );
        let taken: Vec<u128> = (0..3)
            .map(|_| b.take(start + Duration::from_secs(60)).as_millis())
            .collect();
        assert_eq!(taken, [0, 0, 500]);
    }

    #[test]
    fn defaults_follow_client_go_and_zero_means_unset() {
        let only_qps = Throttle::new(&options(Some(50.0), None, None), None);
        let b = only_qps.bucket.expect("bucket").into_inner().expect("lock");
        assert_eq!((b.qps, b.burst), (50.0, 10.0));
        let only_burst = Throttle::new(&options(None, Some(100), None), None);
        let b = only_burst.bucket.expect("bucket").into_inner().expect("lock");
        assert_eq!((b.qps, b.burst), (5.0, 100.0));
        let none = Throttle::new(&options(Some(0.0), Some(0), Some(0)), None);
        assert!(none.bucket.is_none() && none.inflight.is_none());
    }

    #[tokio::test]
    async fn at_most_max_inflight_permits_at_once() {
        let t = Throttle::new(&options(None, None, Some(2)), None);
        let (a, b) = (t.admit().await, t.admit().await);
        assert!(a.is_some() && b.is_some());
        let third = tokio::time::timeout(Duration::from_millis(50), t.admit()).await;
        assert!(third.is_err(), "a third waits while two are in flight");
        drop(a);
        let third = tokio::time::timeout(Duration::from_secs(30), t.admit()).await;
        assert!(third.is_ok_and(|p| p.is_some()), "and goes once one is answered");
    }
}
