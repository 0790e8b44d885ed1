//! `loadtest watch-bench`: the watch path's numbers against the fake API
//! server — initial sync time, steady RSS, change-to-served latency, and
//! peak RSS while a forced relist (history compaction → 410 Expired) runs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::dns::query_a;
use crate::fakeapi::FakeApi;
use crate::synth::{self, Shape};

/// What to measure.
pub struct Options {
    /// The clusterdns binary.
    pub server: PathBuf,
    pub shape: Shape,
    /// How many single-Service changes to time.
    pub changes: usize,
    /// More lines for the server block (beside `kubernetes`).
    pub corefile_extra: String,
}

/// The measurements.
#[derive(Debug)]
pub struct Report {
    pub sync: Duration,
    pub steady_rss_kb: u64,
    pub change_p50: Duration,
    pub change_p99: Duration,
    pub change_max: Duration,
    pub relist_peak_rss_kb: u64,
    pub relist_time: Duration,
}

/// Sorted latencies with their quantiles.
#[derive(Default, Clone)]
pub struct Latencies(Vec<Duration>);

impl Latencies {
    pub fn new(mut v: Vec<Duration>) -> Self {
        v.sort();
        Latencies(v)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn quantile(&self, q: f64) -> Duration {
        self.0
            .get(((self.0.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or_default()
    }
    pub fn max(&self) -> Duration {
        self.0.last().copied().unwrap_or_default()
    }
}

pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The resident set size of `pid` in KB (0 when unknown).
pub fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

pub(crate) fn ready(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = s.write_all(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.starts_with("HTTP/1.1 200")
}

/// Starts the server against `api` and returns it with its DNS and ready addresses.
pub(crate) fn spawn(opts: &Options, api: &FakeApi) -> Result<(Running, SocketAddr, SocketAddr), String> {
    let dir = std::env::temp_dir().join(format!("clusterdns-watchbench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let conf = dir.join("Corefile");
    let text = format!(".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    kubernetes cluster.local {{\n        endpoint {}\n    }}\n{}}}\n", api.url(), opts.corefile_extra);
    std::fs::write(&conf, text).map_err(|e| e.to_string())?;
    let mut child = Command::new(&opts.server)
        .arg("-conf")
        .arg(&conf)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", opts.server.display()))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let running = Running(child);
    let mut lines = BufReader::new(stderr).lines();
    let (mut dns, mut ready_addr) = (None, None);
    while dns.is_none() || ready_addr.is_none() {
        let line = lines
            .next()
            .ok_or("server exited before listening")?
            .map_err(|e| e.to_string())?;
        if let Some(a) = line.split("listening on udp ").nth(1) {
            dns = a.trim().parse().ok();
        }
        if let Some(a) = line.split("listening on ready http://").nth(1) {
            ready_addr = a.trim().parse().ok();
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    Ok((
        running,
        dns.ok_or("no dns address")?,
        ready_addr.ok_or("no ready address")?,
    ))
}

/// Gives Service `i` the cluster IP of `generation` through `api`, then
/// queries its name on `dns` until the new address is served (at most 5 s);
/// the time that took.
pub(crate) fn change_and_wait(
    api: &FakeApi,
    shape: &Shape,
    i: usize,
    generation: usize,
    sock: &UdpSocket,
    dns: SocketAddr,
) -> Result<Duration, String> {
    let (ns, name) = synth::service_name(shape, i);
    let want: std::net::Ipv4Addr = synth::cluster_ip(i, generation).parse().map_err(|_| "bad ip")?;
    let qname = format!("{name}.{ns}.svc.cluster.local");
    let changed = Instant::now();
    api.put("services", synth::service(shape, i, generation));
    let mut id = 0u16;
    loop {
        id = id.wrapping_add(1);
        if query_a(sock, dns, &qname, id).is_some_and(|a| a == [want]) {
            return Ok(changed.elapsed());
        }
        if changed.elapsed() > Duration::from_secs(5) {
            return Err(format!("{qname} did not change within 5 s"));
        }
    }
}

/// Runs the whole benchmark.
pub fn run(opts: &Options) -> Result<Report, String> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let api = rt.block_on(FakeApi::start()).map_err(|e| e.to_string())?;
    synth::populate(&api, &opts.shape);
    let started = Instant::now();
    let (server, dns, ready_addr) = spawn(opts, &api)?;
    let pid = server.0.id();
    while !ready(ready_addr) {
        if started.elapsed() > Duration::from_secs(900) {
            return Err("not ready within 900 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let sync = started.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let steady_rss_kb = rss_kb(pid);

    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let mut latencies = Vec::new();
    for c in 0..opts.changes {
        let i = (c * 7919) % opts.shape.services.max(1);
        latencies.push(change_and_wait(&api, &opts.shape, i, c + 1, &sock, dns)?);
    }
    let latencies = Latencies::new(latencies);

    let peak = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let (lists_before, _) = api.counts();
    let relist_started = Instant::now();
    api.compact();
    api.drop_streams();
    let kinds = 3;
    while api.counts().0 < lists_before + kinds && relist_started.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(10));
    }
    // the lists are served; give the writer time to apply them
    let probe = synth::service_name(&opts.shape, 0);
    let probe = format!("{}.{}.svc.cluster.local", probe.1, probe.0);
    std::thread::sleep(Duration::from_secs(2));
    let relist_time = relist_started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    if query_a(&sock, dns, &probe, 7).is_none() {
        return Err("the probe name does not answer after the relist".into());
    }
    drop(server);
    Ok(Report {
        sync,
        steady_rss_kb,
        change_p50: latencies.quantile(0.5),
        change_p99: latencies.quantile(0.99),
        change_max: latencies.max(),
        relist_peak_rss_kb: peak.load(Ordering::Relaxed),
        relist_time,
    })
}
