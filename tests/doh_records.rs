//! DNS over HTTPS answers leave in TLS records of their own (issue 38):
//! dnsperf's DoH client takes at most one finished answer from each TLS
//! record it reads and dropped the rest, so answers that hyper's HTTP/2
//! had coalesced into one record were lost and dnsperf stalled (66
//! answers a second). No timing is asserted:
//! - an HTTP/2 client of our own over rustls sends 32 GET queries in one
//!   write and reads the reply record by record: every frame ending a
//!   stream (an answer's last DATA frame) ends its record, and all 32
//!   answers arrive;
//! - dnsperf `-m doh` itself runs a fixed number of queries through 4
//!   pipelined connections: none is lost.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use common::{certs, free_port, temp_dir, Server, REPLY};
use rustls::pki_types::ServerName;

const NAME: &str = "kubernetes.default.svc.cluster.local";
const QUERIES: u32 = 32;

/// A DoH block on `port` beside the plain one the harness waits on.
fn corefile(port: u16) -> String {
    let cluster = common::demo_cluster();
    let kube = format!(
        "kubernetes cluster.local {{\n        snapshot {}\n    }}",
        cluster.display()
    );
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    {kube}\n}}\nhttps://.:{port} {{\n    bind 127.0.0.1\n    tls srv.pem srv.key\n    {kube}\n}}\n"
    )
}

fn server(dir: &Path, test: &str) -> Option<(Server, u16)> {
    common::needs(test, common::installed("openssl"), "apt-get install openssl")?;
    certs::ca(dir, "ca", "clusterdns test CA");
    certs::signed(dir, "srv", "ca", "dns.test", certs::Usage::Server, false);
    let port = free_port();
    Some((Server::start(dir, &corefile(port)), port))
}

/// An HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// An HPACK string (no Huffman coding), its length as a 7-bit prefix integer.
fn hpack_string(out: &mut Vec<u8>, s: &str) {
    let mut n = s.len();
    if n < 127 {
        out.push(n as u8);
    } else {
        out.push(127);
        n -= 127;
        while n >= 128 {
            out.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        out.push(n as u8);
    }
    out.extend(s.as_bytes());
}

/// A GET of `NAME` A on `stream` (RFC 8484 section 4.1), as one HEADERS
/// frame ending the stream, every field a literal without indexing.
fn get(stream: u32) -> Vec<u8> {
    let query = common::query(0, NAME, hickory_proto::rr::RecordType::A, None);
    let path = format!("/dns-query?dns={}", base64url(&query));
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "dns.test"),
        (":path", path.as_str()),
        ("accept", "application/dns-message"),
    ] {
        block.push(0);
        hpack_string(&mut block, name);
        hpack_string(&mut block, value);
    }
    frame(0x1, 0x1 | 0x4, stream, &block)
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A TLS client reading the server's bytes one record at a time.
struct Client {
    sock: TcpStream,
    tls: rustls::ClientConnection,
}

impl Client {
    fn connect(dir: &Path, port: u16) -> Client {
        let config = certs::client_config(dir, b"h2");
        let name = ServerName::try_from("dns.test").expect("server name");
        let tls = rustls::ClientConnection::new(config, name).expect("client");
        let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        sock.set_read_timeout(Some(REPLY)).expect("read timeout");
        let mut client = Client { sock, tls };
        while client.tls.is_handshaking() {
            client.send(&[]);
            client.record().expect("handshake record");
        }
        assert_eq!(client.tls.alpn_protocol(), Some(&b"h2"[..]), "ALPN");
        client
    }

    /// Seals `plain` and sends it with whatever TLS has to say, in one write.
    fn send(&mut self, plain: &[u8]) {
        self.tls.writer().write_all(plain).expect("plaintext");
        let mut wire = Vec::new();
        while self.tls.wants_write() {
            self.tls.write_tls(&mut wire).expect("seal");
        }
        self.sock.write_all(&wire).expect("send");
    }

    /// The plaintext of the next record (empty for handshake records), or
    /// `None` once the server has closed.
    fn record(&mut self) -> Option<Vec<u8>> {
        let mut head = [0u8; 5];
        self.sock.read_exact(&mut head).ok()?;
        let mut record = head.to_vec();
        record.resize(5 + usize::from(u16::from_be_bytes([head[3], head[4]])), 0);
        self.sock.read_exact(&mut record[5..]).ok()?;
        let mut input = &record[..];
        while !input.is_empty() {
            self.tls.read_tls(&mut input).expect("record");
        }
        self.tls.process_new_packets().expect("TLS");
        let mut plain = Vec::new();
        match self.tls.reader().read_to_end(&mut plain) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("plaintext: {e}"),
        }
        Some(plain)
    }
}

