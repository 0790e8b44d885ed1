//! The `forward` options CoreDNS 1.12–1.14 added, each honoured over the
//! wire against in-process stub upstreams: `failover`, `next_on_nodata`,
//! `max_connect_attempts`, `failfast_all_unhealthy_upstreams`, `max_age`,
//! `source_address`, `prefer_udp`'s retry over TCP, and hostname upstreams
//! resolved through `resolver`. Each test has a second zone without the
//! option that behaves the other way, so each fails without it.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use common::stub::{Mode, Stub};
use common::{check, query, rcode_name, tcp, temp_dir, udp, Server};
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;

fn server(tag: &str, body: &str) -> Server {
    let text = format!(".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n{body}\n}}\n");
    Server::start(&temp_dir(tag), &text)
}

/// One UDP query with a patient client (failures take several read timeouts).
fn slow_udp(server: SocketAddr, name: &str) -> Message {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(8))).expect("timeout");
    sock.send_to(&query(7, name, RecordType::A, Some(1232)), server)
        .expect("send");
    let mut buf = vec![0u8; 4096];
    let n = sock.recv(&mut buf).expect("a reply");
    Message::from_vec(&buf[..n]).expect("decodable")
}

/// A UDP upstream that never answers, and how many queries for `name` it got.
struct Hole(UdpSocket);

impl Hole {
    fn new() -> Hole {
        let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
        s.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
        Hole(s)
    }

    fn addr(&self) -> SocketAddr {
        self.0.local_addr().expect("addr")
    }

    /// Queries for `name` received so far (health checks are not counted).
    fn drain(&self, name: &str) -> usize {
        let mut buf = vec![0u8; 4096];
        let mut n = 0;
        for _ in 0..1000 {
            let Ok(len) = self.0.recv(&mut buf) else { break };
            let m = Message::from_vec(&buf[..len]).expect("a query");
            n += usize::from(m.queries.first().is_some_and(|q| q.name().to_ascii() == name));
        }
        n
    }
}

#[test]
fn failover_asks_the_next_upstream_on_listed_rcodes() {
    let (refusing, good) = (Stub::start(), Stub::start());
    refusing.set(Mode::Rcode(ResponseCode::Refused));
    let (r, g) = (refusing.addr, good.addr);
    let body = format!("    forward f.test {r} {g} {{\n        policy sequential\n        failover SERVFAIL REFUSED\n    }}\n    forward . {r} {g} {{\n        policy sequential\n    }}");
    let s = server("fwd-failover", &body);
    let m = udp(s.dns, "www.f.test.", RecordType::A);
    assert_eq!((rcode_name(&m), m.answers.len()), ("NOERROR".to_string(), 1));
    let m = udp(s.dns, "www.plain.test.", RecordType::A);
    assert_eq!(rcode_name(&m), "REFUSED", "without failover the first answer stands");
    // every upstream refusing: the last answer is returned
    good.set(Mode::Rcode(ResponseCode::Refused));
    assert_eq!(rcode_name(&udp(s.dns, "two.f.test.", RecordType::A)), "REFUSED");
}

#[test]
fn next_on_nodata_passes_an_empty_answer_to_the_next_forward() {
    let (empty, full) = (Stub::start(), Stub::start());
    empty.set(Mode::Rcode(ResponseCode::NoError));
    let (e, f) = (empty.addr, full.addr);
    let body =
        format!("    forward n.test {e} {{\n        next_on_nodata\n    }}\n    forward p.test {e}\n    forward . {f}");
    let s = server("fwd-nodata", &body);
    let m = udp(s.dns, "www.n.test.", RecordType::A);
    assert_eq!(m.answers.len(), 1, "the next forward answered: {m:?}");
    let m = udp(s.dns, "www.p.test.", RecordType::A);
    assert_eq!((rcode_name(&m), m.answers.len()), ("NOERROR".to_string(), 0));
}

#[test]
fn max_connect_attempts_caps_the_tries_of_one_query() {
    let (one, default, three) = (Hole::new(), Hole::new(), Hole::new());
    let opts = "        read_timeout 200ms\n        max_fails 0";
    let body = format!(
        "    forward one.test {} {{\n        max_connect_attempts 1\n{opts}\n    }}\n    forward three.test {} {{\n        max_connect_attempts 3\n{opts}\n    }}\n    forward . {} {{\n{opts}\n    }}",
        one.addr(),
        three.addr(),
        default.addr()
    );
    let s = server("fwd-attempts", &body);
    for (name, hole, want) in [
        ("a.one.test.", &one, 1),
        ("a.three.test.", &three, 3),
        ("a.default.test.", &default, 2),
    ] {
        assert_eq!(rcode_name(&slow_udp(s.dns, name)), "SERVFAIL");
        assert_eq!(hole.drain(name), want, "{name}: attempts (default: 2 x 1 upstream)");
    }
}

