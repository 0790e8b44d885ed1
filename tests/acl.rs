//! `acl` end to end: the real binary in a private network namespace whose
//! loopback holds the server's address and several client addresses, so a
//! client can ask from 10.1.2.3 (the issue's blocked address) or from
//! another one, over UDP and TCP, with and without EDNS.
//!
//! Each test re-runs this test binary under `unshare -n` with one ignored
//! `ns_*` test selected; that one sets the addresses up and does the work.
//! Covered: the issue's Corefile (cluster, template, hosts and forwarded
//! names, each before and after an allowed client primed the memo, the
//! cache, the cache-hit replay and the direct writer), concurrent identical
//! queries at a slow upstream (coalescing), EDE 15/17, drop, and the three
//! orders CoreDNS fixed in 2026 (rewrite before acl, acl before cache,
//! autopath's names judged), plus `local`, `any` and `chaos` before acl,
//! and CoreDNS's `coredns_acl_*` counters, replays included.

mod common;

use std::io::Write;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::process::Command;
use std::time::Duration;

use common::stub::{Mode, Stub};
use common::{demo_cluster, framed, query, rcode_name, read_reply, temp_dir, value, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption};
use hickory_proto::rr::{DNSClass, RecordType};

/// Set in the child run inside the namespace.
const INSIDE: &str = "CLUSTERDNS_ACL_NETNS";
const SERVER: &str = "10.0.0.53";
const DENIED: &str = "10.1.2.3";
const ALLOWED: &str = "10.7.7.7";
/// A Running pod of namespace `shop` in zones/cluster.yaml.
const POD: &str = "10.244.1.10";

