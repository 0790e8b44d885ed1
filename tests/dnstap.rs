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
#[path = "dnstap/script.rs"]
mod script;

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use collector::{json, json_count, Collector};
use common::stub::{Mode, Stub};
use common::{free_port, temp_dir, Server};
use script::{ask, check_json, corefile, hostname, script, tools, until_metric, wait_connected, wait_for_socket};

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
        check_json(&got, &sent, &up, identity, false);
    }
    assert_eq!(server.metric("coredns_dnstap_dropped_total"), 0.0);
    until_metric(&server, "clusterdns_dnstap_sent_total", 32.0);
    assert_eq!(server.metric("clusterdns_dnstap_sent_total"), 32.0);
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
        &up,
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
    check_json(&got, &sent, &up, "tls-tap", false);
    assert_eq!(
        server.metric("clusterdns_dnstap_connects_total"),
        1.0,
        "the verifying tap never connects"
    );
    // Dropped messages are counted by the writer task, a moment later.
    until_metric(&server, "coredns_dnstap_dropped_total", 1.0);
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
    until_metric(&server, "coredns_dnstap_dropped_total", 40.0);
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
