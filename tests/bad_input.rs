//! Bad input of every kind: malformed packets get the right rcode (or are
//! dropped), hostile TCP framing is cut off, bad Corefiles and bad dumps
//! produce located errors, and the server keeps serving throughout.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{corefile, query, temp_dir, udp, udp_raw, Server};
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RecordType};

fn rcode_of(reply: Option<Vec<u8>>) -> String {
    let bytes = reply.expect("a reply");
    match Message::from_vec(&bytes) {
        Ok(m) => common::rcode_name(&m),
        Err(_) => format!("undecodable reply {bytes:?}"),
    }
}

fn msg(op: OpCode, names: &[&str]) -> Message {
    let mut m = Message::new(7, MessageType::Query, op);
    for n in names {
        m.add_query(Query::query(Name::from_ascii(n).expect("name"), RecordType::A));
    }
    m
}

#[test]
fn malformed_packets_get_the_right_rcode_and_nothing_breaks() {
    let server = Server::start(&temp_dir("packets"), &corefile(&common::demo_cluster(), ""));
    let s = server.dns;
    // too short to be a header, and a response: dropped
    assert!(udp_raw(s, &[0x12, 0x34, 0x01]).is_none());
    let mut response = query(9, "kubernetes.default.svc.cluster.local.", RecordType::A, None);
    response[2] |= 0x80;
    assert!(udp_raw(s, &response).is_none(), "responses are never answered");
    // question counts
    let zero = msg(OpCode::Query, &[]).to_vec().expect("encode");
    assert_eq!(rcode_of(udp_raw(s, &zero)), "FORMERR");
    let two = msg(OpCode::Query, &["a.cluster.local.", "b.cluster.local."])
        .to_vec()
        .expect("encode");
    assert_eq!(rcode_of(udp_raw(s, &two)), "FORMERR");
    // a compression pointer pointing at itself, and a question cut short
    let looped = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1];
    assert_eq!(rcode_of(udp_raw(s, &looped)), "FORMERR");
    let cut = &query(3, "kubernetes.default.svc.cluster.local.", RecordType::A, None)[..20];
    assert_eq!(rcode_of(udp_raw(s, cut)), "FORMERR");
    // opcodes and EDNS versions
    let notify = msg(OpCode::Notify, &["cluster.local."]).to_vec().expect("encode");
    assert_eq!(rcode_of(udp_raw(s, &notify)), "NOTIMP");
    let mut v1 = msg(OpCode::Query, &["kubernetes.default.svc.cluster.local."]);
    let mut e = Edns::new();
    e.set_version(1);
    v1.set_edns(e);
    let reply = udp_raw(s, &v1.to_vec().expect("encode")).expect("reply");
    let m = Message::from_vec(&reply).expect("decodes");
    assert_eq!(common::rcode_name(&m), "BADVERS");
    assert_eq!(
        m.edns.as_ref().map(|e| e.version()),
        Some(0),
        "we answer with our version"
    );
    // class CH and zone transfers are refused
    let mut ch = msg(OpCode::Query, &[]);
    let mut q = Query::query(Name::from_ascii("version.bind.").expect("name"), RecordType::TXT);
    q.set_query_class(DNSClass::CH);
    ch.add_query(q);
    assert_eq!(rcode_of(udp_raw(s, &ch.to_vec().expect("encode"))), "REFUSED");
    let axfr = query(5, "cluster.local.", RecordType::AXFR, None);
    assert_eq!(rcode_of(udp_raw(s, &axfr)), "REFUSED");
    // 2,000 deterministic garbage packets: no crash
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    for i in 0..2000 {
        let len = 1 + (i % 300);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = sock.send_to(&bytes, s);
    }
    let ok = udp(s, "kubernetes.default.svc.cluster.local.", RecordType::A);
    assert_eq!(
        common::answer_lines(&ok),
        ["kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"]
    );
}

