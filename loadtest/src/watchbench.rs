//! `loadtest watch-bench`: the watch path's numbers against the fake API
//! server — initial sync time, steady RSS, change-to-served latency, and
//! peak RSS while a forced relist (history compaction → 410 Expired) runs,
//! timed until a Service deleted at the compaction answers NXDOMAIN. With
//! `persist`, the server is then restarted while the API is down: how soon
//! it answers from its state file, and how soon it reconciles once the API
//! is back.

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
    /// Pods to serve (`pods verified`).
    pub pods: usize,
    /// Restart warm from a `persist` file during an API outage.
    pub persist: bool,
    /// Run the server on this CPU only (`taskset -c`).
    pub pin_server: Option<usize>,
    /// ServiceImports to serve besides (`multicluster clusterset.local`),
    /// each from 3 clusters of `shape.endpoints` endpoints; their changes
    /// are timed too.
    pub imports: usize,
}

/// A restart with `persist` while the API server is down.
#[derive(Debug)]
pub struct Warm {
    /// From spawn to the first answer of a cluster name.
    pub answered: Duration,
    pub file_bytes: u64,
    pub rss_kb: u64,
    /// From the API's return to a deletion made during the outage served.
    pub reconciled: Duration,
}

/// The measurements.
#[derive(Debug)]
pub struct Report {
    pub sync: Duration,
    pub steady_rss_kb: u64,
    /// The same moment's resident set split: anonymous (heap, stacks) and
    /// file-backed (mostly the binary's text, whose count depends on how
    /// much of the file the page cache holds), in KB.
    pub steady_anon_kb: u64,
    pub steady_file_kb: u64,
    pub change_p50: Duration,
    pub change_p99: Duration,
    pub change_max: Duration,
    /// The same for ServiceImport changes, with `imports`.
    pub import_changes: Latencies,
    pub relist_peak_rss_kb: u64,
    pub relist_time: Duration,
    pub warm: Option<Warm>,
    /// CPU time during the initial sync: the server's, and the bench
    /// process's (the fake API server, serializing the lists).
    pub sync_cpu_server: Duration,
    pub sync_cpu_fake: Duration,
}

/// Sorted latencies with their quantiles.
#[derive(Debug, Default, Clone)]
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

/// CPU time (user + system) `pid` has used so far (`/proc/PID/stat`;
/// the bench's own process is `std::process::id()`).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // the fields after the command name (which may hold spaces) in parentheses
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The resident set size of `pid` in KB (0 when unknown).
pub fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS:")
}

/// One `/proc/PID/status` field in KB (0 when unknown): `VmRSS:`, `RssAnon:`, `RssFile:`.
pub fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or("");
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

fn work_dir() -> PathBuf {
    std::env::temp_dir().join(format!("clusterdns-watchbench-{}", std::process::id()))
}

/// Starts the server against `api` and returns it with its DNS and ready addresses.
pub(crate) fn spawn(opts: &Options, api: &FakeApi) -> Result<(Running, SocketAddr, SocketAddr), String> {
    let dir = work_dir();
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let conf = dir.join("Corefile");
    let mut options = String::new();
    if opts.pods > 0 {
        options.push_str("        pods verified\n");
    }
    if opts.persist {
        options.push_str(&format!("        persist {}\n", dir.join("state").display()));
    }
    let mut zones = "cluster.local".to_string();
    if opts.imports > 0 {
        zones.push_str(" clusterset.local");
        options.push_str("        multicluster clusterset.local\n");
    }
    let text = format!(".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    kubernetes {zones} {{\n        endpoint {}\n{options}    }}\n{}}}\n", api.url(), opts.corefile_extra);
    std::fs::write(&conf, text).map_err(|e| e.to_string())?;
    let mut command = match opts.pin_server {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(&opts.server);
            c
        }
        None => Command::new(&opts.server),
    };
    let mut child = command
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
    let qname = format!("{name}.{ns}.svc.cluster.local");
    let object = ("services", synth::service(shape, i, generation));
    put_and_wait(api, object, sock, dns, &qname, &synth::cluster_ip(i, generation))
}

