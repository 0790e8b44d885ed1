//! The open-loop query engine: queries leave on a fixed schedule whatever
//! the server does, and each latency is measured from the query's
//! *scheduled* send time, so a stalled server shows up as latency instead
//! of silently slowing the generator (no coordinated omission).
//!
//! One sender thread paces the schedule over many sockets (many pods:
//! they spread over the server's `SO_REUSEPORT` sockets) or persistent,
//! pipelined TCP connections; one receiver thread waits on all of them
//! with epoll (mio). A query unanswered within the timeout is lost.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token};

/// UDP or pipelined TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Udp,
    Tcp,
}

/// One step of load.
#[derive(Debug, Clone)]
pub struct Step {
    pub target: SocketAddr,
    pub proto: Proto,
    /// Queries per second offered.
    pub rate: f64,
    pub duration: Duration,
    /// Sockets (UDP) or connections (TCP).
    pub sockets: usize,
    pub timeout: Duration,
}

/// Log-linear latency buckets: 16 per power of two of microseconds.
const SUB: usize = 16;
const BUCKETS: usize = 40 * SUB;

/// What a step measured.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub offered: f64,
    pub sent: u64,
    pub answered: u64,
    pub lost: u64,
    pub seconds: f64,
    /// Answers by rcode (0..15).
    pub rcodes: [u64; 16],
    buckets: Vec<u64>,
    sum_us: f64,
}

fn bucket(us: f64) -> usize {
    if us < 1.0 {
        return 0;
    }
    let exp = us.log2().floor();
    let frac = us / exp.exp2() - 1.0;
    ((exp as usize) * SUB + (frac * SUB as f64) as usize).min(BUCKETS - 1)
}

fn bucket_value(i: usize) -> f64 {
    let (exp, sub) = (i / SUB, i % SUB);
    (exp as f64).exp2() * (1.0 + (sub as f64 + 0.5) / SUB as f64)
}

impl Outcome {
    /// Achieved answers per second.
    pub fn achieved(&self) -> f64 {
        self.answered as f64 / self.seconds.max(1e-9)
    }

    pub fn loss(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.lost as f64 / self.sent as f64
        }
    }

    pub fn mean_ms(&self) -> f64 {
        if self.answered == 0 {
            0.0
        } else {
            self.sum_us / self.answered as f64 / 1000.0
        }
    }

    /// The `q` quantile (0..1) of latency, in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let want = (q * total as f64).ceil() as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want.max(1) {
                return bucket_value(i) / 1000.0;
            }
        }
        bucket_value(BUCKETS - 1) / 1000.0
    }
}

/// Sent-time table: `[socket][id]` → nanoseconds since start of the
/// scheduled send, plus one (0 = nothing outstanding).
struct Pending(Vec<AtomicU64>);

impl Pending {
    fn slot(&self, socket: usize, id: u16) -> &AtomicU64 {
        &self.0[socket * 65536 + usize::from(id)]
    }
}

