//! `loadtest cluster`: a synthetic cluster served by the fake API server,
//! clusterdns watching it, API churn at a fixed rate, and query load at the
//! same time; it measures change-to-served latency (each changed name is
//! queried until its new answer appears) under load.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::capacity::{self, Row};
use crate::engine::{Proto, Step};
use crate::fakeapi::FakeApi;
use crate::synth::{self, Shape};
use crate::watchbench::{self, Options};
use crate::workload;

/// What to run.
pub struct Churn {
    pub server: std::path::PathBuf,
    pub shape: Shape,
    /// Changed Services per second.
    pub churn: f64,
    /// Query load (qps) meanwhile.
    pub rate: f64,
    pub seconds: f64,
}

/// What it measured.
pub struct ChurnReport {
    pub changes: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
    pub load: Row,
}

pub fn run(c: &Churn) -> Result<ChurnReport, String> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let api = rt.block_on(FakeApi::start()).map_err(|e| e.to_string())?;
    synth::populate(&api, &c.shape);
    let opts = Options {
        server: c.server.clone(),
        shape: c.shape,
        changes: 0,
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
    let step = Step {
        target: dns,
        proto: Proto::Udp,
        rate: c.rate,
        duration: Duration::from_secs_f64(c.seconds),
        sockets: 32,
        timeout: Duration::from_secs(2),
    };
    let load = std::thread::spawn(move || capacity::measure(&step, &w, "load", Some(pid)));
    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let mut latencies = Vec::new();
    let churn_started = Instant::now();
    let mut n = 0usize;
    while churn_started.elapsed().as_secs_f64() < c.seconds {
        let due = Duration::from_secs_f64(n as f64 / c.churn.max(0.001));
        if let Some(wait) = due.checked_sub(churn_started.elapsed()) {
            std::thread::sleep(wait);
        }
        let i = (n * 7919) % c.shape.services.max(1);
        latencies.push(watchbench::change_and_wait(&api, &c.shape, i, n + 1, &sock, dns)?);
        n += 1;
    }
    let load = load
        .join()
        .map_err(|_| "the load thread panicked")?
        .map_err(|e| e.to_string())?;
    drop(server);
    latencies.sort();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    Ok(ChurnReport {
        changes: latencies.len(),
        p50: pick(0.5),
        p99: pick(0.99),
        max: latencies.last().copied().unwrap_or_default(),
        load,
    })
}
