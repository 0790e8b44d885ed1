//! Shared harness for end-to-end tests: start the real binary on port 0
//! with a generated Corefile, read the bound ports from its "listening on"
//! log lines, wait for readiness, and talk to it over real sockets.
#![allow(dead_code)]

pub mod certs;
pub mod cluster;
pub mod delv;
pub mod dig;
pub mod held;
pub mod mmdb;
pub mod named;
pub mod netns;
pub mod stub;
pub mod zones;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

/// A fresh directory for one test's files. The test may still use it
/// when it returns (a server it started reads it), so it is not removed
/// then: the next run removes what runs that are gone left under its tag
/// (an etcd's data is 120 MB).
pub fn temp_dir(tag: &str) -> PathBuf {
    let prefix = format!("clusterdns-e2e-{tag}-");
    let dir = std::env::temp_dir().join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for old in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
        let name = old.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// A UDP socket and a TCP listener on one free loopback port (a port free
/// for UDP may be taken for TCP: try another).
pub fn free_pair() -> (UdpSocket, std::net::TcpListener) {
    for _ in 0..50 {
        let udp = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        if let Ok(tcp) = std::net::TcpListener::bind(udp.local_addr().expect("addr")) {
            return (udp, tcp);
        }
    }
    panic!("no loopback port free for both UDP and TCP in 50 tries");
}

/// What a test needs from this machine (`have`), or why it cannot run
/// here: the one place a test decides not to run. Under `CI` (the env var
/// set and not empty, as CI runs `.ci/run`) a lack fails the test naming what to
/// install; elsewhere it prints one `SKIP` line and the caller returns.
pub fn needs<T>(test: &str, have: Result<T, String>, install: &str) -> Option<T> {
    match have {
        Ok(v) => Some(v),
        Err(why) if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) => {
            panic!("{test}: {why}; CI must not skip it: {install}")
        }
        Err(why) => {
            eprintln!("SKIP {test}: {why} ({install})");
            None
        }
    }
}

/// Where `tool` is installed: on `PATH` or in an `sbin` directory.
pub fn installed(tool: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{tool} is not installed"))
}

/// Whether this process may create mount and network namespaces
/// (`unshare -mn` needs root); [`needs`] decides when it may not.
pub fn namespaces_or_skip(test: &str) -> bool {
    let probe = Command::new("unshare").args(["-mn", "true"]).status();
    let ok = probe.is_ok_and(|s| s.success());
    let why = (!ok).then(|| "cannot create namespaces here (unshare -mn)".to_string());
    needs(
        test,
        why.map_or(Ok(()), Err),
        "run the tests as root, with util-linux installed",
    )
    .is_some()
}

/// A loopback port free for both UDP and TCP (bound and released).
pub fn free_port() -> u16 {
    free_pair().0.local_addr().expect("addr").port()
}

/// The demo cluster dump shipped in `zones/`.
pub fn demo_cluster() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("zones/cluster.yaml")
}

/// Reads `out` line by line on a thread of its own: each line is kept in
/// `log` and sent on the returned channel (readers wait for "listening on").
pub fn follow<R: Read + Send + 'static>(out: R, log: Arc<Mutex<Vec<String>>>) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            if let Ok(mut l) = log.lock() {
                l.push(line);
            }
        }
    });
    rx
}

/// A running server, killed on drop.
pub struct Server {
    child: Child,
    pub dns: SocketAddr,
    pub ready: SocketAddr,
    pub log: Arc<Mutex<Vec<String>>>,
}

/// A Corefile serving `snapshot` on 127.0.0.1, port 0, with extra
/// `kubernetes` options.
pub fn corefile(snapshot: &Path, options: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        snapshot {}\n        {options}\n    }}\n}}\n",
        snapshot.display()
    )
}

impl Server {
    /// Starts the binary with `corefile_text` (written into `dir`) and
    /// waits until it is ready.
    pub fn start(dir: &Path, corefile_text: &str) -> Server {
        let server = Self::spawn(dir, corefile_text);
        server.wait_ready(Duration::from_secs(20));
        server
    }