/// Queries `qname` back to back until it answers `want` alone (at most
/// 5 s); the time since `changed`.
fn served(
    sock: &UdpSocket,
    dns: SocketAddr,
    qname: &str,
    want: std::net::Ipv4Addr,
    changed: Instant,
) -> Result<Duration, String> {
    let mut id = 0u16;
    loop {
        id = id.wrapping_add(1);
        if query_a(sock, dns, qname, id).is_some_and(|a| a == [want]) {
            return Ok(changed.elapsed());
        }
        if changed.elapsed() > Duration::from_secs(5) {
            return Err(format!("{qname} did not change within 5 s"));
        }
    }
}

/// [`change_and_wait`] for ServiceImport `i`'s ClusterSetIP.
fn change_import_and_wait(
    api: &FakeApi,
    shape: &Shape,
    i: usize,
    generation: usize,
    sock: &UdpSocket,
    dns: SocketAddr,
) -> Result<Duration, String> {
    let (ns, _) = synth::service_name(shape, i);
    let qname = format!("imp-{i}.{ns}.svc.clusterset.local");
    let object = ("serviceimports", synth::import(shape, i, generation));
    put_and_wait(api, object, sock, dns, &qname, &synth::import_ip(i, generation))
}

/// Puts `object` (kind, body) to the fake API and waits until `qname`
/// answers `want`: the time that took.
fn put_and_wait(
    api: &FakeApi,
    (kind, body): (&str, serde_json::Value),
    sock: &UdpSocket,
    dns: SocketAddr,
    qname: &str,
    want: &str,
) -> Result<Duration, String> {
    let want: std::net::Ipv4Addr = want.parse().map_err(|_| "bad ip")?;
    let changed = Instant::now();
    api.put(kind, body);
    served(sock, dns, qname, want, changed)
}

