//! An in-process upstream resolver for forward tests, with faults on
//! demand. It answers every name with `A 192.0.2.1` (TTL `ttl`), names
//! starting with `nx.` with NXDOMAIN and an SOA, and `big.` TXT with about
//! 2 KB of TXT strings (over UDP: TC when it does not fit the request's
//! payload size), `alias.` names A with a CNAME to `real.cdn.example.` and
//! its address. Every query received is counted and kept (the last 100),
//! with the address it came from; TCP connections accepted are counted.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::{A, SOA, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// What the stub does with the next queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Answer,
    /// Never replies.
    Silent,
    ServFail,
    /// Replies with this rcode and no records (UDP and TCP).
    Rcode(ResponseCode),
    /// Replies after this delay.
    Slow(Duration),
    /// Over UDP: a reply with a wrong ID and one with a wrong question
    /// come first, then the real one.
    Forged,
    /// Over UDP: an empty reply with TC set (TCP still answers whole).
    Truncate,
    /// Over TCP: half an answer, then the connection is closed.
    CloseMidTcp,
}

pub struct Stub {
    pub addr: SocketAddr,
    pub mode: Arc<Mutex<Mode>>,
    pub queries: Arc<AtomicU64>,
    pub ttl: Arc<AtomicU32>,
    /// The requests received, oldest first.
    pub seen: Arc<Mutex<Vec<Message>>>,
    /// Where the requests came from, oldest first (the last 100).
    pub sources: Arc<Mutex<Vec<SocketAddr>>>,
    /// TCP connections accepted.
    pub connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct Shared {
    mode: Arc<Mutex<Mode>>,
    queries: Arc<AtomicU64>,
    ttl: Arc<AtomicU32>,
    seen: Arc<Mutex<Vec<Message>>>,
    sources: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Shared {
    fn saw(&self, req: &Message, from: SocketAddr) {
        self.queries.fetch_add(1, Ordering::Relaxed);
        if let (Ok(mut seen), Ok(mut sources)) = (self.seen.lock(), self.sources.lock()) {
            if seen.len() >= 100 {
                seen.remove(0);
                sources.remove(0);
            }
            seen.push(req.clone());
            sources.push(from);
        }
    }
}

impl Stub {
    pub fn start() -> Stub {
        let (udp, tcp) = super::free_pair();
        let addr = udp.local_addr().expect("addr");
        let stub = Stub {
            addr,
            mode: Arc::new(Mutex::new(Mode::Answer)),
            queries: Arc::new(AtomicU64::new(0)),
            ttl: Arc::new(AtomicU32::new(60)),
            seen: Arc::new(Mutex::new(Vec::new())),
            sources: Arc::new(Mutex::new(Vec::new())),
            connections: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let shared = || {
            Arc::new(Shared {
                mode: stub.mode.clone(),
                queries: stub.queries.clone(),
                ttl: stub.ttl.clone(),
                seen: stub.seen.clone(),
                sources: stub.sources.clone(),
            })
        };
        let (s, stop) = (shared(), stub.stop.clone());
        udp.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
        let udp = Arc::new(udp);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65535];
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, peer)) = udp.recv_from(&mut buf) else {
                    continue;
                };
                let (req, s, udp) = (buf[..n].to_vec(), s.clone(), udp.clone());
                std::thread::spawn(move || serve_udp(&udp, peer, &req, &s));
            }
        });
        let (s, stop, accepted) = (shared(), stub.stop.clone(), stub.connections.clone());
        tcp.set_nonblocking(true).expect("nonblocking");
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match tcp.accept() {
                    Ok((conn, _)) => {
                        accepted.fetch_add(1, Ordering::Relaxed);
                        let s = s.clone();
                        std::thread::spawn(move || serve_tcp(conn, &s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        stub
    }

    pub fn set(&self, mode: Mode) {
        if let Ok(mut m) = self.mode.lock() {
            *m = mode;
        }
    }

    pub fn count(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// The addresses the requests came from, oldest first.
    pub fn sources(&self) -> Vec<SocketAddr> {
        self.sources.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The last request received, if any.
    pub fn last(&self) -> Option<Message> {
        self.seen.lock().ok()?.last().cloned()
    }
}

fn mode(s: &Shared) -> Mode {
    s.mode.lock().map(|m| *m).unwrap_or(Mode::Answer)
}

/// The full answer to `req`.
fn answer(req: &Message, s: &Shared, rcode: Option<ResponseCode>) -> Message {
    let mut m = Message::new(req.metadata.id, MessageType::Response, req.metadata.op_code);
    m.metadata.recursion_desired = req.metadata.recursion_desired;
    m.metadata.recursion_available = true;
    m.queries = req.queries.clone();
    if let Some(e) = &req.edns {
        let mut edns = hickory_proto::op::Edns::new();
        edns.set_max_payload(e.max_payload().max(512));
        m.edns = Some(edns);
    }
    let Some(q) = req.queries.first() else { return m };
    let name = q.name().clone();
    let lower = name.to_lowercase().to_ascii();
    let ttl = s.ttl.load(Ordering::Relaxed);
    if let Some(rc) = rcode {
        m.metadata.response_code = rc;
    } else if lower.starts_with("nx.") || q.query_type() == RecordType::HINFO {
        m.metadata.response_code = ResponseCode::NXDomain;
        let apex = Name::from_ascii("example.").expect("apex");
        let soa = SOA::new(apex.clone(), apex.clone(), 1, 3600, 600, 86400, 30);
        m.authorities.push(Record::from_rdata(apex, 60, RData::SOA(soa)));
    } else if lower.starts_with("big.") && q.query_type() == RecordType::TXT {
        for i in 0..20 {
            let text = format!("{i:02}-{}", "x".repeat(97));
            m.answers
                .push(Record::from_rdata(name.clone(), ttl, RData::TXT(TXT::new(vec![text]))));
        }
    } else if lower.starts_with("alias.") && q.query_type() == RecordType::A {
        let real = Name::from_ascii("real.cdn.example.").expect("name");
        let cname = hickory_proto::rr::rdata::CNAME(real.clone());
        m.answers.push(Record::from_rdata(name, ttl, RData::CNAME(cname)));
        m.answers
            .push(Record::from_rdata(real, ttl, RData::A(A::new(192, 0, 2, 1))));
    } else if q.query_type() == RecordType::A {
        m.answers
            .push(Record::from_rdata(name, ttl, RData::A(A::new(192, 0, 2, 1))));
    }
    m
}

fn serve_udp(udp: &UdpSocket, peer: SocketAddr, req: &[u8], s: &Shared) {
    let Ok(req) = Message::from_vec(req) else { return };
    s.saw(&req, peer);
    let limit = req.edns.as_ref().map_or(512, |e| usize::from(e.max_payload().max(512)));
    let send = |m: &Message| {
        if let Ok(b) = m.to_vec() {
            let _ = udp.send_to(&b, peer);
        }
    };
    match mode(s) {
        Mode::Silent => {}
        Mode::ServFail => send(&answer(&req, s, Some(ResponseCode::ServFail))),
        Mode::Rcode(rc) => send(&answer(&req, s, Some(rc))),
        Mode::Slow(d) => {
            std::thread::sleep(d);
            send(&answer(&req, s, None));
        }
        Mode::Forged => {
            let mut wrong_id = answer(&req, s, None);
            wrong_id.metadata.id = req.metadata.id.wrapping_add(1);
            wrong_id
                .answers
                .iter_mut()
                .for_each(|r| r.data = RData::A(A::new(6, 6, 6, 6)));
            send(&wrong_id);
            let mut wrong_q = answer(&req, s, None);
            if let Some(q) = wrong_q.queries.first_mut() {
                q.set_name(Name::from_ascii("evil.example.").expect("name"));
            }
            wrong_q
                .answers
                .iter_mut()
                .for_each(|r| r.data = RData::A(A::new(6, 6, 6, 6)));
            send(&wrong_q);
            send(&answer(&req, s, None));
        }
        Mode::Truncate => {
            let mut m = answer(&req, s, None);
            m.answers.clear();
            m.metadata.truncation = true;
            send(&m);
        }
        Mode::Answer | Mode::CloseMidTcp => {
            let m = answer(&req, s, None);
            match m.to_vec() {
                Ok(b) if b.len() > limit => {
                    let mut tc = m.clone();
                    tc.answers.clear();
                    tc.metadata.truncation = true;
                    send(&tc);
                }
                _ => send(&m),
            }
        }
    }
}

fn serve_tcp(mut conn: TcpStream, s: &Shared) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let Ok(peer) = conn.peer_addr() else { return };
    loop {
        let Some(buf) = super::read_frame(&mut conn) else {
            return;
        };
        let Ok(req) = Message::from_vec(&buf) else { return };
        s.saw(&req, peer);
        let m = match mode(s) {
            Mode::Silent => continue,
            Mode::ServFail => answer(&req, s, Some(ResponseCode::ServFail)),
            Mode::Rcode(rc) => answer(&req, s, Some(rc)),
            Mode::Slow(d) => {
                std::thread::sleep(d);
                answer(&req, s, None)
            }
            _ => answer(&req, s, None),
        };
        let Ok(bytes) = m.to_vec() else { return };
        let mut frame = u16::try_from(bytes.len()).unwrap_or(0).to_be_bytes().to_vec();
        frame.extend_from_slice(&bytes);
        if mode(s) == Mode::CloseMidTcp {
            let _ = conn.write_all(&frame[..frame.len() / 2]);
            return;
        }
        if conn.write_all(&frame).is_err() {
            return;
        }
    }
}
