//! A canned upstream for `forward` rows, answering from a table's
//! `upstream NAME <<` block over UDP and TCP on one loopback port.
//!
//! Lines of the block: a zone-file record (answered for its owner name,
//! type and class; a CNAME at the name is answered for every type),
//! `rcode NAME RCODE [TYPE]` (that rcode, no records; an NXDOMAIN carries the
//! SOA as below), `drop NAME` (no reply), `flags NAME [TYPE] F...`
//! (header flags `aa tc cd` set, `-ra` cleared, on every reply for NAME;
//! `ad` set as a validating resolver does, when the request sets AD or DO).
//! `fail NAME AFTER RCODE|drop`: once NAME was asked AFTER times, that rcode
//! (no records) or no reply at all, for a cache's refresh to fail;
//! `first NAME N RCODE|drop`: the same for the first N requests for NAME
//! only (an upstream that fails once, then recovers).
//! `answer QNAME RR` puts RR (any owner) in the answer of every reply for
//! QNAME, in the order written, instead of the records owned by QNAME;
//! `authority QNAME RR` puts RR in the authority section of that reply.
//! A name with no record gets NXDOMAIN, a name with records of other types
//! NOERROR and no data; either carries the SOA of the block that is the
//! nearest enclosing zone of the name, if any, in its authority section.
//! `tc NAME` (the reply to NAME has TC set, its records still in it) and
//! `echo-opts NAME` (NAME is answered with `NAME 0 IN TXT "opt" "CODE:HEX"...`,
//! the EDNS options the request carried, in order, codes as 4 hex digits;
//! `"no-opt"` without an OPT record), `echo-size NAME` (answered with
//! `NAME 0 IN TXT "size:N"`, the UDP payload size of the request's OPT, or
//! `"no-opt"`), `spoof NAME OTHER [TYPE]` (the reply to NAME names OTHER,
//! of TYPE, in its question) and `no-qr NAME` (the reply to NAME lacks QR).
//! Every request is kept, so rows can be checked against what was asked.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, ResponseCode};
use hickory_proto::rr::{DNSClass, Record, RecordType};