/// Runs the ignored test `inner` of this binary in a new network namespace.
fn in_namespace(inner: &str) {
    let probe = Command::new("unshare").args(["-n", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "{inner}: needs root and `unshare` (util-linux) and `ip` (iproute2)"
        );
        eprintln!("SKIP {inner}: cannot create a network namespace here (needs root)");
        return;
    }
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new("unshare")
        .arg("-n")
        .arg(exe)
        .args(["--exact", inner, "--ignored", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .output()
        .expect("run unshare");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{inner} in a namespace:\n{text}"
    );
}

/// Inside the namespace: loopback up with the server's and the clients'
/// addresses (IPv4 and IPv6).
fn addresses() {
    assert!(
        std::env::var_os(INSIDE).is_some(),
        "run through its wrapper test (it changes the network namespace's addresses)"
    );
    let mut cmds = vec!["link set lo up".to_string()];
    for a in [SERVER, DENIED, ALLOWED, POD] {
        cmds.push(format!("addr add {a}/32 dev lo"));
    }
    for a in ["fd00::53", "fd00::3", "fd00::7"] {
        cmds.push(format!("-6 addr add {a}/128 dev lo nodad"));
    }
    for c in cmds {
        let ok = Command::new("ip").args(c.split(' ')).status();
        assert!(ok.is_ok_and(|s| s.success()), "ip {c}");
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Udp,
    Tcp,
}

/// One query for `name`/`qtype` from address `from` to `server` port 53;
/// `None` when nothing comes back within 2 s.
fn ask(from: &str, server: &str, name: &str, qtype: RecordType, via: Via, edns: bool) -> Option<Message> {
    let to = SocketAddr::new(server.parse().expect("server"), 53);
    let from = SocketAddr::new(from.parse::<IpAddr>().expect("source"), 0);
    let q = query(0x5151, name, qtype, edns.then_some(1232));
    match via {
        Via::Udp => {
            let sock = UdpSocket::bind(from).expect("bind source");
            sock.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
            sock.send_to(&q, to).expect("send");
            let mut buf = [0u8; 4096];
            let n = sock.recv(&mut buf).ok()?;
            Some(Message::from_vec(&buf[..n]).expect("decodable reply"))
        }
        Via::Tcp => {
            let sock =
                socket2::Socket::new(socket2::Domain::for_address(to), socket2::Type::STREAM, None).expect("socket");
            sock.bind(&from.into()).expect("bind source");
            sock.connect_timeout(&to.into(), Duration::from_secs(2))
                .expect("connect");
            let mut s: std::net::TcpStream = sock.into();
            s.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
            s.write_all(&framed(&q)).expect("write");
            read_reply(&mut s)
        }
    }
}

/// A query of class CH (`chaos`).
fn ask_chaos(from: &str, name: &str) -> Option<Message> {
    let mut m = Message::from_vec(&query(0x5252, name, RecordType::TXT, None)).expect("query");
    m.queries[0].set_query_class(DNSClass::CH);
    let sock = UdpSocket::bind((from.parse::<IpAddr>().expect("source"), 0)).expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    sock.send_to(&m.to_vec().expect("encode"), (SERVER, 53)).expect("send");
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).ok()?;
    Message::from_vec(&buf[..n]).ok()
}

/// The reply's extended DNS error (RFC 8914): code and extra text.
fn ede(m: &Message) -> Option<(u16, String)> {
    match m.edns.as_ref()?.options().get(EdnsCode::Unknown(15))? {
        EdnsOption::Unknown(_, data) if data.len() >= 2 => Some((
            u16::from_be_bytes([data[0], data[1]]),
            String::from_utf8_lossy(&data[2..]).into_owned(),
        )),
        _ => None,
    }
}

/// Asserts a policy refusal: `rcode` and, to an EDNS query only, `code`.
fn assert_denied(from: &str, name: &str, qtype: RecordType, via: Via, rcode: &str, code: u16) {
    for edns in [true, false] {
        let m = ask(from, SERVER, name, qtype, via, edns).unwrap_or_else(|| panic!("{name} {via:?}: a reply"));
        let what = format!("{name} {qtype} from {from} {via:?} edns {edns}");
        assert_eq!((rcode_name(&m).as_str(), m.answers.len()), (rcode, 0), "{what}");
        if edns {
            assert_eq!(ede(&m), Some((code, String::new())), "{what}: EDE");
        } else {
            assert!(m.edns.is_none(), "{what}: no OPT record to a client without EDNS");
        }
    }
}

/// Asserts an answer with records, asked `times` times each with and without EDNS.
fn assert_answered(from: &str, name: &str, via: Via, times: usize) {
    for i in 0..times * 2 {
        let m = ask(from, SERVER, name, RecordType::A, via, i % 2 == 0).expect("a reply");
        assert_eq!(rcode_name(&m), "NOERROR", "{name} from {from} {via:?}");
        assert!(
            !m.answers.is_empty() && ede(&m).is_none(),
            "{name} from {from} {via:?}: {m:?}"
        );
    }
}

fn start(tag: &str, body: &str) -> (Server, std::path::PathBuf) {
    let dir = temp_dir(tag);
    let text = format!(
        ".:53 {{\n    bind {SERVER} fd00::53\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n{body}\n    kubernetes cluster.local {{\n        snapshot {}\n        pods verified\n    }}\n}}\n",
        demo_cluster().display()
    );
    (Server::start(&dir, &text), dir)
}

/// The issue's Corefile, with a template, hosts, a cache and the stub upstream.
fn issue_corefile(stub: &Stub) -> String {
    format!(
        "    acl cluster.local example.com {{\n        block net 10.1.2.3/32\n    }}\n    acl secret.shop.svc.cluster.local {{\n        block\n    }}\n    hosts {{\n        192.0.2.10 db.example.com\n        fallthrough\n    }}\n    template IN A tmpl.example.com {{\n        answer \"{{{{ .Name }}}} 60 IN A 192.0.2.20\"\n    }}\n    cache 30\n    forward . {}",
        stub.addr
    )
}

#[test]
fn the_issues_corefile_refuses_10_1_2_3_only_under_its_zones_before_and_after_priming() {
    in_namespace("ns_issue_corefile");
}

#[test]
#[ignore = "run in a network namespace by its wrapper test"]
fn ns_issue_corefile() {
    addresses();
    let stub = Stub::start();
    let (_server, _dir) = start("acl-issue", &issue_corefile(&stub));
    for via in [Via::Udp, Via::Tcp] {
        let forwarded = format!("fwd-{via:?}.example.com.").to_lowercase();
        let names = [
            "web.shop.svc.cluster.local.", // cluster, direct writer and memo
            "db.example.com.",             // hosts
            "tmpl.example.com.",           // template
            forwarded.as_str(),            // forward, cache, cache-hit replay
        ];
        for name in names {
            assert_denied(DENIED, name, RecordType::A, via, "REFUSED", 15);
            assert_answered(ALLOWED, name, via, 3);
            assert_denied(DENIED, name, RecordType::A, via, "REFUSED", 15);
            assert_answered(ALLOWED, name, via, 1);
        }
        let outside = format!("out-{via:?}.example.org.").to_lowercase();
        assert_answered(DENIED, &outside, via, 1);
        assert_answered(ALLOWED, &outside, via, 2);
        assert_answered(DENIED, &outside, via, 2);
        assert_denied(
            ALLOWED,
            "secret.shop.svc.cluster.local.",
            RecordType::A,
            via,
            "REFUSED",
            15,
        );
    }
}

#[test]
fn coalesced_upstream_queries_reach_only_the_allowed_clients() {
    in_namespace("ns_coalesced");
}

#[test]
#[ignore = "run in a network namespace by its wrapper test"]
fn ns_coalesced() {
    addresses();
    let stub = Stub::start();
    let (_server, _dir) = start("acl-flight", &issue_corefile(&stub));
    stub.set(Mode::Slow(Duration::from_millis(400)));
    let before = stub.count();
    let asks: Vec<_> = [ALLOWED, DENIED, ALLOWED, DENIED, ALLOWED, DENIED]
        .into_iter()
        .enumerate()
        .map(|(i, from)| {
            let via = if i < 4 { Via::Udp } else { Via::Tcp };
            std::thread::spawn(move || (from, ask(from, SERVER, "slow.example.com.", RecordType::A, via, true)))
        })
        .collect();
    for t in asks {
        let (from, m) = t.join().expect("asker");
        let m = m.expect("a reply within 2 s");
        let got = (rcode_name(&m), m.answers.len(), ede(&m).map(|e| e.0));
        let want = if from == DENIED {
            ("REFUSED".into(), 0, Some(15))
        } else {
            ("NOERROR".into(), 1, None)
        };
        assert_eq!(got, want, "from {from}");
    }
    assert!(stub.count() > before, "the allowed clients' question went upstream");
    // and the cached answer afterwards
    assert_denied(DENIED, "slow.example.com.", RecordType::A, Via::Udp, "REFUSED", 15);
}

#[test]
fn filter_drop_ipv6_and_the_plugins_before_acl() {
    in_namespace("ns_filter_drop");
}

#[test]
#[ignore = "run in a network namespace by its wrapper test"]
fn ns_filter_drop() {
    addresses();
    let stub = Stub::start();
    let body = format!(
        "    local\n    any\n    chaos clusterdns\n    acl {{\n        filter type AAAA net 10.1.2.3\n        drop net 10.1.2.3 fd00::3\n        block net 10.7.7.0/24 type TXT\n    }}\n    forward . {}",
        stub.addr
    );
    let (_server, _dir) = start("acl-drop", &body);
    let name = "web.shop.svc.cluster.local.";
    for via in [Via::Udp, Via::Tcp] {
        assert_answered(ALLOWED, name, via, 2);
        assert_denied(DENIED, name, RecordType::AAAA, via, "NOERROR", 17);
        assert!(
            ask(DENIED, SERVER, name, RecordType::A, via, true).is_none(),
            "drop: no reply"
        );
        assert!(
            ask("fd00::3", "fd00::53", name, RecordType::A, via, true).is_none(),
            "IPv6 drop"
        );
        let v6 = ask("fd00::7", "fd00::53", name, RecordType::A, via, true).expect("IPv6 allowed");
        assert_eq!((rcode_name(&v6).as_str(), v6.answers.len()), ("NOERROR", 1));
        assert_denied(ALLOWED, name, RecordType::TXT, via, "REFUSED", 15);
        // `local` and `any` come before `acl` in CoreDNS's order
        let local = ask(DENIED, SERVER, "localhost.", RecordType::A, via, true).expect("local");
        assert_eq!(local.answers.len(), 1, "localhost from a dropped client");
        let any = ask(DENIED, SERVER, name, RecordType::ANY, via, true).expect("any");
        assert_eq!(any.answers.first().map(|r| r.record_type()), Some(RecordType::HINFO));
    }
    let chaos = ask_chaos(DENIED, "version.bind.").expect("chaos before acl");
    assert_eq!(chaos.answers.len(), 1);
}

#[test]
fn rewrite_runs_before_acl_so_the_rewritten_name_is_judged() {
    in_namespace("ns_rewrite_first");
}

#[test]
#[ignore = "run in a network namespace by its wrapper test"]
fn ns_rewrite_first() {
    addresses();
    let body = "    acl secret.test {\n        block net 10.1.2.3\n    }\n    rewrite name exact open.test. secret.test.\n    hosts {\n        192.0.2.30 secret.test open.test\n    }";
    let (_server, _dir) = start("acl-rewrite", body);
    for via in [Via::Udp, Via::Tcp] {
        assert_answered(ALLOWED, "open.test.", via, 2);
        assert_denied(DENIED, "open.test.", RecordType::A, via, "REFUSED", 15);
        assert_denied(DENIED, "secret.test.", RecordType::A, via, "REFUSED", 15);
    }
}

#[test]
fn autopath_search_names_are_judged_by_acl() {
    in_namespace("ns_autopath_judged");
}

#[test]
#[ignore = "run in a network namespace by its wrapper test"]
fn ns_autopath_judged() {
    addresses();
    let dir = temp_dir("acl-resolv");
    let resolv = dir.join("resolv.conf");
    std::fs::write(&resolv, "search public.example protected.example\n").expect("resolv.conf");
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        "192.0.2.123 secret.protected.example\n192.0.2.124 open.public.example\n",
    )
    .expect("hosts");
    // hosts answers SERVFAIL for a name it does not hold (as CoreDNS's hosts without
    // fallthrough), which ends a walk: a template answers NXDOMAIN for secret.public.example
    // so the walk goes on to secret.protected.example, the name the acl must judge
    let body = format!(
        "    acl protected.example {{\n        block\n    }}\n    autopath {}\n    template IN ANY public.example {{\n        match ^secret[.]public[.]example[.]$\n        rcode NXDOMAIN\n        fallthrough\n    }}\n    hosts {} public.example protected.example",
        resolv.display(),
        hosts.display()
    );
    let (_server, _dir) = start("acl-autopath", &body);
    for via in [Via::Udp, Via::Tcp] {
        // the pod's search walk reaches open.public.example: answered in one query
        let open = ask(POD, SERVER, "open.shop.svc.cluster.local.", RecordType::A, via, true).expect("reply");
        assert_eq!(
            (rcode_name(&open).as_str(), open.answers.len()),
            ("NOERROR", 2),
            "{open:?}"
        );
        // direct and through the walk, the protected name is refused
        assert_denied(POD, "secret.protected.example.", RecordType::A, via, "REFUSED", 15);
        assert_denied(POD, "secret.shop.svc.cluster.local.", RecordType::A, via, "REFUSED", 15);
    }
}

