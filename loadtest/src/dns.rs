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