enum Conn {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

fn open(step: &Step) -> io::Result<Vec<(Conn, Conn)>> {
    let mut out = Vec::new();
    for _ in 0..step.sockets.max(1) {
        match step.proto {
            Proto::Udp => {
                // Loopback targets from loopback; others (a node-local
                // address in a network namespace) from any address.
                let local: SocketAddr = match (step.target.is_ipv6(), step.target.ip().is_loopback()) {
                    (true, true) => "[::1]:0".parse().map_err(io::Error::other)?,
                    (false, true) => "127.0.0.1:0".parse().map_err(io::Error::other)?,
                    (true, false) => "[::]:0".parse().map_err(io::Error::other)?,
                    (false, false) => "0.0.0.0:0".parse().map_err(io::Error::other)?,
                };
                let std = std::net::UdpSocket::bind(local)?;
                std.connect(step.target)?;
                std.set_nonblocking(true)?;
                let _ = socket2::SockRef::from(&std).set_recv_buffer_size(4 << 20);
                let clone = std.try_clone()?;
                out.push((
                    Conn::Udp(UdpSocket::from_std(std)),
                    Conn::Udp(UdpSocket::from_std(clone)),
                ));
            }
            Proto::Tcp => {
                let std = std::net::TcpStream::connect_timeout(&step.target, Duration::from_secs(2))?;
                std.set_nodelay(true)?;
                let clone = std.try_clone()?;
                std.set_nonblocking(true)?;
                out.push((
                    Conn::Tcp(TcpStream::from_std(std)),
                    Conn::Tcp(TcpStream::from_std(clone)),
                ));
            }
        }
    }
    Ok(out)
}

/// Runs one step: `queries` (wire messages; their IDs are overwritten) are
/// sent in order, cycling, on the step's schedule. One thread sends what is
/// due and reads what has arrived in turn, so no thread hand-off adds
/// latency that is not the server's.
pub fn run(step: &Step, queries: &[Vec<u8>], progress: &dyn Fn(f64)) -> io::Result<Outcome> {
    if queries.is_empty() {
        return Err(io::Error::other("no queries to send"));
    }
    let mut conns = open(step)?;
    let n = conns.len();
    let mut poll = Poll::new()?;
    for (i, (reader, _)) in conns.iter_mut().enumerate() {
        match reader {
            Conn::Udp(u) => poll.registry().register(u, Token(i), Interest::READABLE)?,
            Conn::Tcp(t) => poll.registry().register(t, Token(i), Interest::READABLE)?,
        }
    }
    let mut rx = Receiver {
        pending: Pending((0..n * 65536).map(|_| AtomicU64::new(0)).collect()),
        out: Outcome {
            buckets: vec![0; BUCKETS],
            ..Default::default()
        },
        streams: vec![Vec::new(); n],
        buf: vec![0u8; 65536],
        timeout_ns: step.timeout.as_nanos() as u64,
        start: Instant::now(),
    };
    let mut events = Events::with_capacity(1024);
    let total = (step.rate * step.duration.as_secs_f64()).round() as u64;
    let interval = 1.0 / step.rate.max(1e-9);
    let mut sent = 0u64;
    let mut frame = Vec::with_capacity(600);
    // TCP bytes not yet accepted by the socket, per connection.
    let mut unsent: Vec<Vec<u8>> = vec![Vec::new(); n];
    let mut last_report = Instant::now();
    let start = rx.start;
    while sent < total {
        let now = start.elapsed();
        while sent < total && Duration::from_secs_f64(sent as f64 * interval) <= now {
            let due = Duration::from_secs_f64(sent as f64 * interval);
            let s = (sent as usize) % n;
            let id = ((sent as usize / n) % 65536) as u16;
            let q = &queries[(sent as usize) % queries.len()];
            frame.clear();
            if step.proto == Proto::Tcp {
                frame.extend_from_slice(&(q.len() as u16).to_be_bytes());
            }
            let at = frame.len();
            frame.extend_from_slice(q);
            frame[at..at + 2].copy_from_slice(&id.to_be_bytes());
            rx.pending
                .slot(s, id)
                .store(due.as_nanos() as u64 + 1, Ordering::Relaxed);
            match &mut conns[s].1 {
                // A full socket buffer is a loss like any other: the slot stays pending.
                Conn::Udp(u) => {
                    let _ = u.send(&frame);
                }
                Conn::Tcp(_) => unsent[s].extend_from_slice(&frame),
            }
            sent += 1;
        }
        flush(&mut conns, &mut unsent);
        let next = Duration::from_secs_f64(sent as f64 * interval);
        let wait = next.saturating_sub(start.elapsed());
        let wait = if wait > Duration::from_millis(2) {
            wait - Duration::from_millis(1)
        } else {
            Duration::ZERO
        };
        rx.drain(&mut poll, &mut events, &mut conns, wait);
        if last_report.elapsed() > Duration::from_millis(200) {
            progress(sent as f64 / total.max(1) as f64);
            last_report = Instant::now();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    progress(1.0);
    let deadline = Instant::now() + step.timeout;
    while Instant::now() < deadline && rx.out.answered < sent {
        flush(&mut conns, &mut unsent);
        rx.drain(&mut poll, &mut events, &mut conns, Duration::from_millis(10));
    }
    let mut outcome = rx.out;
    outcome.offered = step.rate;
    outcome.sent = sent;
    outcome.seconds = seconds;
    outcome.lost = rx.pending.0.iter().filter(|p| p.load(Ordering::Relaxed) != 0).count() as u64;
    Ok(outcome)
}

/// Writes what the TCP connections will take now, keeping the rest.
fn flush(conns: &mut [(Conn, Conn)], unsent: &mut [Vec<u8>]) {
    for (s, (_, w)) in conns.iter_mut().enumerate() {
        let Conn::Tcp(t) = w else { continue };
        while !unsent[s].is_empty() {
            match t.write(&unsent[s]) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    unsent[s].drain(..n);
                }
            }
        }
    }
}

/// The reading side of a step.
struct Receiver {
    pending: Pending,
    out: Outcome,
    streams: Vec<Vec<u8>>,
    buf: Vec<u8>,
    timeout_ns: u64,
    start: Instant,
}

impl Receiver {
    fn record(&mut self, s: usize, at: usize, len: usize, from_stream: bool) {
        let msg = if from_stream {
            &self.streams[s][at..at + len]
        } else {
            &self.buf[at..at + len]
        };
        if msg.len() < 4 {
            return;
        }
        let id = u16::from_be_bytes([msg[0], msg[1]]);
        let rcode = usize::from(msg[3] & 0x0f);
        let slot = self.pending.slot(s, id);
        let sent = slot.swap(0, Ordering::Relaxed);
        if sent == 0 {
            return; // late (already counted lost) or not ours
        }
        let latency = (self.start.elapsed().as_nanos() as u64).saturating_sub(sent - 1);
        if latency > self.timeout_ns {
            slot.store(sent, Ordering::Relaxed); // too late: stays lost
            return;
        }
        let out = &mut self.out;
        out.answered += 1;
        out.rcodes[rcode] += 1;
        let us = latency as f64 / 1000.0;
        out.buckets[bucket(us)] += 1;
        out.sum_us += us;
    }

