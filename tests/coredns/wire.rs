//! Asking one case over the wire and comparing the reply with the row:
//! the query is built and the reply parsed strictly with hickory-proto
//! (nothing may be left over), sent from the row's `from` address over UDP
//! or TCP, and every difference is listed as `what: want X, got Y`.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query as Question};
use hickory_proto::rr::{DNSClass, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::records;
use crate::table::{Query, Want};

/// The ceiling of every wait for something that must come (a reply, a
/// request upstream, a log line, a metric): only a hang reaches it, never
/// a busy machine.
pub const HANG: Duration = Duration::from_secs(60);
/// How long a reply may take.
const WAIT: Duration = HANG;
/// How long `no reply` rows wait for nothing.
const SILENCE: Duration = Duration::from_millis(800);

fn request(q: &Query, id: u16) -> Result<Vec<u8>, String> {
    // A name hickory's text form refuses (`foo.%s.example.org.`) is sent
    // label by label, as miekg/dns would.
    let raw = || hickory_proto::rr::Name::from_labels(q.name.trim_end_matches('.').split('.').map(str::as_bytes));
    let name = records::name(&q.name)
        .or_else(|_| raw())
        .map_err(|e| format!("bad query name '{}': {e}", q.name))?;
    let qtype: RecordType = match q.qtype.as_str() {
        "IXFR" => RecordType::IXFR, // hickory parses no IXFR from text
        t => t.parse().map_err(|_| format!("bad query type '{t}'"))?,
    };
    let class: DNSClass = match q.class.as_str() {
        "CHAOS" => DNSClass::CH,
        c => c.parse().map_err(|_| format!("bad class '{c}'"))?,
    };
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = q.rd;
    m.metadata.checking_disabled = q.cd;
    m.metadata.authentic_data = q.ad;
    m.metadata.authoritative = q.aa;
    let mut question = Question::query(name, qtype);
    question.set_query_class(class);
    m.add_query(question);
    if let Some(serial) = q.serial {
        let soa = format!("{} 0 IN SOA . . {serial} 0 0 0 0", q.name);
        m.add_authority(crate::records::parse(&soa)?);
    }
    if let Some(size) = q.edns {
        let mut e = Edns::new();
        e.set_max_payload(size);
        e.set_dnssec_ok(q.dnssec_ok);
        if q.nsid {
            let empty = hickory_proto::rr::rdata::opt::NSIDPayload::new(Vec::new()).map_err(|e| e.to_string())?;
            e.options_mut()
                .insert(hickory_proto::rr::rdata::opt::EdnsOption::NSID(empty));
        }
        if let Some(cidr) = &q.subnet {
            let s: hickory_proto::rr::rdata::opt::ClientSubnet =
                cidr.parse().map_err(|e| format!("subnet {cidr}: {e:?}"))?;
            e.options_mut()
                .insert(hickory_proto::rr::rdata::opt::EdnsOption::Subnet(s));
        }
        m.set_edns(e);
    }
    m.to_vec().map_err(|e| format!("encode query: {e}"))
}

/// Parses a reply; bytes after the message are an error.
pub fn strict(bytes: &[u8]) -> Result<Message, String> {
    let mut d = BinDecoder::new(bytes);
    let m = Message::read(&mut d).map_err(|e| format!("reply does not parse: {e}"))?;
    if !d.is_empty() {
        return Err(format!("{} bytes left over after the reply", d.len()));
    }
    Ok(m)
}

/// Sends `q` to `server`; `Ok(None)` when no reply came within `wait`.
pub fn ask(q: &Query, server: SocketAddr, wait: Duration) -> Result<Option<Message>, String> {
    let id = fastrand::u16(..);
    let bytes = request(q, id)?;
    let local = q.from.unwrap_or(if server.is_ipv4() {
        IpAddr::from([127, 0, 0, 1])
    } else {
        IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1])
    });
    if q.tcp && matches!(q.qtype.as_str(), "AXFR" | "IXFR") {
        return transfer(local, server, &bytes, id, wait);
    }
    let reply = if q.tcp {
        let mut conn = connect(local, server)?;
        send_tcp(&mut conn, &bytes, wait)?;
        read_tcp(&mut conn)?
    } else {
        udp(local, server, &bytes, id, wait)?
    };
    let Some(reply) = reply else { return Ok(None) };
    let m = strict(&reply)?;
    if m.metadata.id != id {
        return Err(format!("reply ID {} for query ID {id}", m.metadata.id));
    }
    Ok(Some(m))
}

