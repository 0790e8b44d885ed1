//! The UDP ports forwarded queries leave from, end to end: the real binary
//! forwarding to a scripted upstream in this file that logs the source
//! port and ID of every query and, on demand, precedes its reply with
//! forgeries (another ID, another question, not a response at all, and a
//! reply from another port), or stays silent.

mod common;

use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{rcode_name, temp_dir, udp, Server};
use hickory_proto::op::{Message, MessageType};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// What the upstream does with the next queries.
const ANSWER: u32 = 0;
const FORGE: u32 = 1;
/// Stays silent for every other query.
const DROP_HALF: u32 = 2;

struct Upstream {
    addr: SocketAddr,
    mode: Arc<AtomicU32>,
    /// (source port, ID) of every query received.
    seen: Arc<Mutex<Vec<(u16, u16)>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Upstream {
    fn start() -> Upstream {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let forger = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let up = Upstream {
            addr: socket.local_addr().expect("addr"),
            mode: Arc::new(AtomicU32::new(ANSWER)),
            seen: Arc::new(Mutex::new(Vec::new())),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (mode, seen, stop) = (up.mode.clone(), up.seen.clone(), up.stop.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65535];
            let mut n_seen = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, peer)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                let Ok(req) = Message::from_vec(&buf[..n]) else {
                    continue;
                };
                n_seen += 1;
                if let Ok(mut s) = seen.lock() {
                    s.push((peer.port(), req.metadata.id));
                }
                match mode.load(Ordering::Relaxed) {
                    DROP_HALF if n_seen.is_multiple_of(2) => continue,
                    FORGE => {
                        let id = req.metadata.id;
                        let _ = socket.send_to(&reply(&req, id.wrapping_add(1), None, [6, 6, 6, 6]), peer);
                        let _ = socket.send_to(&reply(&req, id, Some("forged.example."), [6, 6, 6, 6]), peer);
                        let mut not_a_response = reply(&req, id, None, [6, 6, 6, 6]);
                        not_a_response[2] &= 0x7f;
                        let _ = socket.send_to(&not_a_response, peer);
                        // right ID and question, wrong source: the kernel drops it
                        let _ = forger.send_to(&reply(&req, id, None, [6, 6, 6, 6]), peer);
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    _ => {}
                }
                let _ = socket.send_to(&reply(&req, req.metadata.id, None, [192, 0, 2, 7]), peer);
            }
        });
        up
    }

    fn seen(&self) -> Vec<(u16, u16)> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// A reply to `req` with `id`, for `name` instead of its question when set.
fn reply(req: &Message, id: u16, name: Option<&str>, ip: [u8; 4]) -> Vec<u8> {
    let mut m = Message::new(id, MessageType::Response, req.metadata.op_code);
    m.metadata.recursion_desired = true;
    m.metadata.recursion_available = true;
    let mut q = req.queries[0].clone();
    if let Some(name) = name {
        q.set_name(Name::from_ascii(name).expect("name"));
    }
    let owner = q.name().clone();
    m.add_query(q);
    m.add_answer(Record::from_rdata(
        owner,
        60,
        RData::A(A::from(std::net::Ipv4Addr::from(ip))),
    ));
    m.to_vec().expect("encode")
}

fn server(up: &Upstream, tag: &str) -> Server {
    let corefile = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    forward . {} {{\n        max_fails 0\n        read_timeout 200ms\n    }}\n}}\n",
        up.addr
    );
    Server::start(&temp_dir(tag), &corefile)
}

fn ask(server: &Server, name: &str) -> (String, Vec<String>) {
    let m = udp(server.dns, name, RecordType::A);
    (rcode_name(&m), m.answers.iter().map(|r| r.data.to_string()).collect())
}

fn strays(server: &Server, reason: &str) -> f64 {
    server.metric_sum(
        "clusterdns_forward_stray_replies_total",
        &format!("reason=\"{reason}\""),
    )
}

#[test]
fn forged_replies_are_dropped_and_counted() {
    let up = Upstream::start();
    let server = server(&up, "ports-forged");
    up.mode.store(FORGE, Ordering::Relaxed);
    for i in 0..5 {
        let (rcode, ips) = ask(&server, &format!("bank{i}.example.org."));
        assert_eq!(
            (rcode.as_str(), ips),
            ("NOERROR", vec!["192.0.2.7".to_string()]),
            "only the real reply"
        );
    }
    assert_eq!(strays(&server, "id"), 5.0, "another ID");
    assert_eq!(strays(&server, "question"), 5.0, "another question");
    assert_eq!(strays(&server, "malformed"), 5.0, "not a response");
    // The ports are connected: the kernel drops a datagram from another
    // address or port before we see it, so nothing of ours counts it.
    assert_eq!(strays(&server, "source"), 0.0);
}

#[test]
fn ports_and_ids_spread_across_a_batch_and_sockets_stay_bounded() {
    let up = Upstream::start();
    let server = server(&up, "ports-spread");
    let fds = || std::fs::read_dir(format!("/proc/{}/fd", server.pid())).map_or(0, |d| d.count());
    let before = fds();
    // Enough to fill a lane's pool (1,024 idle ports) and reuse its ports.
    let total = 3000;
    for i in 0..total {
        let (rcode, _) = ask(&server, &format!("n{i}.example.org."));
        assert_eq!(rcode, "NOERROR");
    }
    let seen = up.seen();
    assert_eq!(seen.len(), total);
    let last: Vec<_> = seen[total - 1000..].to_vec();
    let ports: HashSet<u16> = last.iter().map(|s| s.0).collect();
    let ids: HashSet<u16> = last.iter().map(|s| s.1).collect();
    assert!(
        ports.len() >= 900,
        "{} distinct ports in the last 1000 queries",
        ports.len()
    );
    assert!(ids.len() >= 900, "{} distinct IDs in the last 1000 queries", ids.len());
    let open = server.metric_sum("clusterdns_forward_udp_ports", "");
    let lanes = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4) as f64;
    assert!(open <= 1024.0 * lanes + 64.0, "{open} ports open");
    let grown = fds().saturating_sub(before) as f64;
    assert!(grown <= open + 16.0, "{grown} more descriptors with {open} ports open");

    // A query that gets no reply closes its port: none is left behind.
    up.mode.store(DROP_HALF, Ordering::Relaxed);
    let open_before = server.metric_sum("clusterdns_forward_udp_ports", "");
    for i in 0..10 {
        let _ = ask(&server, &format!("lossy{i}.example.org."));
    }
    std::thread::sleep(Duration::from_millis(300));
    let open_after = server.metric_sum("clusterdns_forward_udp_ports", "");
    assert!(
        open_after <= open_before + 1.0,
        "{open_before} ports open before, {open_after} after timeouts"
    );
    assert!(
        fds() <= before + open_after as usize + 16,
        "descriptors follow the open ports"
    );
}