    /// Waits up to `wait` for replies and reads all that arrived.
    fn drain(&mut self, poll: &mut Poll, events: &mut Events, conns: &mut [(Conn, Conn)], wait: Duration) {
        if poll.poll(events, Some(wait)).is_err() {
            return;
        }
        for ev in events.iter() {
            let s = ev.token().0;
            match &mut conns[s].0 {
                Conn::Udp(u) => {
                    while let Ok(n) = u.recv(&mut self.buf) {
                        self.record(s, 0, n, false);
                    }
                }
                Conn::Tcp(t) => loop {
                    match t.read(&mut self.buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let chunk = self.buf[..n].to_vec();
                            self.streams[s].extend_from_slice(&chunk);
                            let mut at = 0;
                            while self.streams[s].len() >= at + 2 {
                                let len =
                                    usize::from(u16::from_be_bytes([self.streams[s][at], self.streams[s][at + 1]]));
                                if self.streams[s].len() < at + 2 + len {
                                    break;
                                }
                                self.record(s, at + 2, len, true);
                                at += 2 + len;
                            }
                            self.streams[s].drain(..at);
                        }
                    }
                },
            }
        }
    }
}

/// A DNS query message (RD set, no EDNS) for `name` and `qtype`.
pub fn query(name: &str, qtype: u16) -> Vec<u8> {
    let mut q = Vec::with_capacity(64);
    q.extend_from_slice(&[0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.').filter(|l| !l.is_empty()) {
        q.push(label.len().min(63) as u8);
        q.extend_from_slice(&label.as_bytes()[..label.len().min(63)]);
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    q
}

/// A query type by name (A, AAAA, SRV, PTR, TXT, MX, NS, SOA, CNAME, ANY).
pub fn qtype(name: &str) -> Option<u16> {
    Some(match name.to_ascii_uppercase().as_str() {
        "A" => 1,
        "NS" => 2,
        "CNAME" => 5,
        "SOA" => 6,
        "PTR" => 12,
        "MX" => 15,
        "TXT" => 16,
        "AAAA" => 28,
        "SRV" => 33,
        "HTTPS" => 65,
        "ANY" => 255,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_buckets() {
        let mut o = Outcome {
            buckets: vec![0; BUCKETS],
            ..Default::default()
        };
        for us in [100.0, 200.0, 400.0, 800.0] {
            for _ in 0..25 {
                o.buckets[bucket(us)] += 1;
            }
        }
        let p50 = o.quantile_ms(0.5);
        assert!((0.19..0.22).contains(&p50), "{p50}");
        let p99 = o.quantile_ms(0.99);
        assert!((0.78..0.84).contains(&p99), "{p99}");
        assert_eq!(
            query("a.b", 1),
            [0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 1, b'b', 0, 0, 1, 0, 1]
        );
    }
}
