//! DNS over TLS and HTTPS upstreams end to end: the real binary forwarding
//! to Debian's unbound (built with nghttp2, so it serves DNS over HTTPS
//! too) on loopback, with certificates
//! made by openssl at test time (a test CA, a server certificate for
//! `dns.test` and 127.0.0.1, and a second CA nobody trusts).
//!
//! Cases: answers over TLS; concurrent queries pipelined on one connection
//! (counted with `ss`); wrong server name, unknown CA and an expired certificate give SERVFAIL with
//! a logged reason and a counter, and nothing reaches the port in plain
//! DNS; the upstream restarted: the next query reconnects; two TLS
//! upstreams, the first gone: answers come from the second. Over HTTPS:
//! answers by POST and GET, concurrent queries as streams of one HTTP/2
//! connection, an unknown CA refused. `tls://IP%NAME`: two upstreams,
//! each checked against its own name.

mod common;

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{certs, rcode_name, run, temp_dir, udp, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;

struct Unbound(Child);

impl Drop for Unbound {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The tools these tests need, or `None` (SKIP; a failure under CI).
fn tools(test: &str) -> Option<PathBuf> {
    let install = "apt-get install unbound openssl iproute2 (tests/run installs them)";
    common::needs(test, common::installed("openssl"), install)?;
    common::needs(test, common::installed("ss"), install)?;
    common::needs(test, common::installed("unbound"), install)
}

/// A test CA (`ca.pem`), the server's key and certificate signed by it
/// (`srv.key`, `srv.pem`: DNS `dns.test`, IP 127.0.0.1; `srv2.*` the same
/// for `other.test`) and a CA that
/// signed nothing (`other.pem`).
fn certificates(dir: &Path) {
    certs::ca(dir, "ca", "clusterdns test CA");
    certs::ca(dir, "other", "unknown CA");
    for (srv, name) in [("srv", "dns.test"), ("srv2", "other.test")] {
        certs::signed(dir, srv, "ca", name, certs::Usage::Server, false);
    }
}

/// unbound serving `example.org` over DNS over TLS on 127.0.0.1:`port`.
fn unbound(bin: &Path, dir: &Path, port: u16) -> Unbound {
    unbound_on(bin, dir, port, "tls-port", "srv")
}

/// unbound serving `example.org` on 127.0.0.1:`port`, the port made
/// DNS over TLS (`tls-port`) or over HTTPS (`https-port`), with the
/// certificate `cert`.pem (`srv` or `srv2`).
fn unbound_on(bin: &Path, dir: &Path, port: u16, kind: &str, cert: &str) -> Unbound {
    let conf = dir.join(format!("unbound-{port}.conf"));
    let body = format!(
        "server:\n  interface: 127.0.0.1@{port}\n  {kind}: {port}\n  http-endpoint: \"/dns-query\"\n  tls-service-key: \"{d}/{cert}.key\"\n  tls-service-pem: \"{d}/{cert}.pem\"\n  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"{d}\"\n  pidfile: \"{d}/unbound-{port}.pid\"\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  do-udp: no\n  module-config: \"iterator\"\n  local-zone: \"example.org.\" static\n  local-data: \"www.example.org. 300 IN A 192.0.2.1\"\n  local-data: \"example.org. 300 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 60\"\n  local-zone: \".\" static\n  local-data: \". 300 IN NS ns.example.org.\"\n",
        d = dir.display()
    );
    std::fs::write(&conf, body).expect("write unbound.conf");
    let child = Command::new(bin)
        .args(["-d", "-c"])
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
    let u = Unbound(child);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return u;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("unbound did not listen on 127.0.0.1:{port}");
}

fn corefile(forward: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    forward {forward}\n}}\n"
    )
}

/// Established TCP connections to 127.0.0.1:`port` (as `ss` sees them).
fn connections_to(port: u16) -> usize {
    let out = run(
        "ss",
        &["-Htn", "state", "established", "dst", &format!("127.0.0.1:{port}")],
    );
    out.lines().filter(|l| !l.trim().is_empty()).count()
}

fn a(server: &Server, name: &str) -> (String, Vec<String>) {
    let m = udp(server.dns, name, RecordType::A);
    (rcode_name(&m), m.answers.iter().map(|r| r.data.to_string()).collect())
}

