//! The `dnstap` plugin against real collectors (tests/dnstap/collector.rs):
//! a scripted set of cluster, forwarded, cached, NXDOMAIN and TCP queries
//! must reach each collector one to one (CLIENT_QUERY and CLIENT_RESPONSE
//! per query, FORWARDER_QUERY and FORWARDER_RESPONSE per upstream
//! exchange) with the clients' and upstream's addresses, the protocol,
//! identity, version and extra; with `full` the wire messages are the
//! bytes that went over the sockets. A TLS collector behind socat, one
//! restarted mid-run and one absent (queries still answered, drops
//! counted) complete it.

#[path = "dnstap/collector.rs"]
mod collector;
mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use collector::{json, json_count, Collector};
use common::stub::{Mode, Stub};
use common::{demo_cluster, free_port, installed, needs, query, temp_dir, Server};
use hickory_proto::rr::RecordType;
use serde_json::Value;

const INSTALL: &str = "apt-get install golang-github-dnstap-golang-dnstap-cli fstrm-bin socat openssl";

fn tools(test: &str) -> bool {
    let have = ["dnstap", "fstrm_capture", "socat", "openssl"]
        .iter()
        .try_for_each(|t| installed(t).map(|_| ()));
    needs(test, have, INSTALL).is_some()
}

/// A block serving the demo cluster, forwarding the rest to `up` behind
/// `cache`, with `taps` (dnstap lines).
fn corefile(up: SocketAddr, taps: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n{taps}\n    \
         kubernetes cluster.local {{\n        snapshot {}\n    }}\n    forward . {up}\n    cache 30\n}}\n",
        demo_cluster().display()
    )
}

/// One query sent: its client port, protocol, bytes, and the reply's bytes.
struct Sent {
    port: u16,
    tcp: bool,
    query: Vec<u8>,
    reply: Vec<u8>,
}