/// A zone transfer over TCP: every message up to the one that ends it (a
/// second SOA; or a first message that is not NOERROR, holds no SOA first,
/// or holds one SOA alone: an IXFR of the current serial), read as one
/// reply whose answer is the messages' answers in order (at most 10,000
/// messages, each within `wait`).
fn transfer(
    local: IpAddr,
    server: SocketAddr,
    bytes: &[u8],
    id: u16,
    wait: Duration,
) -> Result<Option<Message>, String> {
    let mut conn = connect(local, server)?;
    send_tcp(&mut conn, bytes, wait)?;
    let mut whole: Option<Message> = None;
    for n in 0..10_000 {
        let Some(reply) = read_tcp(&mut conn)? else {
            return match whole {
                None => Ok(None),
                Some(_) => Err(format!("transfer cut short after {n} messages (no closing SOA)")),
            };
        };
        let m = strict(&reply)?;
        if m.metadata.id != id {
            return Err(format!("transfer message {n}: ID {} for query ID {id}", m.metadata.id));
        }
        let all = whole.get_or_insert_with(|| Message::new(id, MessageType::Response, OpCode::Query));
        if n == 0 {
            *all = m;
        } else {
            all.answers.extend(m.answers);
        }
        let soas = all
            .answers
            .iter()
            .filter(|r| r.record_type() == RecordType::SOA)
            .count();
        let opened = all.answers.first().is_some_and(|r| r.record_type() == RecordType::SOA);
        let done = !opened || soas >= 2 || (n == 0 && all.answers.len() == 1);
        if done || all.metadata.response_code != hickory_proto::op::ResponseCode::NoError {
            return Ok(whole);
        }
    }
    Err("transfer of more than 10,000 messages".into())
}

/// How long a UDP query waits before it is sent again, as glibc's stub does
/// (`options timeout:5`). The server drops unanswered a query that queued
/// longer than a stub waits (its overload policy), so a machine that stalls
/// the server that long loses the first send; a stub asks again and so does
/// this. Rows that want no reply wait [`SILENCE`], well within it.
const RESEND: Duration = Duration::from_secs(5);

