//! `forward` and `cache` end to end: the real binary forwarding to an
//! in-process stub upstream with faults on demand (and to Debian's unbound
//! in `tests/peers.rs`).

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::stub::{Mode, Stub};
use common::{query, rcode_name, tcp, temp_dir, udp, udp_raw, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;

fn corefile(forward: &str, extra: &str) -> String {
    format!(".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    forward {forward}\n    {extra}\n}}\n")
}

fn a(server: &Server, name: &str) -> (String, Vec<String>, Vec<u32>) {
    let m = udp(server.dns, name, RecordType::A);
    (
        rcode_name(&m),
        m.answers.iter().map(|r| r.data.to_string()).collect(),
        m.answers.iter().map(|r| r.ttl).collect(),
    )
}

#[test]
fn forwards_caches_counts_down_and_caches_denials() {
    let stub = Stub::start();
    let dir = temp_dir("fwd-cache");
    let server = Server::start(&dir, &corefile(&format!(". {}", stub.addr), "cache 30"));
    let (rcode, ips, ttls) = a(&server, "www.example.org.");
    assert_eq!((rcode.as_str(), ips), ("NOERROR", vec!["192.0.2.1".to_string()]));
    assert_eq!(ttls, [30], "capped by `cache 30` from the first answer");
    assert_eq!(stub.count(), 1);
    std::thread::sleep(Duration::from_millis(2100));
    let (_, ips, ttls) = a(&server, "WWW.Example.ORG.");
    assert_eq!(ips, ["192.0.2.1"]);
    assert!(ttls[0] <= 28, "the TTL counts down: {ttls:?}");
    assert_eq!(stub.count(), 1, "served from the cache, whatever the case");
    // negative caching from the SOA (min(TTL 60, MINIMUM 30) = 30)
    for _ in 0..3 {
        let m = udp(server.dns, "nx.example.org.", RecordType::A);
        assert_eq!(rcode_name(&m), "NXDOMAIN");
        assert_eq!(m.authorities.len(), 1, "the SOA comes along");
    }
    assert_eq!(stub.count(), 2);
    assert!(server.metric_sum("coredns_cache_hits_total", "type=\"denial\"") >= 2.0);
    assert!(server.metric_sum("coredns_cache_hits_total", "type=\"success\"") >= 1.0);
    // a different type is a different entry
    let m = udp(server.dns, "www.example.org.", RecordType::AAAA);
    assert_eq!(rcode_name(&m), "NOERROR");
    assert_eq!(stub.count(), 3);
}

#[test]
fn identical_concurrent_misses_share_one_upstream_query() {
    let stub = Stub::start();
    stub.set(Mode::Slow(Duration::from_millis(400)));
    let server = Server::start(
        &temp_dir("fwd-coalesce"),
        &corefile(&format!(". {}", stub.addr), "cache"),
    );
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(3))).expect("timeout");
    for id in 0..100u16 {
        sock.send_to(
            &query(id, "popular.example.org.", RecordType::A, Some(1232)),
            server.dns,
        )
        .expect("send");
    }
    let mut ids = std::collections::HashSet::new();
    let mut buf = vec![0u8; 2048];
    while ids.len() < 100 {
        let Ok(n) = sock.recv(&mut buf) else { break };
        let m = Message::from_vec(&buf[..n]).expect("reply");
        assert_eq!(m.answers.len(), 1);
        ids.insert(m.metadata.id);
    }
    assert_eq!(ids.len(), 100, "every client answered under its own ID");
    assert_eq!(stub.count(), 1, "one upstream query for 100 identical misses");
}

/// An address that accepts UDP but never answers.
fn black_hole() -> (UdpSocket, SocketAddr) {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let a = s.local_addr().expect("addr");
    (s, a)
}

/// The names a black hole was asked since the last call (health checks,
/// which ask for the root, left out).
fn asked(hole: &UdpSocket) -> Vec<String> {
    hole.set_nonblocking(true).expect("nonblocking");
    let mut buf = [0u8; 512];
    let mut names = Vec::new();
    while let Ok(n) = hole.recv(&mut buf) {
        let queries = Message::from_vec(&buf[..n]).map(|m| m.queries).unwrap_or_default();
        names.extend(queries.iter().map(|q| q.name().to_string()).filter(|n| n != "."));
    }
    names
}