/// Queries `qname` until `done` holds for its answer (at most `limit`);
/// the time that took.
fn until(
    sock: &UdpSocket,
    dns: SocketAddr,
    qname: &str,
    limit: Duration,
    done: impl Fn(Option<Vec<std::net::Ipv4Addr>>) -> bool,
) -> Result<Duration, String> {
    let started = Instant::now();
    let mut id = 0u16;
    loop {
        id = id.wrapping_add(1);
        if done(query_a(sock, dns, qname, id)) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > limit {
            return Err(format!("{qname}: not as expected within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn qname(shape: &Shape, i: usize) -> String {
    let (ns, name) = synth::service_name(shape, i);
    format!("{name}.{ns}.svc.cluster.local")
}

/// Samples the peak RSS of `pid` until dropped.
struct PeakRss {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    fn start(pid: u32) -> PeakRss {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_kb(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        PeakRss {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

/// Runs the whole benchmark, then removes its work directory (the
/// Corefile and the `persist` state file).
pub fn run(opts: &Options) -> Result<Report, String> {
    let report = measure(opts);
    remove_work_dir();
    report
}

/// Removes the directory [`spawn`] writes the server's files to.
pub(crate) fn remove_work_dir() {
    let _ = std::fs::remove_dir_all(work_dir());
}

fn measure(opts: &Options) -> Result<Report, String> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let api = rt.block_on(FakeApi::start()).map_err(|e| e.to_string())?;
    synth::populate(&api, &opts.shape);
    synth::populate_pods(&api, &opts.shape, opts.pods);
    synth::populate_imports(&api, &opts.shape, opts.imports, 3);
    let _ = std::fs::remove_file(work_dir().join("state"));
    let started = Instant::now();
    let fake_before = cpu_time(std::process::id());
    let (server, dns, ready_addr) = spawn(opts, &api)?;
    let pid = server.0.id();
    while !ready(ready_addr) {
        if started.elapsed() > Duration::from_secs(900) {
            return Err("not ready within 900 s".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let sync = started.elapsed();
    let sync_cpu_server = cpu_time(pid);
    let sync_cpu_fake = cpu_time(std::process::id()).saturating_sub(fake_before);
    std::thread::sleep(Duration::from_secs(2));
    let steady_rss_kb = rss_kb(pid);
    let (steady_anon_kb, steady_file_kb) = (status_kb(pid, "RssAnon:"), status_kb(pid, "RssFile:"));

    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let _ = sock.set_read_timeout(Some(Duration::from_millis(500)));
    let mut latencies = Vec::new();
    for c in 0..opts.changes {
        let i = (c * 7919) % opts.shape.services.max(1);
        latencies.push(change_and_wait(&api, &opts.shape, i, c + 1, &sock, dns)?);
    }
    let latencies = Latencies::new(latencies);
    let mut import_changes = Vec::new();
    for c in 0..if opts.imports > 0 { opts.changes } else { 0 } {
        let i = (c * 7919) % opts.imports.max(1);
        import_changes.push(change_import_and_wait(&api, &opts.shape, i, c + 1, &sock, dns)?);
    }
    let import_changes = Latencies::new(import_changes);

    // An API server restart with its history compacted (every watch
    // dropped, 410 Expired on resume) and a Service deleted meanwhile: it
    // answers NXDOMAIN once the relist of Services is complete.
    let sampler = PeakRss::start(pid);
    let last = opts.shape.services.saturating_sub(1);
    let (ns, name) = synth::service_name(&opts.shape, last);
    api.delete_unannounced("services", &ns, &name);
    api.restart();
    let relist_time = until(&sock, dns, &qname(&opts.shape, last), Duration::from_secs(600), |a| {
        a.is_none()
    })?;
    std::thread::sleep(Duration::from_secs(1));
    let relist_peak_rss_kb = sampler.finish();
    if query_a(&sock, dns, &qname(&opts.shape, 0), 7).is_none() {
        return Err("the probe name does not answer after the relist".into());
    }
    let warm = if opts.persist {
        std::thread::sleep(Duration::from_secs(6)); // the state is saved within 5 s of a change
        drop(server);
        Some(warm_restart(opts, &api, &sock)?)
    } else {
        drop(server);
        None
    };
    Ok(Report {
        sync,
        steady_rss_kb,
        steady_anon_kb,
        steady_file_kb,
        change_p50: latencies.quantile(0.5),
        change_p99: latencies.quantile(0.99),
        change_max: latencies.max(),
        import_changes,
        relist_peak_rss_kb,
        relist_time,
        warm,
        sync_cpu_server,
        sync_cpu_fake,
    })
}

/// Restarts the server while the API is down, then brings the API back
/// with one Service deleted meanwhile.
fn warm_restart(opts: &Options, api: &FakeApi, sock: &UdpSocket) -> Result<Warm, String> {
    let file_bytes = std::fs::metadata(work_dir().join("state")).map_or(0, |m| m.len());
    api.set_fault(crate::fakeapi::Fault::Outage);
    let spawned = Instant::now();
    let (server, dns, _) = spawn(opts, api)?;
    until(sock, dns, &qname(&opts.shape, 0), Duration::from_secs(60), |a| {
        a.is_some()
    })?;
    let answered = spawned.elapsed();
    let rss_kb = rss_kb(server.0.id());
    let (ns, name) = synth::service_name(&opts.shape, 0);
    api.delete("services", &ns, &name);
    let back = Instant::now();
    api.set_fault(crate::fakeapi::Fault::None);
    until(sock, dns, &qname(&opts.shape, 0), Duration::from_secs(600), |a| {
        a.is_none()
    })?;
    Ok(Warm {
        answered,
        file_bytes,
        rss_kb,
        reconciled: back.elapsed(),
    })
}
