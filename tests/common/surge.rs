//! The client side of the surge-upgrade test (tests/nodelocal_surge.rs),
//! run inside the "pod" network namespace by the test binary itself
//! (`ip netns exec POD TEST-BINARY --ignored --exact surge_client`): a
//! steady UDP load spread over many source ports (so the kernel's
//! `SO_REUSEPORT` choice spreads it over every server socket), plus a few
//! persistent TCP connections sending one query after another, until the
//! test creates the stop file (an event, not a duration: the load covers
//! every step of the test however slow the machine). Every query is
//! accounted for: answered (and how), or lost (no answer within [`LATE`],
//! a ceiling that only a query that will never be answered reaches).
//!
//! A TCP connection the server closes is reopened and its unanswered query
//! sent again, as RFC 7766 §6.2.4 asks of clients; such retries are
//! counted apart, not as losses.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::Instant;

/// How long after the load ends an answer still counts.
pub const LATE: Duration = Duration::from_secs(10);
/// A load nobody stops ends by itself after this (a test that panicked).
const ABANDONED: Duration = Duration::from_secs(600);
/// UDP source sockets.
const SOCKETS: usize = 48;

/// What the client counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub sent: u64,
    pub answered: u64,
    pub servfail: u64,
    pub lost: u64,
    pub tcp_sent: u64,
    pub tcp_answered: u64,
    pub tcp_servfail: u64,
    pub tcp_lost: u64,
    pub tcp_reopened: u64,
    /// UDP sends that failed (ENETUNREACH and the like).
    pub send_errors: u64,
    /// Errors read back on a UDP socket (ECONNREFUSED: no socket bound).
    pub recv_errors: u64,
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TALLY {} {} {} {} {} {} {} {} {} {} {}",
            self.sent,
            self.answered,
            self.servfail,
            self.lost,
            self.tcp_sent,
            self.tcp_answered,
            self.tcp_servfail,
            self.tcp_lost,
            self.tcp_reopened,
            self.send_errors,
            self.recv_errors
        )
    }
}

impl Tally {
    /// Reads the `TALLY ...` line [`Display`](fmt::Display) wrote.
    pub fn parse(text: &str) -> Option<Tally> {
        let line = text.lines().find_map(|l| l.split_once("TALLY ").map(|(_, t)| t))?;
        let v: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        (v.len() == 11).then(|| Tally {
            sent: v[0],
            answered: v[1],
            servfail: v[2],
            lost: v[3],
            tcp_sent: v[4],
            tcp_answered: v[5],
            tcp_servfail: v[6],
            tcp_lost: v[7],
            tcp_reopened: v[8],
            send_errors: v[9],
            recv_errors: v[10],
        })
    }

    fn add(&mut self, o: &Tally) {
        self.sent += o.sent;
        self.answered += o.answered;
        self.servfail += o.servfail;
        self.lost += o.lost;
        self.tcp_sent += o.tcp_sent;
        self.tcp_answered += o.tcp_answered;
        self.tcp_servfail += o.tcp_servfail;
        self.tcp_lost += o.tcp_lost;
        self.tcp_reopened += o.tcp_reopened;
        self.send_errors += o.send_errors;
        self.recv_errors += o.recv_errors;
    }
}