#[test]
fn failfast_answers_servfail_without_asking_a_down_upstream() {
    let (fast, slow) = (Hole::new(), Hole::new());
    let opts = "        read_timeout 200ms\n        max_fails 1\n        health_check 5s";
    let body = format!(
        "    forward fast.test {} {{\n        failfast_all_unhealthy_upstreams\n{opts}\n    }}\n    forward . {} {{\n{opts}\n    }}",
        fast.addr(),
        slow.addr()
    );
    let s = server("fwd-failfast", &body);
    // a forward without an answer is SERVFAIL, not passed to the next one
    assert_eq!(rcode_name(&slow_udp(s.dns, "x.fast.test.")), "SERVFAIL");
    assert_eq!(slow.drain("x.fast.test."), 0);
    assert_eq!(fast.drain("x.fast.test."), 1);
    // the first query marks each upstream down (max_fails 1)
    assert_eq!(rcode_name(&slow_udp(s.dns, "a.slow.test.")), "SERVFAIL");
    assert_eq!(
        slow.drain("a.slow.test."),
        2,
        "down after one try, tried once more anyway"
    );
    assert_eq!(rcode_name(&slow_udp(s.dns, "b.fast.test.")), "SERVFAIL");
    assert_eq!(rcode_name(&slow_udp(s.dns, "b.slow.test.")), "SERVFAIL");
    assert_eq!(fast.drain("b.fast.test."), 0, "failfast: never sent");
    assert_eq!(slow.drain("b.slow.test."), 1, "default: one is tried anyway");
    assert!(s.metric("coredns_forward_healthcheck_broken_total") >= 2.0);
}

#[test]
fn max_age_closes_a_busy_pooled_connection() {
    let (aged, kept) = (Stub::start(), Stub::start());
    let opts = "        force_tcp\n        expire 1s";
    let body = format!(
        "    forward aged.test {} {{\n{opts}\n        max_age 1s\n    }}\n    forward . {} {{\n{opts}\n    }}",
        aged.addr, kept.addr
    );
    let s = server("fwd-maxage", &body);
    // a query every 150 ms for 2.4 s: never idle for `expire`, older than `max_age`
    for i in 0..16 {
        assert_eq!(udp(s.dns, &format!("q{i}.aged.test."), RecordType::A).answers.len(), 1);
        assert_eq!(udp(s.dns, &format!("q{i}.kept.test."), RecordType::A).answers.len(), 1);
        std::thread::sleep(Duration::from_millis(150));
    }
    assert_eq!(kept.connections(), 1, "without max_age one connection serves all");
    assert!(aged.connections() >= 2, "max_age reopened: {}", aged.connections());
}

#[test]
fn source_address_is_where_queries_leave_from() {
    let (bound, plain) = (Stub::start(), Stub::start());
    let body = format!(
        "    forward tcp.test {b} {{\n        source_address 127.0.0.2\n        force_tcp\n    }}\n    forward src.test {b} {{\n        source_address 127.0.0.2\n    }}\n    forward . {p}",
        b = bound.addr,
        p = plain.addr
    );
    let s = server("fwd-source", &body);
    assert_eq!(udp(s.dns, "a.src.test.", RecordType::A).answers.len(), 1);
    assert_eq!(udp(s.dns, "a.tcp.test.", RecordType::A).answers.len(), 1);
    assert_eq!(udp(s.dns, "a.other.test.", RecordType::A).answers.len(), 1);
    let ips = |s: &Stub| s.sources().iter().map(|a| a.ip().to_string()).collect::<Vec<_>>();
    assert_eq!(ips(&bound), ["127.0.0.2", "127.0.0.2"], "UDP then TCP");
    assert_eq!(bound.connections(), 1);
    assert_eq!(ips(&plain), ["127.0.0.1"]);
}

#[test]
fn prefer_udp_asks_again_over_tcp_when_truncated() {
    let stub = Stub::start();
    stub.set(Mode::Truncate);
    let body = format!("    forward . {} {{\n        prefer_udp\n    }}", stub.addr);
    let s = server("fwd-preferudp", &body);
    let m = tcp(s.dns, "www.example.org.", RecordType::A);
    assert!(!m.metadata.truncation);
    assert_eq!(m.answers.len(), 1, "the TCP retry's whole answer");
    assert_eq!((stub.count(), stub.connections()), (2, 1), "UDP first, then TCP");
}

#[test]
fn hostname_upstreams_resolve_through_resolver_at_load() {
    let resolver = Stub::start();
    let dir = temp_dir("fwd-resolver");
    let conf = dir.join("Corefile");
    let text = format!(
        ".:53 {{\n    forward . dns.upstream.test:5300 10.0.0.9 {{\n        resolver {}\n    }}\n}}\n",
        resolver.addr
    );
    std::fs::write(&conf, text).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(&conf)
        .output()
        .expect("run clusterdns check");
    let (status, out) = (out.status, String::from_utf8_lossy(&out.stdout).into_owned());
    assert!(status.success(), "{out}");
    assert!(out.contains("192.0.2.1:5300 10.0.0.9:53"), "resolved in place: {out}");
    let asked = resolver
        .last()
        .and_then(|m| m.queries.first().map(|q| q.name().to_ascii()));
    assert_eq!(asked.as_deref(), Some("dns.upstream.test."));
}

#[test]
fn check_refuses_what_cannot_be_honoured_with_the_reason() {
    let dir = temp_dir("fwd-refuse");
    let conf = dir.join("Corefile");
    let text = ".:53 {\n    forward . 10.0.0.1 {\n        failover NOERROR\n        max_age 1s\n        doh_method PUT\n        source_address not-an-ip\n        resolver nameserver\n    }\n}\n";
    std::fs::write(&conf, text).expect("write");
    let (status, out) = check(&conf);
    assert!(!status.success());
    for want in [
        "Corefile:3:18: failover: NOERROR cannot be used",
        "Corefile:6:24: 'source_address': 'not-an-ip' is not an IP address",
        "Corefile:7:18: resolver: 'nameserver' is not an IP address or IP:PORT",
        "Corefile:5:20: doh_method: 'PUT' must be either POST or GET",
        "Corefile:2:5: forward: max_age (1s) must not be less than expire (10s)",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
}