#[test]
fn tcp_length_prefix_longer_than_the_data_is_cut_off() {
    let server = Server::start(&temp_dir("tcpframe"), &corefile(&common::demo_cluster(), ""));
    let mut c = TcpStream::connect(server.dns).expect("connect");
    // the server's read timeout is 3 s; ours only catches a hang
    c.set_read_timeout(Some(common::REPLY)).expect("timeout");
    c.write_all(&[0x01, 0xF4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        .expect("write");
    let mut buf = [0u8; 16];
    let closed = match c.read(&mut buf) {
        Ok(n) => n == 0,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    };
    assert!(
        closed,
        "no reply to half a message; closed by the read timeout, not left hanging"
    );
    let ok = udp(server.dns, "kubernetes.default.svc.cluster.local.", RecordType::A);
    assert_eq!(common::rcode_name(&ok), "NOERROR");
}

#[test]
fn a_bad_corefile_lists_every_error_with_its_location_and_exits_64() {
    let dir = temp_dir("badconf");
    let conf = dir.join("Corefile");
    std::fs::write(&conf, ".:53 {\n    kubernetes cluster.local {\n        snapshot x.yaml\n        ttl -1\n    }\n    acl {\n        permit net 10.0.0.0/8\n    }\n    frobnicate\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(&conf)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    let c = conf.display();
    for want in [
        format!("{c}:4:13: 'ttl': '-1' is not a number of seconds"),
        format!("{c}:7:9: acl: unknown action 'permit'"),
        format!("{c}:9:5: unknown directive 'frobnicate'"),
        "unclosed '{'".to_string(),
    ] {
        assert!(err.contains(&want), "missing '{want}' in:\n{err}");
    }
    let good = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf", "zones/Corefile"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run");
    assert_eq!(good.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&good.stdout).contains("kubernetes cluster.local."));
}

#[test]
fn dumps_reload_atomically_and_malformed_ones_change_nothing() {
    let dir = temp_dir("reload");
    let dump = dir.join("cluster.yaml");
    let service = |name: &str, ip: &str| {
        format!("- apiVersion: v1\n  kind: Service\n  metadata: {{name: {name}, namespace: app}}\n  spec: {{clusterIP: \"{ip}\", ports: [{{port: 80}}]}}\n")
    };
    let head = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: app}\n";
    std::fs::write(
        &dump,
        format!("{head}{}{}", service("one", "10.0.0.1"), service("broken", "not-an-ip")),
    )
    .expect("write");
    let server = Server::start(&dir, &corefile(&dump, ""));
    let a = |name: &str| common::answer_lines(&udp(server.dns, name, RecordType::A));
    assert_eq!(
        a("one.app.svc.cluster.local."),
        ["one.app.svc.cluster.local. 5 IN A 10.0.0.1"]
    );
    assert!(
        a("broken.app.svc.cluster.local.").is_empty(),
        "a malformed object is skipped"
    );
    assert!(server.log_contains("Service app/broken: spec.clusterIPs: 'not-an-ip' is not an IP address"));

    std::fs::write(&dump, format!("{head}{}  bad: [unclosed\n", service("two", "10.0.0.2"))).expect("write");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.log_contains("keeping the previously loaded state") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let lines = server.log.lock().map(|l| l.clone()).unwrap_or_default();
    let error = lines
        .iter()
        .find(|l| l.contains("keeping the previously loaded state"))
        .cloned()
        .unwrap_or_default();
    let prefix = format!("{}:", dump.display());
    let location: Vec<&str> = error.split(&prefix).nth(1).unwrap_or("").splitn(3, ':').collect();
    assert!(
        location.len() == 3 && location[0].parse::<u32>().is_ok() && location[1].parse::<u32>().is_ok(),
        "FILE:LINE:COL in {error:?}"
    );
    assert_eq!(
        a("one.app.svc.cluster.local."),
        ["one.app.svc.cluster.local. 5 IN A 10.0.0.1"],
        "old state still served"
    );

    std::fs::write(&dump, format!("{head}{}", service("two", "10.0.0.2"))).expect("write");
    let deadline = Instant::now() + Duration::from_secs(10);
    while a("two.app.svc.cluster.local.").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        a("two.app.svc.cluster.local."),
        ["two.app.svc.cluster.local. 5 IN A 10.0.0.2"]
    );
    let gone = udp(server.dns, "one.app.svc.cluster.local.", RecordType::A);
    assert_eq!(
        common::rcode_name(&gone),
        "NXDOMAIN",
        "the new dump replaced the old one whole"
    );
}

#[test]
fn not_ready_until_the_first_good_load_and_servfail_meanwhile() {
    let dir = temp_dir("unready");
    let dump = dir.join("cluster.yaml");
    std::fs::write(&dump, "items: [unclosed").expect("write");
    let server = Server::spawn(&dir, &corefile(&dump, ""));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(common::http_get(server.ready, "/ready").starts_with("HTTP/1.1 503"));
    let m = udp(server.dns, "kubernetes.default.svc.cluster.local.", RecordType::A);
    assert_eq!(
        common::rcode_name(&m),
        "SERVFAIL",
        "never NXDOMAIN before the first sync"
    );
    std::fs::copy(common::demo_cluster(), &dump).expect("copy");
    server.wait_ready(Duration::from_secs(10));
    let m = udp(server.dns, "kubernetes.default.svc.cluster.local.", RecordType::A);
    assert_eq!(
        common::answer_lines(&m),
        ["kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"]
    );
}

#[test]
fn a_panic_is_answered_servfail_counted_and_serving_goes_on() {
    let dir = temp_dir("panic");
    let text = corefile(&common::demo_cluster(), "").replace(
        "    ready 127.0.0.1:0\n",
        "    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n",
    );
    let server = Server::start(&dir, &text);
    // the debug build's test-only trigger
    let udp_reply = udp(server.dns, "panic.clusterdns.test.", RecordType::A);
    assert_eq!(common::rcode_name(&udp_reply), "SERVFAIL");
    let tcp_reply = common::tcp(server.dns, "panic.clusterdns.test.", RecordType::A);
    assert_eq!(common::rcode_name(&tcp_reply), "SERVFAIL");
    for _ in 0..3 {
        let ok = udp(server.dns, "kubernetes.default.svc.cluster.local.", RecordType::A);
        assert_eq!(common::rcode_name(&ok), "NOERROR");
    }
    assert_eq!(server.metric("coredns_panics_total"), 2.0);
    assert!(server.is_running());
}
