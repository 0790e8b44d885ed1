//! The watch path's numbers, per object kind: relists and resumes by
//! reason, errors, malformed objects, the objects served, the age of the
//! last event and of unconfirmed persisted state, the requests sent to
//! the API server and their client-side throttling, and CoreDNS's
//! programming-latency histogram per service kind.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::catalogue::{self as c, programming_bound, KINDS, RESTART_REASONS, RESUME_REASONS, SERVICE_KINDS};
use super::hist::Histogram;

/// The watch path's numbers, per kind (indexed as [`KINDS`]).
#[derive(Default)]
pub struct Watch {
    pub invalid: [AtomicU64; 5],
    /// Watches resumed from the last resourceVersion, by reason.
    pub resumes: [[AtomicU64; 6]; 5],
    /// Full lists, by reason.
    pub relists_by: [[AtomicU64; 6]; 5],
    /// Objects a `resync` relist found different from what was served.
    pub resync_corrections: [AtomicU64; 5],
    /// Unix ms when the state served from the `persist` file was written,
    /// while no list has confirmed it yet (0: nothing unconfirmed).
    pub unconfirmed_written_ms: AtomicU64,
    /// State file writes that failed.
    pub persist_failures: AtomicU64,
    pub relists: [AtomicU64; 5],
    pub errors: [AtomicU64; 5],
    pub objects: [AtomicU64; 5],
    /// Unix time in milliseconds of the last event or bookmark seen.
    pub last_event_ms: [AtomicU64; 5],
    pub programming: [Histogram; 3],
    /// Requests sent to the API server, those that waited for the
    /// client-side limits (`watch::throttle`), and how long in all (µs).
    pub api_requests: AtomicU64,
    pub api_throttled: AtomicU64,
    pub api_throttle_micros: AtomicU64,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A per-kind array as `(kind, value)` series.
fn by_kind(values: &[AtomicU64; 5]) -> Vec<(&'static str, u64)> {
    KINDS
        .iter()
        .zip(values.iter())
        .map(|(k, v)| (*k, v.load(Relaxed)))
        .collect()
}

impl Watch {
    /// Records that `kind` saw an event now.
    pub fn event(&self, kind: usize) {
        self.last_event_ms[kind].store(now_ms(), Relaxed);
    }

    /// `clusterdns_kubernetes_watch_restarts_total{kind,action,reason}`.
    fn render_restarts(&self, s: &mut String) {
        let name = c::WATCH_RESTARTS.name;
        c::WATCH_RESTARTS.head(s);
        for (k, kind) in KINDS.iter().enumerate() {
            for (action, counts) in [("resume", &self.resumes[k]), ("relist", &self.relists_by[k])] {
                for (r, reason) in RESTART_REASONS.iter().enumerate() {
                    let resume_only = RESUME_REASONS[r] && RESTART_REASONS[r] != "error";
                    if (action == "resume" && !RESUME_REASONS[r]) || (action == "relist" && resume_only) {
                        continue;
                    }
                    let n = counts[r].load(Relaxed);
                    let _ = writeln!(
                        s,
                        "{name}{{kind=\"{kind}\",action=\"{action}\",reason=\"{reason}\"}} {n}"
                    );
                }
            }
        }
    }

    pub(super) fn render(&self, s: &mut String) {
        c::INVALID_OBJECTS.by(s, by_kind(&self.invalid));
        c::RELISTS.by(s, by_kind(&self.relists));
        c::WATCH_ERRORS.by(s, by_kind(&self.errors));
        self.render_restarts(s);
        c::RESYNC_CORRECTIONS.by(s, by_kind(&self.resync_corrections));
        let written = self.unconfirmed_written_ms.load(Relaxed);
        let age = if written == 0 {
            0.0
        } else {
            now_ms().saturating_sub(written) as f64 / 1000.0
        };
        c::UNCONFIRMED_AGE.single(s, age);
        c::STATE_UNCONFIRMED.single(s, u8::from(written != 0));
        c::PERSIST_FAILURES.single(s, self.persist_failures.load(Relaxed));
        c::OBJECTS.by(s, by_kind(&self.objects));
        c::API_REQUESTS.single(s, self.api_requests.load(Relaxed));
        c::API_THROTTLED.single(s, self.api_throttled.load(Relaxed));
        c::API_THROTTLE_SECONDS.single(s, self.api_throttle_micros.load(Relaxed) as f64 / 1e6);
        let now = now_ms();
        let ages = KINDS.iter().zip(self.last_event_ms.iter()).map(|(kind, v)| {
            let last = v.load(Relaxed);
            let age = if last == 0 {
                -1.0
            } else {
                now.saturating_sub(last) as f64 / 1000.0
            };
            (*kind, age)
        });
        c::LAST_EVENT_AGE.by(s, ages);
        self.render_programming(s);
    }

    /// `coredns_kubernetes_dns_programming_duration_seconds{service_kind}`.
    fn render_programming(&self, s: &mut String) {
        let name = c::PROGRAMMING_DURATION.name;
        c::PROGRAMMING_DURATION.head(s);
        for (kind, h) in SERVICE_KINDS.iter().zip(self.programming.iter()) {
            for (k, b) in h.buckets.iter().enumerate() {
                let le = programming_bound(k);
                let _ = writeln!(
                    s,
                    "{name}_bucket{{service_kind=\"{kind}\",le=\"{le}\"}} {}",
                    b.load(Relaxed)
                );
            }
            let count = h.count.load(Relaxed);
            let _ = writeln!(s, "{name}_bucket{{service_kind=\"{kind}\",le=\"+Inf\"}} {count}");
            let _ = writeln!(
                s,
                "{name}_sum{{service_kind=\"{kind}\"}} {}",
                h.sum_micros.load(Relaxed) as f64 / 1e6
            );
            let _ = writeln!(s, "{name}_count{{service_kind=\"{kind}\"}} {count}");
        }
    }
}