/// What one upstream answers.
#[derive(Default)]
struct Script {
    records: Vec<Record>,
    /// (name, rcode, only for this type).
    rcodes: Vec<(String, ResponseCode, Option<RecordType>)>,
    drops: Vec<String>,
    /// (name, answers before failing, then this rcode or `None`: silence)
    /// from `fail` lines.
    fails: Vec<(String, usize, Option<ResponseCode>)>,
    /// (name, how many first requests, this rcode or `None`: silence) from
    /// `first` lines.
    firsts: Vec<(String, usize, Option<ResponseCode>)>,
    /// (qname, record) from `answer` lines.
    answers: Vec<(String, Record)>,
    /// (qname, record) from `answer-do` lines: used instead of `answer`
    /// when the request sets DO.
    answers_do: Vec<(String, Record)>,
    /// (qname, record) from `authority` lines.
    authority: Vec<(String, Record)>,
    /// (name, only for this type, flag, set?) from `flags` lines.
    flags: Vec<(String, Option<RecordType>, String, bool)>,
    truncated: Vec<String>,
    echo_opts: Vec<String>,
    echo_size: Vec<String>,
    /// (name, question written instead, its type) from `spoof` lines.
    spoofs: Vec<(String, String, Option<RecordType>)>,
    no_qr: Vec<String>,
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
            ["rcode", name, code, rest @ ..] if rest.len() < 2 => {
                let code = rcode(code).ok_or_else(|| format!("{n}: unknown rcode '{code}'"))?;
                let only = match rest.first() {
                    Some(t) => Some(t.parse().map_err(|_| format!("{n}: unknown type '{t}'"))?),
                    None => None,
                };
                s.rcodes.push((name.to_ascii_lowercase(), code, only));
            }
            ["drop", name] => s.drops.push(name.to_ascii_lowercase()),
            [word @ ("fail" | "first"), name, after, how] => {
                let after = after.parse().map_err(|_| format!("{n}: bad {word} count '{after}'"))?;
                let code = match *how {
                    "drop" => None,
                    code => Some(rcode(code).ok_or_else(|| format!("{n}: unknown rcode '{code}'"))?),
                };
                let to = if *word == "fail" { &mut s.fails } else { &mut s.firsts };
                to.push((name.to_ascii_lowercase(), after, code));
            }
            [section @ ("answer" | "answer-do" | "authority"), name, ..] => {
                let rr = line.trim_start()[section.len()..].trim_start()[name.len()..].trim();
                let rr = crate::records::parse(rr).map_err(|e| format!("{n}: {e}"))?;
                let to = match *section {
                    "answer" => &mut s.answers,
                    "answer-do" => &mut s.answers_do,
                    _ => &mut s.authority,
                };
                to.push((name.to_ascii_lowercase(), rr));
            }
            ["flags", name, flags @ ..] => {
                let only: Option<RecordType> = flags.first().and_then(|t| t.parse().ok());
                for f in &flags[usize::from(only.is_some())..] {
                    let (set, flag) = f.strip_prefix('-').map_or((true, *f), |n| (false, n));
                    if !["aa", "tc", "ad", "cd", "ra"].contains(&flag) {
                        return Err(format!("{n}: unknown upstream flag '{flag}'"));
                    }
                    s.flags.push((name.to_ascii_lowercase(), only, flag.to_string(), set));
                }
            }
            ["tc", name] => s.truncated.push(name.to_ascii_lowercase()),
            ["echo-opts", name] => s.echo_opts.push(name.to_ascii_lowercase()),
            ["echo-size", name] => s.echo_size.push(name.to_ascii_lowercase()),
            ["spoof", name, other, only @ ..] if only.len() < 2 => {
                let only = match only.first() {
                    Some(t) => Some(t.parse().map_err(|_| format!("{n}: unknown type '{t}'"))?),
                    None => None,
                };
                s.spoofs.push((name.to_ascii_lowercase(), other.to_string(), only));
            }
            ["no-qr", name] => s.no_qr.push(name.to_ascii_lowercase()),
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

impl Upstream {
    /// How many requests for `name` (any case) and `qtype` came so far;
    /// when fewer than `want`, waits (until [`crate::wire::HANG`]) for more
    /// (a cache refreshes in the background after its reply is out).
    pub fn asked(&self, name: &str, qtype: &str, rd: Option<bool>, want: usize) -> usize {
        let deadline = std::time::Instant::now() + crate::wire::HANG;
        loop {
            let n = self.count(name, qtype, rd);
            if n >= want || std::time::Instant::now() >= deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn count(&self, name: &str, qtype: &str, rd: Option<bool>) -> usize {
        let name = name.to_ascii_lowercase();
        let Ok(seen) = self.seen.lock() else { return 0 };
        seen.iter()
            .filter(|m| rd.is_none_or(|rd| m.metadata.recursion_desired == rd))
            .filter_map(|m| m.queries.first())
            .filter(|q| q.name().to_ascii().to_ascii_lowercase() == name)
            .filter(|q| q.query_type().to_string().eq_ignore_ascii_case(qtype))
            .count()
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

/// The reply to one request, or `None` to stay silent; `spoof` and `no-qr`
/// lines change it last.
fn reply(req: &[u8], s: &Script, seen: &Mutex<Vec<Message>>) -> Option<Vec<u8>> {
    let out = answer(req, s, seen)?;
    let asked = Message::from_vec(req)
        .ok()?
        .queries
        .first()?
        .name()
        .to_ascii()
        .to_ascii_lowercase();
    let spoof = s.spoofs.iter().find(|(n, ..)| *n == asked);
    if spoof.is_none() && !s.no_qr.contains(&asked) {
        return Some(out);
    }
    let mut m = Message::from_vec(&out).ok()?;
    if let (Some((_, other, only)), Some(q)) = (spoof, m.queries.first_mut()) {
        q.set_name(other.parse().ok()?);
        q.set_query_type(only.unwrap_or(q.query_type()));
    }
    if s.no_qr.contains(&asked) {
        m.metadata.message_type = MessageType::Query;
    }
    m.to_vec().ok()
}

/// The reply [`reply`] starts from.
fn answer(req: &[u8], s: &Script, seen: &Mutex<Vec<Message>>) -> Option<Vec<u8>> {
    let req = Message::from_vec(req).ok()?;
    let q = req.queries.first()?;
    let qname = q.name().to_ascii().to_ascii_lowercase();
    let before = seen.lock().map_or(0, |mut seen| {
        let n = seen
            .iter()
            .filter(|m| m.queries.first().is_some_and(|o| o.name() == q.name()))
            .count();
        seen.push(req.clone());
        n
    });
    let failing = s
        .fails
        .iter()
        .find(|(n, after, _)| *n == qname && before >= *after)
        .or_else(|| s.firsts.iter().find(|(n, first, _)| *n == qname && before < *first));
    if s.drops.contains(&qname) || failing.is_some_and(|f| f.2.is_none()) {
        return None;
    }
    let asked_ad = req.metadata.authentic_data;
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
    let qtype = q.query_type();
    let applies = |n: &String, only: &Option<RecordType>| *n == qname && only.is_none_or(|t| t == qtype);
    for (_, _, flag, set) in s.flags.iter().filter(|(n, only, ..)| applies(n, only)) {
        let h = &mut m.metadata;
        match flag.as_str() {
            "aa" => h.authoritative = *set,
            "tc" => h.truncation = *set,
            "ad" => h.authentic_data = *set && (asked_ad || req.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok)),
            "cd" => h.checking_disabled = *set,
            _ => h.recursion_available = *set,
        }
    }
    let class = q.query_class();
    if s.echo_opts.contains(&qname) || s.echo_size.contains(&qname) {
        m.answers = vec![options_seen(&req, s.echo_size.contains(&qname))];
        return m.to_vec().ok();
    }
    if let Some(code) = failing.and_then(|f| f.2) {
        m.metadata.response_code = code;
        if code == ResponseCode::NXDomain {
            m.authorities.extend(soa_above(&qname, class, s)); // as an `rcode` line's
        }
        return m.to_vec().ok();
    }
    if let Some((_, code, _)) = s.rcodes.iter().find(|(n, _, only)| applies(n, only)) {
        m.metadata.response_code = *code;
        if *code == ResponseCode::NXDomain {
            m.authorities.extend(soa_above(&qname, class, s));
        }
        return m.to_vec().ok();
    }
    let at: Vec<&Record> = s
        .records
        .iter()
        .filter(|r| r.name.to_ascii().to_ascii_lowercase() == qname && r.dns_class == class)
        .collect();
    let dnssec_ok = req.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok);
    let by_do = dnssec_ok && s.answers_do.iter().any(|(n, _)| *n == qname);
    let canned: Vec<Record> = (if by_do { &s.answers_do } else { &s.answers })
        .iter()
        .filter(|(n, _)| *n == qname)
        .map(|(_, r)| r.clone())
        .collect();
    if !canned.is_empty() {
        m.answers = canned;
        let canned = s.authority.iter().filter(|(n, _)| *n == qname);
        m.authorities = canned.map(|(_, r)| r.clone()).collect();
        return m.to_vec().ok();
    }
    m.answers = at
        .iter()
        .filter(|r| r.record_type() == qtype || qtype == RecordType::ANY || r.record_type() == RecordType::CNAME)
        .map(|r| (*r).clone())
        .collect();
    if at.is_empty() {
        m.metadata.response_code = ResponseCode::NXDomain;
    }
    if m.answers.is_empty() {
        m.authorities.extend(soa_above(&qname, class, s));
    }
    m.to_vec().ok()
}

/// The SOA record of the nearest zone (an SOA owner in the block) at or
/// above `qname`, for the authority section of a negative answer.
fn soa_above(qname: &str, class: DNSClass, s: &Script) -> Option<Record> {
    s.records
        .iter()
        .filter(|r| r.record_type() == RecordType::SOA && r.dns_class == class)
        .filter(|r| {
            let zone = r.name.to_ascii().to_ascii_lowercase();
            zone == "." || qname == zone || qname.ends_with(&format!(".{zone}"))
        })
        .max_by_key(|r| r.name.num_labels())
        .cloned()
}

/// The TXT record `echo-opts` answers: the request's EDNS options (or,
/// for `echo-size`, its UDP payload size).
fn options_seen(req: &Message, size: bool) -> Record {
    let texts = match &req.edns {
        None => vec!["no-opt".to_string()],
        Some(e) if size => vec![format!("size:{}", e.max_payload())],
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
