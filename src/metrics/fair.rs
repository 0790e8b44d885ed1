//! Per-client fairness (`limits { client_share limited_clients }`): the
//! queries shed from limited clients by their namespace, how many clients
//! are limited now, and the heaviest talkers of busy workers.
//!
//! Workers report here at the end of a fairness window (every 50 ms while
//! busy) and when a client starts or stops being limited, never per query:
//! the locks below are off the hot path. Every series is bounded: at most
//! [`Fair::NAMESPACES`] namespaces (then `other`) and [`Fair::TALKERS`]
//! talkers, each forgotten [`Fair::KEEP`] after it was last heavy.

use std::fmt::Write;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::catalogue::{FAIR_LIMITED, FAIR_SHED, FAIR_TOP_TALKERS};

/// A heavy talker: its address, namespace, rate and when it was last seen.
struct Talker {
    ip: IpAddr,
    namespace: Option<Arc<str>>,
    qps: u64,
    seen: Instant,
}

/// Fairness counters, process-wide.
#[derive(Default)]
pub struct Fair {
    /// Shed queries by namespace (`None`: unknown), in order of first sight.
    shed: Mutex<Vec<(Option<Arc<str>>, u64)>>,
    /// Shed from clients in namespaces beyond [`Fair::NAMESPACES`].
    shed_other: AtomicU64,
    limited: AtomicU64,
    talkers: Mutex<Vec<Talker>>,
}

impl Fair {
    pub const NAMESPACES: usize = 64;
    pub const TALKERS: usize = 8;
    pub const KEEP: Duration = Duration::from_secs(10);

    /// Counts `n` queries shed from a client in `namespace`.
    pub fn shed(&self, namespace: Option<&Arc<str>>, n: u64) {
        if n == 0 {
            return;
        }
        let Ok(mut shed) = self.shed.lock() else {
            return;
        };
        if let Some(row) = shed.iter_mut().find(|(ns, _)| ns.as_deref() == namespace.map(|n| &**n)) {
            row.1 += n;
        } else if shed.len() < Self::NAMESPACES {
            shed.push((namespace.cloned(), n));
        } else {
            self.shed_other.fetch_add(n, Relaxed);
        }
    }

    /// Every query shed for fairness so far.
    pub fn shed_total(&self) -> u64 {
        let named: u64 = self.shed.lock().map(|s| s.iter().map(|(_, n)| n).sum()).unwrap_or(0);
        named + self.shed_other.load(Relaxed)
    }

    /// A client started (`true`) or stopped being limited.
    pub fn limited(&self, started: bool) {
        if started {
            self.limited.fetch_add(1, Relaxed);
        } else {
            let _ = self.limited.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
        }
    }

    /// Notes a heavy talker's rate; the table keeps the [`Fair::TALKERS`]
    /// heaviest seen within [`Fair::KEEP`].
    pub fn talker(&self, ip: IpAddr, namespace: Option<Arc<str>>, qps: u64, now: Instant) {
        let Ok(mut all) = self.talkers.lock() else {
            return;
        };
        all.retain(|t| now.saturating_duration_since(t.seen) < Self::KEEP);
        if let Some(t) = all.iter_mut().find(|t| t.ip == ip) {
            (t.qps, t.seen, t.namespace) = (qps, now, namespace);
            return;
        }
        let talker = Talker {
            ip,
            namespace,
            qps,
            seen: now,
        };
        if all.len() < Self::TALKERS {
            all.push(talker);
        } else if let Some(least) = all.iter_mut().filter(|t| t.qps < qps).min_by_key(|t| t.qps) {
            *least = talker;
        }
    }

    pub(super) fn render(&self, s: &mut String) {
        FAIR_SHED.head(s);
        let name = FAIR_SHED.name;
        if let Ok(shed) = self.shed.lock() {
            for (ns, n) in shed.iter() {
                let ns = ns.as_deref().unwrap_or("unknown");
                let _ = writeln!(s, "{name}{{namespace=\"{ns}\"}} {n}");
            }
        }
        let other = self.shed_other.load(Relaxed);
        if other > 0 {
            let _ = writeln!(s, "{name}{{namespace=\"other\"}} {other}");
        }
        FAIR_LIMITED.single(s, self.limited.load(Relaxed));
        FAIR_TOP_TALKERS.head(s);
        let name = FAIR_TOP_TALKERS.name;
        let now = Instant::now();
        if let Ok(all) = self.talkers.lock() {
            for t in all
                .iter()
                .filter(|t| now.saturating_duration_since(t.seen) < Self::KEEP)
            {
                let ns = t.namespace.as_deref().unwrap_or("unknown");
                let _ = writeln!(s, "{name}{{client=\"{}\",namespace=\"{ns}\"}} {}", t.ip, t.qps);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(f: &Fair) -> String {
        let mut s = String::new();
        f.render(&mut s);
        s
    }

    #[test]
    fn shed_counts_are_bounded_by_namespace_and_talkers_by_rate() {
        let f = Fair::default();
        let shop: Arc<str> = "shop".into();
        f.shed(Some(&shop), 5);
        f.shed(Some(&shop), 2);
        f.shed(None, 1);
        for i in 0..Fair::NAMESPACES {
            f.shed(Some(&format!("ns-{i}").into()), 1);
        }
        let s = page(&f);
        assert!(s.contains("clusterdns_fair_shed_total{namespace=\"shop\"} 7\n"), "{s}");
        assert!(s.contains("{namespace=\"unknown\"} 1\n"));
        assert!(s.contains("{namespace=\"other\"} 2\n"));
        let now = Instant::now();
        for i in 0..20u8 {
            f.talker(IpAddr::from([10, 0, 0, i]), None, u64::from(i) * 100, now);
        }
        let s = page(&f);
        assert_eq!(s.matches("clusterdns_fair_top_talkers{").count(), Fair::TALKERS);
        assert!(s.contains("{client=\"10.0.0.19\",namespace=\"unknown\"} 1900\n"));
        assert!(!s.contains("10.0.0.11\""));
        f.limited(true);
        f.limited(false);
        f.limited(false);
        assert!(page(&f).contains("clusterdns_fair_limited_clients 0\n"));
    }
}