#[test]
fn a_dead_upstream_costs_one_read_timeout_then_the_next_answers() {
    let stub = Stub::start();
    let (hole, dead) = black_hole();
    let opts = "{\n        policy sequential\n        read_timeout 500ms\n        max_fails 1\n        health_check 200ms\n    }";
    let server = Server::start(
        &temp_dir("fwd-dead"),
        &corefile(&format!(". {dead} {} {opts}", stub.addr), ""),
    );
    let started = Instant::now();
    let (rcode, ips, _) = a(&server, "one.example.org.");
    assert_eq!((rcode.as_str(), ips.len()), ("NOERROR", 1));
    let first = started.elapsed();
    assert!(
        first >= Duration::from_millis(450),
        "the dead one's read timeout: {first:?}"
    );
    assert!(asked(&hole).contains(&"one.example.org.".to_string()), "asked first");
    // now marked down (max_fails 1): the next query goes straight to the live one
    let (rcode, _, _) = a(&server, "two.example.org.");
    assert_eq!(rcode, "NOERROR");
    let dead_asked = asked(&hole);
    assert!(!dead_asked.contains(&"two.example.org.".to_string()), "{dead_asked:?}");
    assert!(server.log_contains("marked down"));
    // health checks keep failing against the black hole and are counted
    std::thread::sleep(Duration::from_millis(1500));
    let failures = server.metric(&format!(
        "coredns_proxy_healthcheck_failures_total{{proxy_name=\"forward\",to=\"{dead}\"}}"
    ));
    assert!(failures >= 1.0, "{failures}");
}

#[test]
fn no_live_upstream_means_servfail_within_the_read_timeout() {
    let (hole, dead) = black_hole();
    let server = Server::start(
        &temp_dir("fwd-servfail"),
        &corefile(
            &format!(". {dead} {{\n        read_timeout 300ms\n        max_connect_attempts 1\n    }}"),
            "",
        ),
    );
    let started = Instant::now();
    let m = udp(server.dns, "x.example.org.", RecordType::A);
    assert_eq!(rcode_name(&m), "SERVFAIL");
    // the client's own 5 s wait bounds the reply; the server waited once
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert!(asked(&hole).contains(&"x.example.org.".to_string()));
}