#[test]
fn answers_over_tls_pipelined_on_one_connection() {
    let Some(bin) = tools("forward over TLS") else { return };
    let dir = temp_dir("dot-answers");
    certificates(&dir);
    let port = common::free_port();
    let _up = unbound(&bin, &dir, port);
    let fw = format!(
        ". tls://127.0.0.1%dns.test:{port} {{\n        tls {}/ca.pem\n    }}",
        dir.display()
    );
    let server = Server::start(&dir, &corefile(&fw));
    assert_eq!(
        a(&server, "www.example.org."),
        ("NOERROR".into(), vec!["192.0.2.1".into()])
    );
    assert_eq!(a(&server, "nothing.example.org.").0, "NXDOMAIN");
    // 200 different questions at once (no cache): all answered, on one connection
    assert_eq!(burst(&server, 200), 200, "every pipelined query answered");
    assert_eq!(connections_to(port), 1, "one TLS connection carried them all");
    let series =
        format!("clusterdns_forward_tls_failures_total{{proxy_name=\"forward\",to=\"tls://127.0.0.1:{port}\"}} 0");
    assert!(server.metrics().contains(&series), "no handshake failed: {series}");
    // check prints the upstream and its TLS options as a Corefile loads them
    let check = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(dir.join("Corefile"))
        .output()
        .expect("run clusterdns check");
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{out}");
    assert!(
        out.contains(&format!("forward . tls://127.0.0.1%dns.test:{port} {{")),
        "{out}"
    );
    assert!(out.contains(&format!("tls {}/ca.pem", dir.display())), "{out}");
}

#[test]
fn wrong_name_unknown_ca_and_expired_certificate_get_servfail_and_nothing_in_plain_text() {
    let Some(bin) = tools("forward over TLS, refused certificates") else {
        return;
    };
    let dir = temp_dir("dot-refused");
    certificates(&dir);
    certs::signed(&dir, "expired", "ca", "dns.test", certs::Usage::Server, true);
    let (port, expired_port) = (common::free_port(), common::free_port());
    let _up = unbound(&bin, &dir, port);
    let _expired = unbound_on(&bin, &dir, expired_port, "tls-port", "expired");
    // a plain DNS listener on the same port: a fallback to plain DNS would land here
    let plain = UdpSocket::bind(("127.0.0.1", port)).expect("bind the plain port");
    plain.set_nonblocking(true).expect("nonblocking");
    let d = dir.display();
    for (case, port, options, reason) in [
        (
            "wrong server name",
            port,
            format!("tls {d}/ca.pem\n        tls_servername wrong.test"),
            "certificate not valid for name",
        ),
        (
            "unknown CA",
            port,
            format!("tls {d}/other.pem\n        tls_servername dns.test"),
            "UnknownIssuer",
        ),
        (
            "expired certificate",
            expired_port,
            format!("tls {d}/ca.pem\n        tls_servername dns.test"),
            "expired",
        ),
    ] {
        let fw = format!(". tls://127.0.0.1:{port} {{\n        {options}\n        max_fails 0\n    }}");
        let server = Server::start(&dir, &corefile(&fw));
        for _ in 0..3 {
            assert_eq!(a(&server, "www.example.org.").0, "SERVFAIL", "{case}");
        }
        let failures = server.metric_sum("clusterdns_forward_tls_failures_total", "tls://127.0.0.1");
        assert!(failures >= 3.0, "{case}: handshake failures counted: {failures}");
        let logged = server
            .log
            .lock()
            .map(|l| l.iter().filter(|x| x.contains("TLS handshake failed")).count())
            .unwrap_or(0);
        assert_eq!(logged, 1, "{case}: logged once");
        let line = server
            .log
            .lock()
            .map(|l| l.iter().find(|x| x.contains("TLS handshake failed")).cloned());
        assert!(
            server.log_contains(reason),
            "{case}: the reason ({reason}) is logged: {line:?}"
        );
        assert!(
            plain.recv_from(&mut [0u8; 512]).is_err(),
            "{case}: nothing sent in plain DNS"
        );
    }
}

#[test]
fn reconnects_after_a_restart_and_fails_over_between_tls_upstreams() {
    let Some(bin) = tools("forward over TLS, restart and failover") else {
        return;
    };
    let dir = temp_dir("dot-restart");
    certificates(&dir);
    let (p1, p2) = (common::free_port(), common::free_port());
    let first = unbound(&bin, &dir, p1);
    let second = unbound(&bin, &dir, p2);
    let fw = format!(
        ". tls://127.0.0.1%dns.test:{p1} tls://127.0.0.1%dns.test:{p2} {{\n        tls {}/ca.pem\n        policy sequential\n        health_check 200ms\n    }}",
        dir.display()
    );
    let server = Server::start(&dir, &corefile(&fw));
    assert_eq!(a(&server, "www.example.org.").0, "NOERROR");
    assert_eq!(
        (connections_to(p1), connections_to(p2)),
        (1, 0),
        "sequential: the first only"
    );
    // the first restarts: the next query finds its connection closed and opens another
    drop(first);
    let first = unbound(&bin, &dir, p1);
    assert_eq!(a(&server, "www.example.org.").0, "NOERROR");
    assert_eq!(connections_to(p1), 1, "reconnected to the restarted upstream");
    // the first is gone: answers come from the second
    drop(first);
    for _ in 0..5 {
        assert_eq!(a(&server, "www.example.org.").0, "NOERROR");
    }
    assert_eq!(connections_to(p2), 1, "the second answered over TLS");
    drop(second);
}

