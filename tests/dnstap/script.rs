//! What the dnstap tests share: the Corefile, the scripted queries and
//! the check of what a collector printed against them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;
use serde_json::Value;

use crate::common::stub::Stub;
use crate::common::{self, demo_cluster, installed, needs, query, Server};

pub const INSTALL: &str = "apt-get install golang-github-dnstap-golang-dnstap-cli fstrm-bin socat openssl";

pub fn tools(test: &str) -> bool {
    let have = ["dnstap", "fstrm_capture", "socat", "openssl"]
        .iter()
        .try_for_each(|t| installed(t).map(|_| ()));
    needs(test, have, INSTALL).is_some()
}

/// A block serving the demo cluster, forwarding the rest to `up` behind
/// `cache`, with `taps` (dnstap lines).
pub fn corefile(up: SocketAddr, taps: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n{taps}\n    \
         kubernetes cluster.local {{\n        snapshot {}\n    }}\n    forward . {up}\n    cache 30\n}}\n",
        demo_cluster().display()
    )
}

/// One query sent: its client port, protocol, bytes, and the reply's bytes.
pub struct Sent {
    pub port: u16,
    pub tcp: bool,
    pub query: Vec<u8>,
    pub reply: Vec<u8>,
}

pub fn ask(server: SocketAddr, id: u16, name: &str, tcp: bool) -> Sent {
    let q = query(id, name, RecordType::A, Some(1232));
    if tcp {
        let mut s = TcpStream::connect(server).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(&common::framed(&q)).expect("send");
        let mut len = [0u8; 2];
        s.read_exact(&mut len).expect("reply length");
        let mut reply = vec![0u8; usize::from(u16::from_be_bytes(len))];
        s.read_exact(&mut reply).expect("reply");
        let port = s.local_addr().expect("addr").port();
        return Sent {
            port,
            tcp,
            query: q,
            reply,
        };
    }
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    sock.send_to(&q, server).expect("send");
    let mut buf = vec![0u8; 65535];
    let n = sock
        .recv(&mut buf)
        .unwrap_or_else(|_| panic!("{name}: no reply within 5 s"));
    buf.truncate(n);
    let port = sock.local_addr().expect("addr").port();
    Sent {
        port,
        tcp,
        query: q,
        reply: buf,
    }
}

/// The script: cluster name, forwarded name, the same from the cache,
/// NXDOMAIN upstream, NXDOMAIN in the cluster, cluster name over TCP.
/// Two upstream exchanges (www and nx).
pub fn script(server: &Server) -> Vec<Sent> {
    let asked = [
        ("kubernetes.default.svc.cluster.local.", false),
        ("www.example.org.", false),
        ("www.example.org.", false),
        ("nx.example.org.", false),
        ("missing.default.svc.cluster.local.", false),
        ("kubernetes.default.svc.cluster.local.", true),
    ];
    let sent: Vec<Sent> = (asked.iter().enumerate())
        .map(|(i, (name, tcp))| ask(server.dns, 0x100 + i as u16, name, *tcp))
        .collect();
    let rcodes: Vec<u8> = sent.iter().map(|s| s.reply[3] & 0x0f).collect();
    let nx = 3; // NXDOMAIN
    assert_eq!(rcodes, [0, 0, 0, nx, nx, 0], "the script's answers");
    sent
}

/// Messages of each type in `messages` (the tool's JSON).
pub fn by_type(messages: &[Value]) -> BTreeMap<String, Vec<&Value>> {
    let mut all: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for m in messages {
        let kind = m["message"]["type"].as_str().unwrap_or("?").to_string();
        all.entry(kind).or_default().push(m);
    }
    all
}

/// Checks what a collector printed against `sent`: one CLIENT_QUERY and
/// one CLIENT_RESPONSE per query (by client port, protocol), two upstream
/// exchanges with `up` (from the socket the upstream saw the query come
/// from), the identity and version, wire text only with `full`.
pub fn check_json(messages: &[Value], sent: &[Sent], up: &Stub, identity: &str, full: bool) {
    let all = by_type(messages);
    let count = |k: &str| all.get(k).map_or(0, Vec::len);
    let counts = [
        "CLIENT_QUERY",
        "CLIENT_RESPONSE",
        "FORWARDER_QUERY",
        "FORWARDER_RESPONSE",
    ]
    .map(count);
    assert_eq!(counts, [6, 6, 2, 2], "messages by type: {messages:#?}");
    for kind in ["CLIENT_QUERY", "CLIENT_RESPONSE"] {
        let mut seen: Vec<(u64, String)> = all[kind]
            .iter()
            .map(|m| {
                let m = &m["message"];
                assert_eq!(m["query_address"], "127.0.0.1", "{kind}: {m}");
                let proto = m["socket_protocol"].as_str().unwrap_or("").to_string();
                (m["query_port"].as_u64().unwrap_or(0), proto)
            })
            .collect();
        let mut want: Vec<(u64, String)> = sent
            .iter()
            .map(|s| (u64::from(s.port), if s.tcp { "TCP" } else { "UDP" }.to_string()))
            .collect();
        seen.sort();
        want.sort();
        assert_eq!(seen, want, "{kind}: one per query, from its client's port");
    }
    let sources = up.sources.lock().map(|s| s.clone()).unwrap_or_default();
    for m in all["FORWARDER_QUERY"].iter().chain(&all["FORWARDER_RESPONSE"]) {
        let m = &m["message"];
        assert_eq!(
            (m["response_address"].as_str(), m["response_port"].as_u64()),
            (Some("127.0.0.1"), Some(u64::from(up.addr.port())))
        );
        let ours = (m["query_address"].as_str(), m["query_port"].as_u64());
        assert!(
            sources
                .iter()
                .any(|s| ours == (Some("127.0.0.1"), Some(u64::from(s.port())))),
            "our end of the upstream socket {ours:?} is where the upstream saw queries from: {sources:?}"
        );
    }
    for m in messages {
        assert_eq!(m["identity"], identity);
        assert!(
            m["version"].as_str().is_some_and(|v| v.starts_with("clusterdns-")),
            "{m}"
        );
        let wire = m["message"]
            .get("query_message")
            .or(m["message"].get("response_message"));
        assert_eq!(wire.is_some(), full, "wire messages only with full: {m}");
    }
}

/// Waits until `n` collector sessions are open (bounded, 10 s).
pub fn wait_connected(server: &Server, n: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.metric("clusterdns_dnstap_connects_total") < f64::from(n) {
        assert!(
            Instant::now() < deadline,
            "collectors not connected: {}",
            server.metrics()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string()
}

pub fn wait_for_socket(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} not created", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (at most 10 s) until `series` reaches `min`.
pub fn until_metric(server: &Server, series: &str, min: f64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.metric(series) < min {
        assert!(
            Instant::now() < deadline,
            "{series} < {min} after 10 s: {}",
            server.metrics()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