#[test]
fn max_concurrent_refuses_the_excess() {
    let stub = Stub::start();
    stub.set(Mode::Slow(Duration::from_millis(500)));
    let server = Server::start(
        &temp_dir("fwd-maxconc"),
        &corefile(&format!(". {} {{\n        max_concurrent 2\n    }}", stub.addr), ""),
    );
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    for i in 0..6u16 {
        let name = format!("n{i}.example.org.");
        sock.send_to(&query(i, &name, RecordType::A, None), server.dns)
            .expect("send");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rcodes = Vec::new();
    let mut buf = vec![0u8; 2048];
    while rcodes.len() < 6 {
        let Ok(n) = sock.recv(&mut buf) else { break };
        rcodes.push(rcode_name(&Message::from_vec(&buf[..n]).expect("reply")));
    }
    let refused = rcodes.iter().filter(|r| *r == "REFUSED").count();
    let answered = rcodes.iter().filter(|r| *r == "NOERROR").count();
    assert_eq!((answered, refused), (2, 4), "{rcodes:?}");
    assert_eq!(server.metric("coredns_forward_max_concurrent_rejects_total"), 4.0);
}

#[test]
fn a_large_answer_truncates_over_udp_and_comes_whole_over_tcp() {
    let stub = Stub::start();
    let server = Server::start(&temp_dir("fwd-big"), &corefile(&format!(". {}", stub.addr), ""));
    let m = udp(server.dns, "big.example.org.", RecordType::TXT);
    assert!(m.metadata.truncation, "TC reaches an EDNS client");
    let no_edns = udp_raw(server.dns, &query(9, "big.example.org.", RecordType::TXT, None)).expect("reply");
    let no_edns = Message::from_vec(&no_edns).expect("decode");
    assert!(no_edns.metadata.truncation, "and a client without EDNS (coredns#4183)");
    assert!(no_edns.to_vec().map_or(0, |b| b.len()) <= 512);
    let whole = tcp(server.dns, "big.example.org.", RecordType::TXT);
    assert!(!whole.metadata.truncation);
    assert_eq!(whole.answers.len(), 20, "the TCP retry gets every record");
}

#[test]
fn forged_and_misdirected_replies_are_ignored() {
    let stub = Stub::start();
    stub.set(Mode::Forged);
    let server = Server::start(&temp_dir("fwd-forged"), &corefile(&format!(". {}", stub.addr), ""));
    let (rcode, ips, _) = a(&server, "bank.example.org.");
    assert_eq!((rcode.as_str(), ips), ("NOERROR", vec!["192.0.2.1".to_string()]));
}

#[test]
fn upstream_servfail_truncation_and_a_cut_tcp_answer() {
    let stub = Stub::start();
    // read_timeout longer than a client waits (common::REPLY): the cut
    // answer's SERVFAIL can only come from noticing the close.
    let server = Server::start(
        &temp_dir("fwd-faults"),
        &corefile(&format!(". {} {{\n        read_timeout 120s\n    }}", stub.addr), ""),
    );
    stub.set(Mode::ServFail);
    assert_eq!(a(&server, "sf.example.org.").0, "SERVFAIL");
    stub.set(Mode::Truncate);
    let m = udp(server.dns, "tc.example.org.", RecordType::A);
    assert!(m.metadata.truncation, "the upstream's TC is kept for the client");
    let m = tcp(server.dns, "tc.example.org.", RecordType::A);
    assert_eq!(m.answers.len(), 1, "a TCP client makes a TCP upstream query");
    stub.set(Mode::CloseMidTcp);
    let m = tcp(server.dns, "cut.example.org.", RecordType::A);
    assert_eq!(rcode_name(&m), "SERVFAIL");
    stub.set(Mode::Answer);
    assert_eq!(a(&server, "after.example.org.").0, "NOERROR");
}

#[test]
fn serve_stale_answers_while_the_upstream_is_silent() {
    let stub = Stub::start();
    stub.ttl.store(1, std::sync::atomic::Ordering::Relaxed);
    let extra = "cache {\n        success 100 1 1\n        serve_stale 1h\n    }";
    let server = Server::start(
        &temp_dir("fwd-stale"),
        &corefile(
            &format!(". {} {{\n        read_timeout 300ms\n    }}", stub.addr),
            extra,
        ),
    );
    assert_eq!(a(&server, "s.example.org.").0, "NOERROR");
    stub.set(Mode::Silent);
    std::thread::sleep(Duration::from_millis(1500));
    let (rcode, ips, ttls) = a(&server, "s.example.org.");
    assert_eq!(
        (rcode.as_str(), ips, ttls),
        ("NOERROR", vec!["192.0.2.1".to_string()], vec![0])
    );
    assert!(server.metric_sum("coredns_cache_served_stale_total", "") >= 1.0);
}

/// A 100 s entry at 99%, refreshed on its second hit: the hit after a
/// pause of over a second (a lower bound) refreshes it, and it stays live for as long as a slow machine
/// could take. The upstream's new TTL marks the refreshed entry.
#[test]
fn prefetch_refreshes_a_popular_entry_before_it_expires() {
    let stub = Stub::start();
    stub.ttl.store(100, std::sync::atomic::Ordering::Relaxed);
    let extra = "cache {\n        prefetch 2 10m 99%\n    }";
    let server = Server::start(&temp_dir("fwd-prefetch"), &corefile(&format!(". {}", stub.addr), extra));
    a(&server, "hot.example.org.");
    // the first hit: one hit, under the count of 2, whenever it comes
    assert!(a(&server, "hot.example.org.").2.iter().all(|t| *t <= 100));
    stub.ttl.store(300, std::sync::atomic::Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(1200));
    assert!(
        a(&server, "hot.example.org.").2.iter().all(|t| *t <= 100),
        "from the cache"
    );
    let started = Instant::now();
    while stub.count() < 2 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(stub.count(), 2, "one prefetch");
    assert_eq!(server.metric_sum("coredns_cache_prefetch_total", ""), 1.0);
    let refreshed = || a(&server, "hot.example.org.").2.iter().all(|t| *t > 100);
    let started = Instant::now();
    while !refreshed() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(refreshed(), "the refreshed entry is served");
    assert_eq!(stub.count(), 2, "served from the cache");
}

#[test]
fn except_and_stub_domains_route_by_longest_zone() {
    let main = Stub::start();
    let consul = Stub::start();
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    forward . {} {{\n        except internal.example.org\n    }}\n}}\nconsul.local:0 {{\n    bind 127.0.0.1\n    forward . {}\n}}\n",
        main.addr, consul.addr
    );
    let server = Server::start(&temp_dir("fwd-stub"), &text);
    assert_eq!(a(&server, "www.example.org.").0, "NOERROR");
    assert_eq!((main.count(), consul.count()), (1, 0));
    assert_eq!(a(&server, "db.service.consul.local.").0, "NOERROR");
    assert_eq!((main.count(), consul.count()), (1, 1));
    assert_eq!(
        a(&server, "x.internal.example.org.").0,
        "SERVFAIL",
        "except: no forward takes it, the chain ends (CoreDNS: no next plugin found)"
    );
    assert_eq!(main.count(), 1);
}

