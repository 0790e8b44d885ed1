//! A canned upstream for `forward` rows, answering from a table's
//! `upstream NAME <<` block over UDP and TCP on one loopback port.
//!
//! Lines of the block: a zone-file record (answered for its owner name and
//! type; a CNAME at the name is answered for every type), `rcode NAME RCODE`
//! (that rcode, no records), `drop NAME` (no reply), `tc NAME` (the reply
//! to NAME has TC set, its records still in it), `echo-opts NAME` (NAME is
//! answered with `NAME 0 IN TXT "opt" "CODE:HEX"...`, the EDNS options the
//! request carried, in order, codes as 4 hex digits; `"no-opt"` without
//! an OPT record). A name with no record
//! gets NXDOMAIN, a name with records of other types NOERROR and no data.
//! Every request is kept, so rows can be checked against what was asked.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, ResponseCode};
use hickory_proto::rr::{Record, RecordType};

/// What one upstream answers.
#[derive(Default)]
struct Script {
    records: Vec<Record>,
    rcodes: Vec<(String, ResponseCode)>,
    drops: Vec<String>,
    truncated: Vec<String>,
    echo_opts: Vec<String>,
}

pub struct Upstream {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Message>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

pub fn rcode(name: &str) -> Option<ResponseCode> {
    Some(match name.to_ascii_uppercase().as_str() {
        "NOERROR" => ResponseCode::NoError,
        "FORMERR" => ResponseCode::FormErr,
        "SERVFAIL" => ResponseCode::ServFail,
        "NXDOMAIN" => ResponseCode::NXDomain,
        "NOTIMP" => ResponseCode::NotImp,
        "REFUSED" => ResponseCode::Refused,
        "YXDOMAIN" => ResponseCode::YXDomain,
        "YXRRSET" => ResponseCode::YXRRSet,
        "NXRRSET" => ResponseCode::NXRRSet,
        "NOTAUTH" => ResponseCode::NotAuth,
        "NOTZONE" => ResponseCode::NotZone,
        "BADVERS" => ResponseCode::BADVERS,
        _ => return None,
    })
}

fn script(lines: &[(usize, String)]) -> Result<Script, String> {
    let mut s = Script::default();
    for (n, line) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            [c, ..] if c.starts_with('#') => {}
            ["rcode", name, code] => {
                let code = rcode(code).ok_or_else(|| format!("{n}: unknown rcode '{code}'"))?;
                s.rcodes.push((name.to_ascii_lowercase(), code));
            }
            ["drop", name] => s.drops.push(name.to_ascii_lowercase()),
            ["tc", name] => s.truncated.push(name.to_ascii_lowercase()),
            ["echo-opts", name] => s.echo_opts.push(name.to_ascii_lowercase()),
            _ => s
                .records
                .push(crate::records::parse(line).map_err(|e| format!("{n}: {e}"))?),
        }
    }
    Ok(s)
}