#[test]
fn acl_metrics_count_each_decision_for_the_client_that_caused_it() {
    in_namespace("ns_acl_metrics");
}

#[test]
#[ignore = "run in a network namespace by its wrapper test"]
fn ns_acl_metrics() {
    addresses();
    let stub = Stub::start();
    let body = format!(
        "    acl cluster.local shop.svc.cluster.local example.com {{\n        filter type AAAA net 10.1.2.3\n        drop type TXT net 10.1.2.3\n        block net 10.1.2.3\n    }}\n    cache 30\n    forward . {}",
        stub.addr
    );
    let (server, dir) = start("acl-metrics", &body);
    let (web, fwd) = ("web.shop.svc.cluster.local.", "fwd.example.com.");
    let asked = |from: &str, name: &str, qtype: RecordType| ask(from, SERVER, name, qtype, Via::Udp, true);
    // allowed: the full path once, then memo (cluster) and cache-hit (forward) replays
    for name in [web, fwd] {
        for _ in 0..3 {
            let m = asked(ALLOWED, name, RecordType::A).expect("allowed: a reply");
            assert_eq!((rcode_name(&m).as_str(), m.answers.len()), ("NOERROR", 1), "{name}");
        }
    }
    // denied, after the allowed client primed the memo and the cache
    for _ in 0..2 {
        let m = asked(DENIED, web, RecordType::A).expect("blocked: a reply");
        assert_eq!(rcode_name(&m), "REFUSED");
    }
    assert_eq!(
        rcode_name(&asked(DENIED, fwd, RecordType::A).expect("reply")),
        "REFUSED"
    );
    let filtered = asked(DENIED, web, RecordType::AAAA).expect("filtered: a reply");
    assert_eq!(
        (rcode_name(&filtered).as_str(), ede(&filtered).map(|e| e.0)),
        ("NOERROR", Some(17))
    );
    assert!(asked(DENIED, web, RecordType::TXT).is_none(), "dropped: no reply");
    // outside the acl's zones the blocked address passes it: allowed, twice (full path, replay)
    for _ in 0..2 {
        let m = asked(DENIED, "out.example.org.", RecordType::A).expect("reply");
        assert_eq!(rcode_name(&m), "NOERROR");
    }

    let text = server.metrics();
    if let Some(verdict) = common::promtool_check(&text, &dir.join("metrics.txt")) {
        assert_eq!(verdict, Ok(()), "promtool");
    }
    let labels = |zone: &str| format!("{{server=\"dns://10.0.0.53:53\",zone=\"{zone}\",view=\"\"}}");
    let want = [
        ("coredns_acl_blocked_requests_total", "shop.svc.cluster.local.", 2.0), // the longest zone
        ("coredns_acl_blocked_requests_total", "example.com.", 1.0),
        ("coredns_acl_blocked_requests_total", "cluster.local.", 0.0),
        ("coredns_acl_filtered_requests_total", "shop.svc.cluster.local.", 1.0),
        ("coredns_acl_dropped_requests_total", "shop.svc.cluster.local.", 1.0),
        ("coredns_acl_dropped_requests_total", "example.com.", 0.0),
    ];
    for (family, zone, n) in want {
        let series = format!("{family}{}", labels(zone));
        assert_eq!(value(&text, &series), n, "{series}\n{text}");
    }
    let allowed = "coredns_acl_allowed_requests_total{server=\"dns://10.0.0.53:53\",view=\"\"}";
    assert_eq!(
        value(&text, allowed),
        8.0,
        "3 + 3 from 10.7.7.7, 2 outside the zones\n{text}"
    );
    assert!(
        text.contains("coredns_plugin_enabled{server=\"dns://10.0.0.53:53\",zone=\".\",view=\"\",name=\"acl\"} 1"),
        "{text}"
    );
}
