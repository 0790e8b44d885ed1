//! A minimal DNS client for measurements: one A query over UDP, the
//! answer's addresses back. Enough to watch a name change; not a resolver.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

/// The A records of `name` from `server`, or `None` on timeout or a
/// negative or undecodable reply.
pub fn query_a(sock: &UdpSocket, server: SocketAddr, name: &str, id: u16) -> Option<Vec<Ipv4Addr>> {
    let mut q = Vec::with_capacity(64);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    sock.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    sock.send_to(&q, server).ok()?;
    let mut buf = [0u8; 1500];
    loop {
        let n = sock.recv(&mut buf).ok()?;
        let reply = &buf[..n];
        if reply.len() < 12 || reply[..2] != id.to_be_bytes() {
            continue;
        }
        return parse_a(reply);
    }
}

fn skip_name(msg: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *msg.get(at)? as usize;
        if len & 0xC0 == 0xC0 {
            return Some(at + 2);
        }
        at += len + 1;
        if len == 0 {
            return Some(at);
        }
    }
}

fn parse_a(msg: &[u8]) -> Option<Vec<Ipv4Addr>> {
    if msg[3] & 0x0F != 0 {
        return None;
    }
    let answers = u16::from_be_bytes([msg[6], msg[7]]);
    let mut at = skip_name(msg, 12)? + 4;
    let mut out = Vec::new();
    for _ in 0..answers {
        at = skip_name(msg, at)?;
        let rtype = u16::from_be_bytes([*msg.get(at)?, *msg.get(at + 1)?]);
        let rdlen = u16::from_be_bytes([*msg.get(at + 8)?, *msg.get(at + 9)?]) as usize;
        let rdata = msg.get(at + 10..at + 10 + rdlen)?;
        if rtype == 1 && rdlen == 4 {
            out.push(Ipv4Addr::new(rdata[0], rdata[1], rdata[2], rdata[3]));
        }
        at += 10 + rdlen;
    }
    Some(out)
}

/// A stand-in upstream resolver on loopback for load runs that forward:
/// every query gets one A record (`192.0.2.1`, TTL `ttl`), so the server's
/// forward path and cache turn over. Answers until the returned guard is
/// dropped.
pub fn stub_upstream(ttl: u32) -> std::io::Result<(SocketAddr, Stub)> {
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let addr = sock.local_addr()?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        let mut out = Vec::with_capacity(512);
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((n, peer)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if answer_a(&buf[..n], ttl, &mut out) {
                let _ = sock.send_to(&out, peer);
            }
        }
    });
    Ok((addr, Stub(stop)))
}

/// Stops [`stub_upstream`]'s thread when dropped.
pub struct Stub(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for Stub {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The reply to `query` with one A record, without its additional section.
fn answer_a(query: &[u8], ttl: u32, out: &mut Vec<u8>) -> bool {
    let Some(end) = (query.len() >= 12).then(|| skip_name(query, 12)).flatten() else {
        return false;
    };
    let Some(question) = query.get(..end + 4) else {
        return false;
    };
    out.clear();
    out.extend_from_slice(question);
    out[2] = 0x81 | (query[2] & 0x01);
    out[3] = 0x80;
    out[6..12].copy_from_slice(&[0, 1, 0, 0, 0, 0]);
    out.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1]);
    out.extend_from_slice(&ttl.to_be_bytes());
    out.extend_from_slice(&[0, 4, 192, 0, 2, 1]);
    true
}