/// The frames read so far: (type, flags, stream, payload, where it ended).
fn frames(bytes: &[u8]) -> Vec<(u8, u8, u32, &[u8], usize)> {
    let (mut out, mut at) = (Vec::new(), 0);
    while bytes.len() >= at + 9 {
        let h = &bytes[at..at + 9];
        let end = at + 9 + u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        if end > bytes.len() {
            break;
        }
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        out.push((h[3], h[4], stream, &bytes[at + 9..end], end));
        at = end;
    }
    out
}

#[test]
fn each_doh_answer_ends_its_own_tls_record() {
    let test = "each_doh_answer_ends_its_own_tls_record";
    let dir = temp_dir("doh-records");
    let Some((_server, port)) = server(&dir, test) else {
        return;
    };
    let mut client = Client::connect(&dir, port);
    let preface = [&b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..], &frame(0x4, 0, 0, &[])].concat();
    client.send(&preface);
    // the server's SETTINGS first, acknowledged together with every query
    let (mut plain, mut ends) = (Vec::new(), Vec::new());
    while !frames(&plain).iter().any(|f| f.0 == 0x4 && f.1 & 1 == 0) {
        plain.extend(client.record().expect("server SETTINGS"));
        ends.push(plain.len());
    }
    let mut burst = frame(0x4, 0x1, 0, &[]);
    (0..QUERIES).for_each(|i| burst.extend(get(2 * i + 1)));
    client.send(&burst);
    let done = |plain: &[u8]| frames(plain).iter().filter(|f| f.0 == 0x0 && f.1 & 1 == 1).count();
    while done(&plain) < QUERIES as usize {
        let Some(more) = client.record() else {
            panic!("closed after {} answers", done(&plain));
        };
        plain.extend(more);
        ends.push(plain.len());
    }
    let mut answered = 0;
    for (kind, flags, stream, payload, end) in frames(&plain) {
        assert_ne!(kind, 0x3, "stream {stream} reset");
        if matches!(kind, 0x0 | 0x1) && flags & 1 == 1 {
            assert!(
                ends.contains(&end),
                "stream {stream}'s answer ends inside a TLS record: {ends:?}"
            );
        }
        if kind == 0x0 {
            let reply = hickory_proto::op::Message::from_vec(payload).expect("a DNS reply per DATA frame");
            assert_eq!(reply.answers.len(), 1, "stream {stream}: {reply:?}");
            answered += 1;
        }
    }
    assert_eq!(answered, QUERIES);
}

#[test]
fn dnsperf_over_doh_loses_no_answer() {
    let test = "dnsperf_over_doh_loses_no_answer";
    let Some(dnsperf) = common::needs(
        test,
        common::installed("dnsperf"),
        "apt-get install dnsperf (tests/run installs it)",
    ) else {
        return;
    };
    let dir = temp_dir("doh-dnsperf");
    let Some((_server, port)) = server(&dir, test) else {
        return;
    };
    let names: String = (0..50).map(|_| format!("{NAME} A\n")).collect();
    std::fs::write(dir.join("names.txt"), names).expect("names");
    let (p, timeout) = (port.to_string(), REPLY.as_secs().to_string());
    // 4 connections, 40 queries in flight, the file 4 times: 200 queries;
    // a query unanswered for REPLY is lost
    let args = [
        "-m",
        "doh",
        "-s",
        "127.0.0.1",
        "-p",
        &p,
        "-d",
        "names.txt",
        "-n",
        "4",
        "-c",
        "4",
        "-q",
        "40",
        "-t",
        &timeout,
    ];
    let out = std::process::Command::new(&dnsperf)
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("run dnsperf");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| -> Option<u64> {
        let line = out.lines().find(|l| l.trim_start().starts_with(name))?;
        line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()
    };
    assert_eq!(field("Queries sent"), Some(200), "{out}");
    assert_eq!(field("Queries completed"), Some(200), "{out}");
    assert_eq!(field("Queries lost"), Some(0), "{out}");
}
