//! `loadtest cluster` and `loadtest soak`: a synthetic cluster served by the
//! fake API server, clusterdns watching it, API churn at a fixed rate, and
//! the pods profile as query load at the same time. It measures
//! change-to-served latency (each changed name is queried until its new
//! answer appears) and the load's outcome, per interval: a soak is the same
//! run for longer, sampled every minute (RSS, open fds, p99), to show that
//! nothing grows without bound.

use std::fmt::Write as _;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::capacity::{self, Row};
use crate::engine::{Proto, Step};
use crate::fakeapi::FakeApi;
use crate::synth::{self, Shape};
use crate::watchbench::{self, Latencies, Options};
use crate::{dns, workload};

/// What to run.
pub struct Churn {
    pub server: std::path::PathBuf,
    pub shape: Shape,
    /// Changed Services per second.
    pub churn: f64,
    /// Query load (qps) meanwhile.
    pub rate: f64,
    pub seconds: f64,
    /// One sample per this many seconds (the whole run when ≥ `seconds`).
    pub interval: f64,
    /// Also forward names outside the cluster (through `cache 30`) to a
    /// stub upstream on loopback, as a real deployment does.
    pub forward: bool,
    /// Pin the server to this CPU (`taskset -c`).
    pub pin_server: Option<usize>,
}

/// One interval of the run.
pub struct Sample {
    /// Seconds since the load started, at the end of the interval.
    pub at: f64,
    pub load: Row,
    pub rss_kb: u64,
    pub fds: usize,
    /// Change-to-served latencies of the changes made in the interval.
    pub changes: Latencies,
}

/// What it measured.
pub struct ChurnReport {
    pub samples: Vec<Sample>,
    /// Every change of the run.
    pub changes: Latencies,
    /// Changes not served within 5 s.
    pub failed_changes: usize,
}

/// Runs the churn benchmark, then removes the server's work directory.
pub fn run(c: &Churn) -> Result<ChurnReport, String> {
    let report = measure(c);
    watchbench::remove_work_dir();
    report
}