/// Sends `bytes` from `local` and waits up to `wait` for the reply with
/// `id`, sending again every [`RESEND`]; a reply that needed more than one
/// send is said on stderr.
fn udp(local: IpAddr, server: SocketAddr, bytes: &[u8], id: u16, wait: Duration) -> Result<Option<Vec<u8>>, String> {
    let sock = UdpSocket::bind((local, 0)).map_err(|e| format!("bind {local}: {e}"))?;
    let deadline = Instant::now() + wait;
    let mut buf = vec![0u8; 65535];
    // At most 12 sends (60 s), each waiting out stray datagrams (another ID), at most 10.
    for sends in 1..=12 {
        sock.send_to(bytes, server).map_err(|e| format!("send: {e}"))?;
        let resend = (Instant::now() + RESEND).min(deadline);
        for _ in 0..10 {
            let left = resend.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let _ = sock.set_read_timeout(Some(left));
            let Ok((n, from)) = sock.recv_from(&mut buf) else { break };
            if from == server && n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id {
                if sends > 1 {
                    eprintln!("query {id} to {server} answered after {sends} sends");
                }
                return Ok(Some(buf[..n].to_vec()));
            }
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    Ok(None)
}

/// A TCP connection from `local` (bound before connecting).
fn connect(local: IpAddr, server: SocketAddr) -> Result<TcpStream, String> {
    use nix::sys::socket::{bind, connect, socket, AddressFamily, SockFlag, SockType, SockaddrStorage};
    use std::os::fd::AsRawFd;
    let family = if local.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    let fd: OwnedFd = socket(family, SockType::Stream, SockFlag::empty(), None).map_err(|e| format!("socket: {e}"))?;
    bind(fd.as_raw_fd(), &SockaddrStorage::from(SocketAddr::new(local, 0)))
        .map_err(|e| format!("bind {local}: {e}"))?;
    connect(fd.as_raw_fd(), &SockaddrStorage::from(server)).map_err(|e| format!("connect {server}: {e}"))?;
    Ok(TcpStream::from(fd))
}

/// Writes one framed message; replies are then read within `wait` each.
fn send_tcp(conn: &mut TcpStream, bytes: &[u8], wait: Duration) -> Result<(), String> {
    let _ = conn.set_read_timeout(Some(wait));
    let mut frame = u16::try_from(bytes.len())
        .map_err(|_| "query too long")?
        .to_be_bytes()
        .to_vec();
    frame.extend_from_slice(bytes);
    conn.write_all(&frame).map_err(|e| format!("tcp write: {e}"))
}

/// The next framed message; `None` when none comes (or the server closed).
fn read_tcp(conn: &mut TcpStream) -> Result<Option<Vec<u8>>, String> {
    let mut len = [0u8; 2];
    if conn.read_exact(&mut len).is_err() {
        return Ok(None);
    }
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    conn.read_exact(&mut buf)
        .map_err(|e| format!("tcp reply cut short: {e}"))?;
    Ok(Some(buf))
}

/// The rcode's name as CoreDNS's tables write it.
pub fn rcode_name(m: &Message) -> String {
    let code = u16::from(m.metadata.response_code);
    let names = [
        "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH",
        "NOTZONE",
    ];
    match names.get(usize::from(code)) {
        Some(n) => n.to_string(),
        None if code == 16 => "BADVERS".into(),
        None => format!("RCODE{code}"),
    }
}

fn flag(m: &Message, name: &str) -> bool {
    let h = &m.metadata;
    match name {
        "qr" => h.message_type == MessageType::Response,
        "aa" => h.authoritative,
        "tc" => h.truncation,
        "rd" => h.recursion_desired,
        "ra" => h.recursion_available,
        "ad" => h.authentic_data,
        _ => h.checking_disabled,
    }
}

/// The EDE info code of a reply, if it carries one.
fn ede(m: &Message) -> Option<u16> {
    let opt = m.edns.as_ref()?;
    opt.options().as_ref().iter().find_map(|(_, o)| match o {
        hickory_proto::rr::rdata::opt::EdnsOption::Unknown(15, data) if data.len() >= 2 => {
            Some(u16::from_be_bytes([data[0], data[1]]))
        }
        _ => None,
    })
}

/// The NSID of a reply (as text), if it carries one.
fn nsid(m: &Message) -> Option<String> {
    let opt = m.edns.as_ref()?;
    opt.options().as_ref().iter().find_map(|(_, o)| match o {
        hickory_proto::rr::rdata::opt::EdnsOption::NSID(data) => {
            Some(String::from_utf8_lossy(data.as_ref()).into_owned())
        }
        hickory_proto::rr::rdata::opt::EdnsOption::Unknown(3, data) => Some(String::from_utf8_lossy(data).into_owned()),
        _ => None,
    })
}

/// `got` as a wanted record written with `*` fields (any value there, as
/// an SOA serial a clock sets, or a TXT string `*`), if one matches it
/// field by field.
fn starred(got: String, want: &[String]) -> String {
    let g: Vec<&str> = got.split(' ').collect();
    // A TXT string `*` reads back quoted: it stands for any string.
    let any = |f: &str| f == "*" || f == "\"*\"";
    want.iter()
        .filter(|w| w.split(' ').any(any))
        .find(|w| {
            let f: Vec<&str> = w.split(' ').collect();
            f.len() == g.len() && f.iter().zip(&g).all(|(w, g)| any(w) || w == g)
        })
        .cloned()
        .unwrap_or(got)
}

/// `got` with its TTL replaced by the wanted one when a wanted record is
/// the same but for a TTL at most `slack` higher.
fn aged(got: String, want: &[String], slack: u32) -> String {
    let split = |r: &str| -> Option<(String, u32, String)> {
        let mut f = r.splitn(3, ' ');
        Some((f.next()?.to_string(), f.next()?.parse().ok()?, f.next()?.to_string()))
    };
    let Some((name, ttl, rest)) = split(&got) else {
        return got;
    };
    want.iter()
        .filter_map(|w| split(w))
        .find(|(n, t, r)| *n == name && *r == rest && ttl <= *t && t - ttl <= slack)
        .map_or(got, |(n, t, r)| format!("{n} {t} {r}"))
}

fn section(what: &str, want: Option<&Vec<String>>, got: &[hickory_proto::rr::Record], w: &Want, out: &mut Vec<String>) {
    let Some(want) = want else { return };
    let ordered = w.ordered;
    let mut want: Vec<String> = want.iter().map(|l| records::canonical(l)).collect();
    let mut got: Vec<String> = got
        .iter()
        .map(|r| starred(aged(records::show(r), &want, w.ttl_slack), &want))
        .collect();
    // `ordered types`: the type column (the fourth word) in the written order;
    // A and AAAA count as one (address records are shuffled together).
    let type_of = |r: &String| match r.split_whitespace().nth(3).unwrap_or_default() {
        "A" | "AAAA" => "A/AAAA".to_string(),
        t => t.to_string(),
    };
    let (want_types, got_types): (Vec<String>, Vec<String>) =
        (want.iter().map(type_of).collect(), got.iter().map(type_of).collect());
    if w.types && want_types != got_types {
        out.push(format!("{what} types in order: want {want_types:?}, got {got_types:?}"));
    }
    if !ordered {
        want.sort();
        got.sort();
    }
    if want != got {
        out.push(format!(
            "{what}:\n      want [{}]\n      got  [{}]",
            want.join(" | "),
            got.join(" | ")
        ));
    }
}

/// Every difference between `reply` and `want`.
pub fn compare(want: &Want, reply: Option<&Message>) -> Vec<String> {
    let m = match (want.no_reply, reply) {
        (true, None) => return Vec::new(),
        (true, Some(m)) => {
            return vec![format!(
                "want no reply, got {} with {} answers",
                rcode_name(m),
                m.answers.len()
            )]
        }
        (false, None) => return vec![format!("want {}, got no reply within {WAIT:?}", want.rcode)],
        (false, Some(m)) => m,
    };
    let mut out = Vec::new();
    let rcode = rcode_name(m);
    if rcode != want.rcode {
        out.push(format!("rcode: want {}, got {rcode}", want.rcode));
    }
    for (name, set) in &want.flags {
        if flag(m, name) != *set {
            out.push(format!(
                "flag {name}: want {}, got {}",
                if *set { "set" } else { "clear" },
                if *set { "clear" } else { "set" }
            ));
        }
    }
    section("answer", want.answer.as_ref(), &m.answers, want, &mut out);
    section("ns", want.ns.as_ref(), &m.authorities, want, &mut out);
    section("extra", want.extra.as_ref(), &m.additionals, want, &mut out);
    if let Some(o) = &want.opt {
        let got = m.edns.as_ref().map(|e| crate::table::Opt {
            present: true,
            size: o.size.map(|_| e.max_payload()),
            dnssec_ok: o.dnssec_ok.map(|_| e.flags().dnssec_ok),
        });
        let got = got.unwrap_or(crate::table::Opt {
            present: false,
            size: None,
            dnssec_ok: None,
        });
        if got != *o {
            out.push(format!("opt: want {o:?}, got {got:?}"));
        }
    }
    if let Some(q) = &want.question {
        let got = m
            .queries
            .first()
            .map(|q| format!("{} {}", q.name(), q.query_type()))
            .unwrap_or_default();
        if !got.eq_ignore_ascii_case(q) {
            out.push(format!("question: want {q}, got {got}"));
        }
    }
    if let Some(text) = &want.nsid {
        let got = nsid(m);
        if got != *text {
            out.push(format!("nsid: want {text:?}, got {got:?}"));
        }
    }
    if let Some(code) = want.ede {
        let got = ede(m);
        if got != code {
            out.push(format!("ede: want {code:?}, got {got:?}"));
        }
    }
    out
}

/// How long to wait for a case's reply.
pub fn wait_for(want: &Want) -> Duration {
    if want.no_reply {
        SILENCE
    } else {
        WAIT
    }
}