/// An ExternalName Service whose target is outside the cluster: the CNAME,
/// then the target's records looked up through the block's `forward` and
/// `cache` (as CoreDNS does), so stub resolvers get addresses; the CNAME
/// alone while the upstream fails; the CNAME alone for a CNAME question.
#[test]
fn external_name_outside_the_cluster_is_followed_through_forward_and_cache() {
    let stub = Stub::start();
    let dir = temp_dir("fwd-extname");
    let demo = common::demo_cluster();
    let server = Server::start(
        &dir,
        &format!(
            ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    \
             kubernetes cluster.local {{\n        snapshot {}\n    }}\n    forward . {}\n    cache 30 {{\n        servfail 0\n    }}\n}}\n",
            demo.display(),
            stub.addr
        ),
    );
    let name = "payments.shop.svc.cluster.local.";
    let records = |m: &Message| -> Vec<String> { m.answers.iter().map(|r| format!("{} {}", r.name, r.data)).collect() };
    let cname = format!("{name} payments.example.com.");
    stub.set(Mode::ServFail);
    let failed = udp(server.dns, name, RecordType::A);
    assert_eq!(
        (rcode_name(&failed), records(&failed)),
        ("NOERROR".to_string(), vec![cname.clone()])
    );
    stub.set(Mode::Answer);
    let before = stub.count();
    let replies = [
        udp(server.dns, name, RecordType::A),
        tcp(server.dns, name, RecordType::A),
    ];
    for (i, m) in replies.iter().enumerate() {
        assert_eq!(rcode_name(m), "NOERROR");
        assert!(m.metadata.authoritative, "AA: the cluster zone answers");
        assert_eq!(m.queries[0].name().to_string(), name, "the client's question is echoed");
        assert_eq!(
            records(m),
            [cname.clone(), "payments.example.com. 192.0.2.1".to_string()],
            "reply {i}"
        );
    }
    assert_eq!(stub.count(), before + 1, "the second answer came from the cache");
    // the first reply was put together by the forwarding task, the second
    // (a cache hit) on the worker: one settle step, so the same message
    let shape = |m: &Message| {
        let h = &m.metadata;
        let flags = (
            h.response_code,
            h.authoritative,
            h.truncation,
            h.recursion_available,
            h.authentic_data,
        );
        let section = |rs: &[hickory_proto::rr::Record]| -> Vec<String> {
            rs.iter()
                .map(|r| format!("{} {} {}", r.name, r.record_type(), r.data))
                .collect()
        };
        (
            flags,
            section(&m.answers),
            section(&m.authorities),
            section(&m.additionals),
        )
    };
    assert_eq!(shape(&replies[0]), shape(&replies[1]));
    let alone = udp(server.dns, name, RecordType::CNAME);
    assert_eq!(records(&alone), [cname]);
    assert_eq!(stub.count(), before + 1, "a CNAME question is not followed");
    // inside the zone the chase is unchanged: docs -> web.shop
    let docs = udp(server.dns, "docs.shop.svc.cluster.local.", RecordType::A);
    assert_eq!(docs.answers.len(), 2, "{docs:?}");
    assert_eq!(stub.count(), before + 1);
}