fn measure(c: &Churn) -> Result<ChurnReport, String> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let api = Arc::new(rt.block_on(FakeApi::start()).map_err(|e| e.to_string())?);
    synth::populate(&api, &c.shape);
    let stub = if c.forward {
        Some(dns::stub_upstream(30).map_err(|e| format!("stub upstream: {e}"))?)
    } else {
        None
    };
    let opts = Options {
        server: c.server.clone(),
        shape: c.shape,
        changes: 0,
        corefile_extra: stub
            .as_ref()
            .map_or_else(String::new, |(addr, _)| format!("    forward . {addr}\n    cache 30\n")),
        pods: 0,
        persist: false,
        pin_server: c.pin_server,
        imports: 0,
    };
    let (server, dns, ready) = watchbench::spawn(&opts, &api)?;
    let started = Instant::now();
    while !watchbench::ready(ready) {
        if started.elapsed() > Duration::from_secs(900) {
            return Err("not ready within 900 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = server.0.id();
    let w = workload::pods(&c.shape, 50_000, 11);

    let stop = Arc::new(AtomicBool::new(false));
    let made: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let failed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let churner = {
        let (stop, made, failed, api, shape, rate) = (
            stop.clone(),
            made.clone(),
            failed.clone(),
            api.clone(),
            c.shape,
            c.churn,
        );
        std::thread::spawn(move || -> Result<(), String> {
            let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let begun = Instant::now();
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let due = Duration::from_secs_f64(n as f64 / rate.max(0.001));
                if let Some(wait) = due.checked_sub(begun.elapsed()) {
                    std::thread::sleep(wait.min(Duration::from_millis(200)));
                    continue;
                }
                let i = (n * 7919) % shape.services.max(1);
                match watchbench::change_and_wait(&api, &shape, i, n + 1, &sock, dns) {
                    Ok(d) => made.lock().map_err(|_| "poisoned")?.push(d),
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                n += 1;
            }
            Ok(())
        })
    };

    let interval = c.interval.clamp(1.0, c.seconds.max(1.0));
    let count = (c.seconds / interval).round().max(1.0) as usize;
    let mut samples = Vec::with_capacity(count);
    let mut all = Vec::new();
    let load_started = Instant::now();
    for k in 0..count {
        let step = Step {
            target: dns,
            proto: Proto::Udp,
            rate: c.rate,
            duration: Duration::from_secs_f64(interval),
            sockets: 32,
            timeout: Duration::from_secs(2),
            yield_idle: false,
        };
        let label = if count == 1 {
            "load".to_string()
        } else {
            format!("{:.0}-{:.0} s", k as f64 * interval, (k + 1) as f64 * interval)
        };
        let load = capacity::measure(&step, &w, &label, Some(pid)).map_err(|e| e.to_string())?;
        let changes: Vec<Duration> = std::mem::take(&mut *made.lock().map_err(|_| "poisoned")?);
        all.extend_from_slice(&changes);
        samples.push(Sample {
            at: load_started.elapsed().as_secs_f64(),
            load,
            rss_kb: watchbench::rss_kb(pid),
            fds: std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count()),
            changes: Latencies::new(changes),
        });
    }
    stop.store(true, Ordering::Relaxed);
    churner.join().map_err(|_| "the churn thread panicked")??;
    drop(server);
    drop(stub);
    Ok(ChurnReport {
        samples,
        changes: Latencies::new(all),
        failed_changes: failed.load(Ordering::Relaxed),
    })
}

/// One row per sample: time, answered qps, loss, load p50/p99, change
/// p99, RSS, fds.
pub fn table(r: &ChurnReport) -> String {
    let mut s =
        String::from("      minute   answered/s     loss  p50 ms  p99 ms  change p99 ms  changes   RSS MB    fds\n");
    for x in &r.samples {
        let o = &x.load.outcome;
        let _ = writeln!(
            s,
            "{:>12.2} {:>12.0} {:>7.3}% {:>7.3} {:>7.3} {:>14.2} {:>8} {:>8.1} {:>6}",
            x.at / 60.0,
            o.achieved(),
            o.loss() * 100.0,
            o.quantile_ms(0.5),
            o.quantile_ms(0.99),
            x.changes.quantile(0.99).as_secs_f64() * 1e3,
            x.changes.len(),
            x.rss_kb as f64 / 1024.0,
            x.fds
        );
    }
    s
}

/// The samples as JSON.
pub fn json(r: &ChurnReport) -> serde_json::Value {
    let samples: Vec<serde_json::Value> = r
        .samples
        .iter()
        .map(|x| {
            serde_json::json!({
                "at_seconds": x.at,
                "answered_qps": x.load.outcome.achieved(),
                "loss": x.load.outcome.loss(),
                "p50_ms": x.load.outcome.quantile_ms(0.5),
                "p99_ms": x.load.outcome.quantile_ms(0.99),
                "server_cpu_seconds": x.load.cpu_seconds,
                "changes": x.changes.len(),
                "change_p99_ms": x.changes.quantile(0.99).as_secs_f64() * 1e3,
                "rss_kb": x.rss_kb,
                "fds": x.fds,
            })
        })
        .collect();
    serde_json::json!({
        "samples": samples,
        "changes": r.changes.len(),
        "failed_changes": r.failed_changes,
        "change_p99_ms": r.changes.quantile(0.99).as_secs_f64() * 1e3,
    })
}

/// RSS, open fds and p99 latency (load and change-to-served) against time.
pub fn svg(r: &ChurnReport, title: &str) -> String {
    let minutes: Vec<f64> = r.samples.iter().map(|x| x.at / 60.0).collect();
    let series = |f: &dyn Fn(&Sample) -> f64| -> Vec<(f64, f64)> {
        minutes.iter().copied().zip(r.samples.iter().map(f)).collect()
    };
    let panels = [
        ("RSS MB", vec![("#1f77b4", series(&|x| x.rss_kb as f64 / 1024.0))]),
        ("open fds", vec![("#2ca02c", series(&|x| x.fds as f64))]),
        (
            "p99 ms: queries (orange), change-to-served (red)",
            vec![
                ("#ff7f0e", series(&|x| x.load.outcome.quantile_ms(0.99))),
                ("#d62728", series(&|x| x.changes.quantile(0.99).as_secs_f64() * 1e3)),
            ],
        ),
    ];
    capacity::panels_svg(title, "minutes", &panels)
}