impl Upstream {
    /// Starts an upstream on `ip`, port 0, answering from `lines`.
    pub fn start(ip: std::net::IpAddr, lines: &[(usize, String)]) -> Result<Upstream, String> {
        let script = Arc::new(script(lines)?);
        let (udp, tcp) = pair(ip)?;
        let addr = udp.local_addr().map_err(|e| e.to_string())?;
        let up = Upstream {
            addr,
            seen: Arc::default(),
            stop: Arc::default(),
        };
        let (s, seen, stop) = (script.clone(), up.seen.clone(), up.stop.clone());
        let _ = udp.set_read_timeout(Some(Duration::from_millis(100)));
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65535];
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, peer)) = udp.recv_from(&mut buf) else {
                    continue;
                };
                if let Some(reply) = reply(&buf[..n], &s, &seen) {
                    let _ = udp.send_to(&reply, peer);
                }
            }
        });
        let (s, seen, stop) = (script, up.seen.clone(), up.stop.clone());
        let _ = tcp.set_nonblocking(true);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match tcp.accept() {
                    Ok((conn, _)) => {
                        let (s, seen) = (s.clone(), seen.clone());
                        std::thread::spawn(move || serve_tcp(conn, &s, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(up)
    }
}

/// A UDP socket and TCP listener on one free port of `ip`.
fn pair(ip: std::net::IpAddr) -> Result<(UdpSocket, TcpListener), String> {
    for _ in 0..50 {
        let udp = UdpSocket::bind((ip, 0)).map_err(|e| format!("bind upstream: {e}"))?;
        let addr = udp.local_addr().map_err(|e| e.to_string())?;
        if let Ok(tcp) = TcpListener::bind(addr) {
            return Ok((udp, tcp));
        }
    }
    Err("no port free for both UDP and TCP in 50 tries".into())
}

fn serve_tcp(mut conn: TcpStream, s: &Script, seen: &Mutex<Vec<Message>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    loop {
        let Some(buf) = crate::common::read_frame(&mut conn) else {
            return;
        };
        let Some(bytes) = reply(&buf, s, seen) else { continue };
        let mut frame = u16::try_from(bytes.len()).unwrap_or(0).to_be_bytes().to_vec();
        frame.extend_from_slice(&bytes);
        if conn.write_all(&frame).is_err() {
            return;
        }
    }
}

/// The reply to one request, or `None` to stay silent.
fn reply(req: &[u8], s: &Script, seen: &Mutex<Vec<Message>>) -> Option<Vec<u8>> {
    let req = Message::from_vec(req).ok()?;
    if let Ok(mut seen) = seen.lock() {
        seen.push(req.clone());
    }
    let q = req.queries.first()?;
    let qname = q.name().to_ascii().to_ascii_lowercase();
    if s.drops.contains(&qname) {
        return None;
    }
    let mut m = Message::new(req.metadata.id, MessageType::Response, req.metadata.op_code);
    m.metadata.recursion_desired = req.metadata.recursion_desired;
    m.metadata.recursion_available = true;
    m.metadata.checking_disabled = req.metadata.checking_disabled;
    m.metadata.truncation = s.truncated.contains(&qname);
    m.queries = req.queries.clone();
    if let Some(e) = &req.edns {
        let mut edns = Edns::new();
        edns.set_max_payload(e.max_payload().max(512));
        edns.set_dnssec_ok(e.flags().dnssec_ok);
        m.edns = Some(edns);
    }
    if s.echo_opts.contains(&qname) {
        m.answers = vec![options_seen(&req)];
        return m.to_vec().ok();
    }
    if let Some((_, code)) = s.rcodes.iter().find(|(n, _)| *n == qname) {
        m.metadata.response_code = *code;
        return m.to_vec().ok();
    }
    let at: Vec<&Record> = s
        .records
        .iter()
        .filter(|r| r.name.to_ascii().to_ascii_lowercase() == qname)
        .collect();
    let qtype = q.query_type();
    m.answers = at
        .iter()
        .filter(|r| r.record_type() == qtype || qtype == RecordType::ANY || r.record_type() == RecordType::CNAME)
        .map(|r| (*r).clone())
        .collect();
    if at.is_empty() {
        m.metadata.response_code = ResponseCode::NXDomain;
    }
    m.to_vec().ok()
}

/// The TXT record `echo-opts` answers: the request's EDNS options.
fn options_seen(req: &Message) -> Record {
    let texts = match &req.edns {
        None => vec!["no-opt".to_string()],
        Some(e) => std::iter::once("opt".to_string())
            .chain(e.options().as_ref().iter().map(|(code, opt)| {
                let data = Vec::<u8>::try_from(opt).unwrap_or_default();
                let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
                format!("{:04x}:{hex}", u16::from(*code))
            }))
            .collect(),
    };
    let name = req.queries.first().map(|q| q.name().clone()).unwrap_or_default();
    Record::from_rdata(
        name,
        0,
        hickory_proto::rr::RData::TXT(hickory_proto::rr::rdata::TXT::new(texts)),
    )
}