    /// Starts the binary without waiting for readiness.
    pub fn spawn(dir: &Path, corefile_text: &str) -> Server {
        let conf = dir.join("Corefile");
        std::fs::write(&conf, corefile_text).expect("write Corefile");
        let mut child = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
            .arg("-conf")
            .arg(&conf)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start clusterdns");
        let stderr = child.stderr.take().expect("stderr");
        let stdout = child.stdout.take().expect("stdout");
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(mut l) = sink.lock() {
                    l.push(line);
                }
            }
        });
        let rx = follow(stderr, log.clone());
        let (mut dns, mut ready) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(20);
        while dns.is_none() || ready.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("server did not log its addresses: {:?}", log.lock().map(|l| l.clone())));
            if let Some(a) = line.split("listening on udp ").nth(1) {
                dns = a.trim().parse().ok();
            }
            if let Some(a) = line.split("listening on ready http://").nth(1) {
                ready = a.trim().parse().ok();
            }
        }
        Server {
            child,
            dns: dns.expect("dns addr"),
            ready: ready.expect("ready addr"),
            log,
        }
    }

    /// Polls `/ready` until it answers 200.
    pub fn wait_ready(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if http_get(self.ready, "/ready").starts_with("HTTP/1.1 200") {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("server not ready within {limit:?}");
    }

    pub fn port(&self) -> String {
        self.dns.port().to_string()
    }

    /// The address of an admin endpoint (`health`, `ready`, `metrics`) from the log.
    pub fn admin(&self, name: &str) -> Option<SocketAddr> {
        let lines = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        let marker = format!("listening on {name} http://");
        lines
            .iter()
            .find_map(|l| l.split(marker.as_str()).nth(1))
            .and_then(|a| a.trim().parse().ok())
    }

    /// The server's /metrics text ("" without a `prometheus` listener).
    pub fn metrics(&self) -> String {
        let response = self
            .admin("metrics")
            .map(|a| http_get(a, "/metrics"))
            .unwrap_or_default();
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the process to exit; its status if it did.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// The value of one series in /metrics (-1 when absent).
    pub fn metric(&self, series: &str) -> f64 {
        value(&self.metrics(), series)
    }

    /// The sum of every series of `family` whose labels contain `having`.
    /// The value of `series` once it is at least `n` (or at [`REPLY`]).
    pub fn metric_at_least(&self, series: &str, n: f64) -> f64 {
        let deadline = Instant::now() + REPLY;
        loop {
            let v = self.metric(series);
            if v >= n || Instant::now() >= deadline {
                return v;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn metric_sum(&self, family: &str, having: &str) -> f64 {
        sum_of(&self.metrics(), family, having)
    }

    pub fn log_contains(&self, needle: &str) -> bool {
        self.log
            .lock()
            .is_ok_and(|l| l.iter().any(|line| line.contains(needle)))
    }

    /// Whether the server logs `needle`, waited for (until [`REPLY`], a
    /// ceiling only a hang reaches; the log is read by a thread of its own).
    pub fn logged(&self, needle: &str) -> bool {
        let started = Instant::now();
        while !self.log_contains(needle) {
            if started.elapsed() > REPLY {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Whether the process is still alive (checked through /proc).
    pub fn is_running(&self) -> bool {
        std::path::Path::new(&format!("/proc/{}/status", self.child.id())).exists()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sum of every series of `family` whose labels contain `having`.
pub fn sum_of(text: &str, family: &str, having: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")) && l.contains(having))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The value of `series` in a metrics text (-1 when absent).
pub fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(-1.0)
}

/// `promtool check metrics` over a metrics page written to `file`: its
/// verdict, or `None` when promtool is not installed outside CI ([`needs`]).
pub fn promtool_check(text: &str, file: &Path) -> Option<Result<(), String>> {
    let install = "apt-get install prometheus (tests/run installs it)";
    let tool = needs("promtool check metrics", installed("promtool"), install)?;
    std::fs::write(file, text).expect("write metrics");
    let out = Command::new(tool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).expect("open"))
        .output()
        .expect("promtool");
    Some(match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    })
}

/// A minimal HTTP GET returning the whole response text ("" on failure).
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A query message for `name`/`qtype`; `edns` sets a UDP payload size.
pub fn query(id: u16, name: &str, qtype: RecordType, edns: Option<u16>) -> Vec<u8> {
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(Name::from_ascii(name).expect("name"), qtype));
    if let Some(size) = edns {
        let mut e = Edns::new();
        e.set_max_payload(size);
        m.set_edns(e);
    }
    m.to_vec().expect("encode query")
}

/// Sends raw bytes over UDP and returns the raw reply, if any (1 s).
pub fn udp_raw(server: SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
    udp_within(server, bytes, Duration::from_secs(1))
}

/// [`udp_raw`] waiting up to `limit`.
pub fn udp_within(server: SocketAddr, bytes: &[u8], limit: Duration) -> Option<Vec<u8>> {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(limit)).expect("timeout");
    sock.send_to(bytes, server).expect("send");
    let mut buf = vec![0u8; 65535];
    let n = sock.recv(&mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// The ceiling of a wait for a reply that must come: only a hang reaches
/// it, never a busy machine.
pub const REPLY: Duration = Duration::from_secs(60);

/// One UDP query, decoded; its reply must come (within [`REPLY`]).
pub fn udp(server: SocketAddr, name: &str, qtype: RecordType) -> Message {
    let q = query(0x4242, name, qtype, Some(1232));
    let reply = udp_within(server, &q, REPLY).expect("a UDP reply");
    Message::from_vec(&reply).expect("decodable reply")
}

/// `clusterdns check -conf CONF`: its exit status and stderr.
pub fn check(conf: &Path) -> (std::process::ExitStatus, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(conf)
        .output()
        .expect("run clusterdns check");
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs a command-line client and returns its stdout.
pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} must be installed (.ci/run installs it): {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The answer section of a reply as sorted zone-file lines.
pub fn answer_lines(m: &Message) -> Vec<String> {
    let mut v: Vec<String> = m.answers.iter().map(ToString::to_string).collect();
    v.sort();
    v
}

/// `query` with its TCP length prefix.
pub fn framed(query: &[u8]) -> Vec<u8> {
    let mut out = (query.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(query);
    out
}

/// Reads one length-prefixed DNS message off a TCP stream (`None` at EOF,
/// reset or timeout).
pub fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// Reads one length-prefixed reply (`None` at EOF, reset, timeout or an
/// undecodable reply).
pub fn read_reply(s: &mut TcpStream) -> Option<Message> {
    Message::from_vec(&read_frame(s)?).ok()
}

/// Sends several queries on one TCP connection without waiting (pipelined)
/// and returns the replies in the order they arrive.
pub fn tcp_pipelined(server: SocketAddr, queries: &[Vec<u8>]) -> Vec<Message> {
    let mut s = TcpStream::connect_timeout(&server, REPLY).expect("tcp connect");
    s.set_read_timeout(Some(REPLY)).expect("timeout");
    let out: Vec<u8> = queries.iter().flat_map(|q| framed(q)).collect();
    s.write_all(&out).expect("tcp write");
    queries
        .iter()
        .map(|_| read_reply(&mut s).expect("a decodable TCP reply"))
        .collect()
}

/// One TCP query, decoded.
pub fn tcp(server: SocketAddr, name: &str, qtype: RecordType) -> Message {
    tcp_pipelined(server, &[query(0x4343, name, qtype, None)]).remove(0)
}

/// The reply's rcode as dig prints it (NOERROR, NXDOMAIN, ...).
pub fn rcode_name(m: &Message) -> String {
    clusterdns::metrics::rcode_name(m.metadata.response_code)
}

/// Whether every thread of process `pid` is stopped (state `T`), waiting
/// (until [`REPLY`], a ceiling that only catches a hang) for the stop to
/// reach them all.
#[allow(dead_code)]
pub fn all_stopped(pid: &str) -> bool {
    let deadline = std::time::Instant::now() + REPLY;
    loop {
        let states: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
                    .collect()
            })
            .unwrap_or_default();
        // The state follows the command name's closing parenthesis.
        let stopped = |stat: &String| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with(['T', 't']))
        };
        if !states.is_empty() && states.iter().all(stopped) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