/// The outside target is looked up through the plugins of the block that
/// serves it: here `hosts` answers at once, with no upstream query.
#[test]
fn external_name_outside_target_answered_by_hosts_needs_no_upstream() {
    let stub = Stub::start();
    let dir = temp_dir("fwd-extname-hosts");
    let server = Server::start(
        &dir,
        &format!(
            ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    \
             hosts {{\n        198.51.100.7 payments.example.com\n        fallthrough\n    }}\n    \
             kubernetes cluster.local {{\n        snapshot {}\n    }}\n    forward . {}\n}}\n",
            common::demo_cluster().display(),
            stub.addr
        ),
    );
    let m = udp(server.dns, "payments.shop.svc.cluster.local.", RecordType::A);
    let data: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
    assert_eq!(data, ["payments.example.com.", "198.51.100.7"]);
    assert_eq!(stub.count(), 0);
}

#[test]
fn serve_stale_response_ttl_and_failure_recheck() {
    let stub = Stub::start();
    stub.ttl.store(1, std::sync::atomic::Ordering::Relaxed);
    let extra = "cache {\n        success 100 1 1\n        serve_stale 1h immediate 30s 1m\n    }";
    let upstream = format!(". {} {{\n        read_timeout 300ms\n    }}", stub.addr);
    let server = Server::start(&temp_dir("fwd-stale-ttl"), &corefile(&upstream, extra));
    assert_eq!(a(&server, "r.example.org.").0, "NOERROR");
    stub.set(Mode::Silent);
    std::thread::sleep(Duration::from_millis(1500));
    let asked = || {
        let seen = stub.seen.lock().map(|s| s.clone()).unwrap_or_default();
        seen.iter()
            .filter(|m| m.queries[0].name().to_ascii() == "r.example.org.")
            .count()
    };
    // stale: served with the response TTL, and one refresh goes upstream
    assert_eq!(
        a(&server, "r.example.org."),
        ("NOERROR".into(), vec!["192.0.2.1".into()], vec![30])
    );
    let started = Instant::now();
    while asked() < 2 && started.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1200)); // the refresh has failed
    let after_failure = asked();
    assert!(after_failure >= 2, "{after_failure}");
    for _ in 0..3 {
        assert_eq!(a(&server, "r.example.org.").2, [30]);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        asked(),
        after_failure,
        "within the recheck period nothing more is asked"
    );
    // the verify timeout and prefer_positive load, and `check` prints them
    let conf = temp_dir("fwd-stale-check").join("Corefile");
    let text = ".:53 {\n    cache {\n        serve_stale 1h verify 100ms\n        serve_stale_policy prefer_positive\n    }\n}\n";
    std::fs::write(&conf, text).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(&conf)
        .output()
        .expect("run clusterdns check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("serve_stale 1h verify 100ms 0s 0s"), "{stdout}");
    assert!(stdout.contains("serve_stale_policy prefer_positive"), "{stdout}");
    let text = ".:53 {\n    cache {\n        serve_stale_policy newest\n    }\n    cache example.org {\n        serve_stale_policy prefer_positive\n    }\n}\n";
    std::fs::write(&conf, text).expect("write");
    let (status, stderr) = common::check(&conf);
    assert!(!status.success());
    assert!(
        stderr.contains("Corefile:3:28: serve_stale_policy: 'newest' is not prefer_positive"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Corefile:6:9: serve_stale_policy requires serve_stale"),
        "{stderr}"
    );
}