/// `n` different questions in waves of 50 sent at once (the server's UDP
/// receive buffer on loopback holds about a hundred, and a busy machine
/// reads it slowly); how many got their NXDOMAIN. Each wave goes out from
/// two sockets of 25 queries: one socket's buffer would not hold all the
/// answers of a wave that come back together.
fn burst(server: &Server, n: u16) -> usize {
    let socks: Vec<UdpSocket> = (0..2)
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
            s.set_read_timeout(Some(Duration::from_secs(8))).expect("timeout");
            s
        })
        .collect();
    let mut answered = std::collections::HashSet::new();
    let mut buf = vec![0u8; 2048];
    for wave in (0..n).step_by(50) {
        let ids: Vec<u16> = (wave..n.min(wave + 50)).collect();
        for id in &ids {
            let q = common::query(*id, &format!("b{id}.example.org."), RecordType::A, None);
            socks[usize::from(id % 2)].send_to(&q, server.dns).expect("send");
        }
        for sock in &socks {
            for _ in 0..ids.len().div_ceil(2) {
                let Ok(len) = sock.recv(&mut buf) else { break };
                let m = Message::from_vec(&buf[..len]).expect("reply");
                if rcode_name(&m) == "NXDOMAIN" {
                    answered.insert(m.metadata.id);
                }
            }
        }
    }
    answered.len()
}

#[test]
fn answers_over_https_by_post_and_get_on_one_connection() {
    let Some(bin) = tools("forward over HTTPS") else { return };
    let dir = temp_dir("doh-answers");
    certificates(&dir);
    let port = common::free_port();
    let _up = unbound_on(&bin, &dir, port, "https-port", "srv");
    for method in ["POST", "GET"] {
        let fw = format!(
            ". https://127.0.0.1:{port}/dns-query {{\n        tls {}/ca.pem\n        tls_servername dns.test\n        doh_method {method}\n    }}",
            dir.display()
        );
        let server = Server::start(&dir, &corefile(&fw));
        assert_eq!(
            a(&server, "www.example.org."),
            ("NOERROR".into(), vec!["192.0.2.1".into()]),
            "{method}"
        );
        assert_eq!(burst(&server, 100), 100, "{method}: every concurrent query answered");
        assert_eq!(connections_to(port), 1, "{method}: one HTTP/2 connection carried them");
        drop(server);
        std::thread::sleep(Duration::from_millis(200));
    }
    // an unknown CA: SERVFAIL, counted, logged once
    let fw = format!(
        ". https://127.0.0.1:{port} {{\n        tls {}/other.pem\n        tls_servername dns.test\n    }}",
        dir.display()
    );
    let server = Server::start(&dir, &corefile(&fw));
    for _ in 0..2 {
        assert_eq!(a(&server, "www.example.org.").0, "SERVFAIL");
    }
    assert!(server.metric_sum("clusterdns_forward_tls_failures_total", "https://127.0.0.1") >= 2.0);
    assert!(server.log_contains("TLS handshake failed"));
}

#[test]
fn each_upstream_is_checked_against_its_own_server_name() {
    let Some(bin) = tools("forward over TLS, a server name per upstream") else {
        return;
    };
    let dir = temp_dir("dot-names");
    certificates(&dir);
    let (p1, p2) = (common::free_port(), common::free_port());
    let _one = unbound_on(&bin, &dir, p1, "tls-port", "srv");
    let _two = unbound_on(&bin, &dir, p2, "tls-port", "srv2");
    let fw = format!(
        ". tls://127.0.0.1%dns.test:{p1} tls://127.0.0.1%other.test:{p2} {{\n        tls {}/ca.pem\n        policy round_robin\n    }}",
        dir.display()
    );
    let server = Server::start(&dir, &corefile(&fw));
    for _ in 0..4 {
        assert_eq!(a(&server, "www.example.org.").0, "NOERROR");
    }
    assert_eq!(
        (connections_to(p1), connections_to(p2)),
        (1, 1),
        "both upstreams answered over TLS"
    );
    assert_eq!(
        server.metric_sum("clusterdns_forward_tls_failures_total", "tls://"),
        0.0
    );
}

#[test]
fn an_idle_https_connection_closes_after_expire() {
    let Some(bin) = tools("an idle HTTPS connection closes after expire") else {
        return;
    };
    let dir = temp_dir("doh-expire");
    certificates(&dir);
    let port = common::free_port();
    let _up = unbound_on(&bin, &dir, port, "https-port", "srv");
    let fw = format!(
        ". https://127.0.0.1:{port}/dns-query {{\n        tls {}/ca.pem\n        tls_servername dns.test\n        expire 1s\n    }}",
        dir.display()
    );
    let server = Server::start(&dir, &corefile(&fw));
    assert_eq!(a(&server, "www.example.org.").0, "NOERROR");
    assert_eq!(connections_to(port), 1, "the connection stays open after a query");
    // unbound keeps an idle connection 30 s: closing within 5 s is ours.
    let deadline = Instant::now() + Duration::from_secs(5);
    while connections_to(port) > 0 {
        assert!(Instant::now() < deadline, "still open 5 s after idling with expire 1s");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        a(&server, "www.example.org.").0,
        "NOERROR",
        "the next query opens a new one"
    );
    assert_eq!(connections_to(port), 1);
}