/// A query for `name` A with `id`.
fn query(id: u16, name: &str) -> Vec<u8> {
    let mut q = vec![(id >> 8) as u8, id as u8, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in name.split('.').filter(|l| !l.is_empty()) {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    q
}

fn id_and_rcode(reply: &[u8]) -> Option<(u16, u8)> {
    (reply.len() >= 12).then(|| (u16::from_be_bytes([reply[0], reply[1]]), reply[3] & 0x0f))
}

/// One UDP source socket sending every `period` until `stop`; also
/// returns when each lost query was sent.
async fn udp_flow(target: SocketAddr, name: &str, period: Duration, stop: Stop) -> (Tally, Vec<Instant>) {
    let mut t = Tally::default();
    let Ok(sock) = UdpSocket::bind("0.0.0.0:0").await else {
        return (t, Vec::new());
    };
    if sock.connect(target).await.is_err() {
        return (t, Vec::new());
    }
    let mut pending: HashMap<u16, Instant> = HashMap::new();
    let mut tick = tokio::time::interval_at(Instant::now() + period.mul_f64(fastrand::f64()), period);
    let mut buf = [0u8; 1500];
    let mut id: u16 = fastrand::u16(..);
    let mut end = None;
    loop {
        if end.is_none() && stop.is_set() {
            end = Some(Instant::now());
        }
        let late = end.is_some();
        if end.is_some_and(|e| pending.is_empty() || Instant::now() >= e + LATE) {
            break;
        }
        tokio::select! {
            _ = tick.tick(), if !late => {
                id = id.wrapping_add(1);
                t.sent += 1;
                pending.insert(id, Instant::now());
                if sock.send(&query(id, name)).await.is_err() {
                    t.send_errors += 1;
                }
            }
            got = sock.recv(&mut buf) => {
                let Ok(n) = got else {
                    t.recv_errors += 1;
                    continue;
                };
                if let Some((id, rcode)) = id_and_rcode(&buf[..n]) {
                    if pending.remove(&id).is_some() {
                        t.answered += 1;
                        t.servfail += u64::from(rcode == 2);
                    }
                }
            }
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    t.lost = pending.len() as u64;
    (t, pending.into_values().collect())
}

/// Sends `framed` on `conn` (reopened when needed) and reads its reply;
/// `None` when no reply came by `deadline`.
async fn tcp_exchange(
    conn: &mut Option<TcpStream>,
    target: SocketAddr,
    framed: &[u8],
    deadline: Instant,
    t: &mut Tally,
) -> Option<Vec<u8>> {
    while Instant::now() < deadline {
        if conn.is_none() {
            match tokio::time::timeout_at(deadline, TcpStream::connect(target)).await {
                Ok(Ok(s)) => *conn = Some(s),
                _ => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            }
        }
        let s = conn.as_mut()?;
        let exchange = async {
            s.write_all(framed).await?;
            let mut len = [0u8; 2];
            s.read_exact(&mut len).await?;
            let mut reply = vec![0u8; usize::from(u16::from_be_bytes(len))];
            s.read_exact(&mut reply).await?;
            Ok::<_, std::io::Error>(reply)
        };
        match tokio::time::timeout_at(deadline, exchange).await {
            Ok(Ok(reply)) => return Some(reply),
            Ok(Err(_)) => {
                // Closed by the server: reopen and ask again.
                *conn = None;
                t.tcp_reopened += 1;
            }
            Err(_) => return None,
        }
    }
    None
}

/// One persistent TCP connection asking every `period` until `stop`.
async fn tcp_flow(target: SocketAddr, name: &str, period: Duration, stop: Stop) -> (Tally, Vec<Instant>) {
    let mut lost = Vec::new();
    let mut t = Tally::default();
    let mut conn = None;
    let mut id: u16 = fastrand::u16(..);
    while !stop.is_set() {
        id = id.wrapping_add(1);
        let q = query(id, name);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        t.tcp_sent += 1;
        let sent = Instant::now();
        let next = sent + period;
        match tcp_exchange(&mut conn, target, &framed, Instant::now() + LATE, &mut t).await {
            Some(reply) if id_and_rcode(&reply).is_some_and(|(i, _)| i == id) => {
                t.tcp_answered += 1;
                t.tcp_servfail += u64::from(reply[3] & 0x0f == 2);
            }
            _ => {
                t.tcp_lost += 1;
                lost.push(sent);
                conn = None;
            }
        }
        tokio::time::sleep_until(next).await;
    }
    (t, lost)
}

/// When the lost queries were sent: `LOST u|t SECONDS:COUNT ...`, in
/// tenths of a second since `start`.
fn lost_line(kind: &str, start: Instant, lost: &[Instant]) -> String {
    let mut buckets = std::collections::BTreeMap::new();
    for at in lost {
        *buckets
            .entry(at.duration_since(start).as_millis() / 100)
            .or_insert(0u64) += 1;
    }
    let spread: Vec<String> = buckets
        .iter()
        .map(|(b, n)| format!("{:.1}:{n}", *b as f64 / 10.0))
        .collect();
    format!("LOST {kind} {}", spread.join(" "))
}

/// Set once the stop file exists (polled every 20 ms), or after
/// [`ABANDONED`].
#[derive(Clone)]
struct Stop(Arc<AtomicBool>);

impl Stop {
    fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn watch(file: PathBuf) -> Stop {
        let flag = Arc::new(AtomicBool::new(false));
        let set = flag.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            while !file.exists() && started.elapsed() < ABANDONED {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            set.store(true, Ordering::Relaxed);
        });
        Stop(flag)
    }
}

/// Runs the load: `rate` UDP queries a second over [`SOCKETS`] sockets
/// and `tcp` connections at 50 queries a second each, spread over
/// `targets`, until `stop_file` exists; prints the [`Tally`].
pub fn client(targets: &[SocketAddr], name: &str, rate: f64, tcp: usize, stop_file: &Path) -> Tally {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let start = Instant::now();
        let stop = Stop::watch(stop_file.to_path_buf());
        let period = Duration::from_secs_f64(SOCKETS as f64 / rate);
        let mut tasks = Vec::new();
        for i in 0..SOCKETS {
            let (target, name, stop) = (targets[i % targets.len()], name.to_string(), stop.clone());
            tasks.push((
                true,
                tokio::spawn(async move { udp_flow(target, &name, period, stop).await }),
            ));
        }
        for i in 0..tcp {
            let (target, name, stop) = (targets[i % targets.len()], name.to_string(), stop.clone());
            let period = Duration::from_millis(20);
            tasks.push((
                false,
                tokio::spawn(async move { tcp_flow(target, &name, period, stop).await }),
            ));
        }
        let mut all = Tally::default();
        let (mut udp_lost, mut tcp_lost) = (Vec::new(), Vec::new());
        for (udp, task) in tasks {
            if let Ok((t, lost)) = task.await {
                all.add(&t);
                if udp { &mut udp_lost } else { &mut tcp_lost }.extend(lost);
            }
        }
        println!("{}", lost_line("u", start, &udp_lost));
        println!("{}", lost_line("t", start, &tcp_lost));
        all
    })
}