fn ask(server: SocketAddr, id: u16, name: &str, tcp: bool) -> Sent {
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
fn script(server: &Server) -> Vec<Sent> {
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
fn by_type(messages: &[Value]) -> BTreeMap<String, Vec<&Value>> {
    let mut all: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for m in messages {
        let kind = m["message"]["type"].as_str().unwrap_or("?").to_string();
        all.entry(kind).or_default().push(m);
    }
    all
}

/// Checks what a collector printed against `sent`: one CLIENT_QUERY and
/// one CLIENT_RESPONSE per query (by client port, protocol), two upstream
/// exchanges to `up`, the identity and version, wire text only with `full`.
fn check_json(messages: &[Value], sent: &[Sent], up: SocketAddr, identity: &str, full: bool) {
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
        (seen.sort(), want.sort());
        assert_eq!(seen, want, "{kind}: one per query, from its client's port");
    }
    for m in &all["FORWARDER_QUERY"] {
        let m = &m["message"];
        assert_eq!(
            (m["response_address"].as_str(), m["response_port"].as_u64()),
            (Some("127.0.0.1"), Some(u64::from(up.port())))
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

#[test]
fn unix_and_tcp_collectors_see_every_query_one_to_one() {
    if !tools("unix_and_tcp_collectors_see_every_query_one_to_one") {
        return;
    }
    let dir = temp_dir("dnstap-plain");
    let (socket, port) = (dir.join("tap.sock"), free_port());
    let unix = Collector::dnstap(&["-u", &socket.display().to_string()], &dir.join("unix.json"));
    let tcp = Collector::dnstap(&["-l", &format!("127.0.0.1:{port}")], &dir.join("tcp.json"));
    let up = Stub::start();
    let taps = format!(
        "    dnstap unix://{} {{\n        identity tap-one\n    }}\n    dnstap tcp://127.0.0.1:{port} {{\n        identity tap-two\n    }}",
        socket.display()
    );
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    wait_connected(&server, 2);
    let sent = script(&server);
    for (c, identity) in [(&unix, "tap-one"), (&tcp, "tap-two")] {
        let got = json_count(&c.out, 16, Duration::from_secs(10));
        check_json(&got, &sent, up.addr, identity, false);
    }
    assert_eq!(server.metric("coredns_dnstap_dropped_total"), 0.0);
    assert_eq!(server.metric("clusterdns_dnstap_sent_total"), 32.0);
}

/// Waits until `n` collector sessions are open (bounded, 10 s).
fn wait_connected(server: &Server, n: u32) {
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

#[test]
fn full_messages_carry_the_bytes_on_the_wire() {
    if !tools("full_messages_carry_the_bytes_on_the_wire") {
        return;
    }
    let dir = temp_dir("dnstap-full");
    let (socket, file) = (dir.join("tap.sock"), dir.join("capture.fstrm"));
    let capture = Collector::fstrm(&socket, &file);
    let tool_socket = dir.join("tool.sock");
    let tool = Collector::dnstap(&["-u", &tool_socket.display().to_string()], &dir.join("tool.json"));
    wait_for_socket(&socket);
    let up = Stub::start();
    let taps = format!(
        "    dnstap {} full {{\n        identity tap-full\n        extra \"pod flood audit\"\n    }}\n    dnstap {} full",
        socket.display(),
        tool_socket.display()
    );
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    wait_connected(&server, 2);
    let sent = script(&server);
    check_json(
        &json_count(&tool.out, 16, Duration::from_secs(10)),
        &sent,
        up.addr,
        &hostname(),
        true,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.metric("clusterdns_dnstap_sent_total") < 32.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    capture.stop();
    let frames = collector::frames(&file);
    assert_eq!(frames.len(), 16, "messages in the capture file");
    for f in &frames {
        assert_eq!(
            (f.identity.as_deref(), f.extra.as_deref()),
            (Some(&b"tap-full"[..]), Some(&b"pod flood audit"[..]))
        );
    }
    let messages: Vec<_> = frames.iter().filter_map(|f| f.message.clone()).collect();
    for s in &sent {
        let port = Some(u32::from(s.port));
        let query = messages
            .iter()
            .find(|m| m.r#type == 5 && m.query_port == port)
            .expect("CLIENT_QUERY");
        let reply = messages
            .iter()
            .find(|m| m.r#type == 6 && m.query_port == port)
            .expect("CLIENT_RESPONSE");
        assert_eq!(query.query_message.as_ref(), Some(&s.query), "the query as sent");
        assert_eq!(reply.response_message.as_ref(), Some(&s.reply), "the reply as received");
        assert!(reply.response_time_sec >= query.query_time_sec);
    }
    let upstream: Vec<_> = messages.iter().filter(|m| m.r#type == 8).collect();
    let seen = up.seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!((upstream.len(), seen.len()), (2, 2));
    for m in upstream {
        let parsed = hickory_proto::op::Message::from_vec(m.response_message.as_deref().unwrap_or_default())
            .expect("FORWARDER_RESPONSE holds the upstream's reply");
        assert!(
            seen.iter().any(|q| q.metadata.id == parsed.metadata.id),
            "a reply to a query the upstream received"
        );
    }
    // The tool reads the capture file as it reads a live stream.
    let read = common::run("dnstap", &["-r", &file.display().to_string(), "-j"]);
    assert_eq!(read.lines().count(), 16, "{read}");
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn wait_for_socket(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} not created", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn tls_collector_behind_a_tls_terminator() {
    if !tools("tls_collector_behind_a_tls_terminator") {
        return;
    }
    let dir = temp_dir("dnstap-tls");
    let pem = collector::certificate(&dir);
    let socket = dir.join("tap.sock");
    let tool = Collector::dnstap(&["-u", &socket.display().to_string()], &dir.join("tls.json"));
    wait_for_socket(&socket);
    let port = free_port();
    let _tls = Collector::tls_terminator(port, &pem, &socket);
    let up = Stub::start();
    // skipverify: the self-signed certificate is taken; without it the
    // system roots refuse it and that tap's messages are dropped, counted.
    let taps = format!(
        "    dnstap tls://127.0.0.1:{port} {{\n        identity tls-tap\n        skipverify\n    }}\n    dnstap tls://localhost:{port}"
    );
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    wait_connected(&server, 1);
    let sent = script(&server);
    let got = json_count(&tool.out, 16, Duration::from_secs(10));
    check_json(&got, &sent, up.addr, "tls-tap", false);
    assert_eq!(
        server.metric("clusterdns_dnstap_connects_total"),
        1.0,
        "the verifying tap never connects"
    );
    assert!(server.metric("coredns_dnstap_dropped_total") >= 1.0);
    assert!(
        server.log_contains("no connection to dnstap endpoint tls://localhost"),
        "the refusal is logged"
    );
}

#[test]
fn an_absent_or_restarted_collector_never_costs_an_answer() {
    if !tools("an_absent_or_restarted_collector_never_costs_an_answer") {
        return;
    }
    let dir = temp_dir("dnstap-restart");
    let socket = dir.join("tap.sock");
    let up = Stub::start();
    *up.mode.lock().expect("mode") = Mode::Answer;
    let taps = format!("    dnstap {}", socket.display());
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    // Absent: every query answered, every message dropped and counted.
    for i in 0..20 {
        ask(server.dns, i, "kubernetes.default.svc.cluster.local.", false);
    }
    assert!(
        server.metric("coredns_dnstap_dropped_total") >= 40.0,
        "{}",
        server.metrics()
    );
    assert_eq!(server.metric("clusterdns_dnstap_connects_total"), 0.0);
    // Started: the writer reconnects (backoff at most 10 s).
    let first = Collector::dnstap(&["-u", &socket.display().to_string()], &dir.join("first.json"));
    let port = until_collected(&server, &first.out);
    assert!(json(&first.out).iter().any(|m| m["message"]["query_port"] == port));
    // Restarted: the session ends when the collector goes, and is opened again.
    drop(first);
    let _ = std::fs::remove_file(&socket);
    for i in 0..10 {
        ask(server.dns, 100 + i, "www.example.org.", i % 2 == 1);
    }
    let second = Collector::dnstap(&["-u", &socket.display().to_string()], &dir.join("second.json"));
    until_collected(&server, &second.out);
    assert!(server.metric("clusterdns_dnstap_connects_total") >= 2.0);
    assert!(server.log_contains("connected to unix://"));
}

/// Asks once every 100 ms until the collector writing `out` shows a query
/// (bounded, 15 s; every query must be answered); the last client port.
fn until_collected(server: &Server, out: &Path) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut id = 1000;
    loop {
        let sent = ask(server.dns, id, "kubernetes.default.svc.cluster.local.", false);
        std::thread::sleep(Duration::from_millis(100));
        let got = json(out);
        let port = u64::from(sent.port);
        if got.iter().any(|m| m["message"]["query_port"] == port) {
            return port;
        }
        assert!(Instant::now() < deadline, "the collector got nothing in 15 s");
        id += 1;
    }
}

#[test]
fn a_stalled_collector_costs_messages_not_answers() {
    if !tools("a_stalled_collector_costs_messages_not_answers") {
        return;
    }
    let dir = temp_dir("dnstap-stalled");
    let socket = dir.join("tap.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    // The collector completes the handshake and never reads again.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().take(20) {
            let Ok(mut conn) = conn else { break };
            let mut ready = [0u8; 64];
            let _ = conn.read(&mut ready);
            let accept = [
                &[0u8, 0, 0, 0, 0, 0, 0, 34, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 22][..],
                b"protobuf:dnstap.Dnstap",
            ]
            .concat();
            let _ = conn.write_all(&accept);
            held.push(conn);
        }
    });
    let up = Stub::start();
    let taps = format!("    dnstap {} full 1 1", socket.display());
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    wait_connected(&server, 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut asked = 0u16;
    while server.metric("coredns_dnstap_dropped_total") <= 0.0 {
        assert!(
            Instant::now() < deadline,
            "nothing dropped in 30 s: {}",
            server.metrics()
        );
        for _ in 0..200 {
            // every query answered while the collector stalls (ask panics otherwise)
            ask(server.dns, asked, "kubernetes.default.svc.cluster.local.", false);
            asked = asked.wrapping_add(1);
        }
    }
    assert!(server.is_running());
}
