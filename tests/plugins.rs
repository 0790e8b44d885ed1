//! `hosts`, `file`, `loop` and `reload` end to end; `hosts` as CoreDNS
//! answers (wildcards, CIDR zones, PTR, SERVFAIL, the fallthroughs).

mod common;

use std::time::{Duration, Instant};

use common::dig::dig_with;
use common::stub::Stub;
use common::{check, rcode_name, temp_dir, udp, Server};
use hickory_proto::rr::RecordType;

fn lines(server: &Server, name: &str, qtype: RecordType) -> (String, Vec<String>, usize, bool) {
    let m = udp(server.dns, name, qtype);
    (
        rcode_name(&m),
        m.answers.iter().map(|r| r.data.to_string()).collect(),
        m.authorities.len(),
        m.metadata.authoritative,
    )
}

#[test]
fn hosts_entries_and_their_reverse_with_fallthrough() {
    let dir = temp_dir("hosts");
    std::fs::write(
        dir.join("hosts"),
        "# comment\n192.0.2.10 db.corp.example db\n2001:db8::10 db.corp.example\n",
    )
    .expect("write");
    let text = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    hosts hosts corp.example in-addr.arpa {\n        192.0.2.11 inline.corp.example\n        ttl 60\n        reload 200ms\n    }\n}\n";
    let server = Server::start(&dir, text);
    let (rcode, ips, _, aa) = lines(&server, "db.corp.example.", RecordType::A);
    assert_eq!(
        (rcode.as_str(), ips, aa),
        ("NOERROR", vec!["192.0.2.10".to_string()], true)
    );
    assert_eq!(lines(&server, "db.corp.example.", RecordType::AAAA).1, ["2001:db8::10"]);
    assert_eq!(lines(&server, "inline.corp.example.", RecordType::A).1, ["192.0.2.11"]);
    assert_eq!(
        lines(&server, "10.2.0.192.in-addr.arpa.", RecordType::PTR).1,
        ["db.corp.example."]
    );
    // CoreDNS: no SOA to deny a name with, so SERVFAIL where no fallthrough applies
    assert_eq!(lines(&server, "nope.corp.example.", RecordType::A).0, "SERVFAIL");
    // the file is reloaded when it changes
    std::fs::write(dir.join("hosts"), "192.0.2.99 db.corp.example\n").expect("rewrite");
    let started = Instant::now();
    while lines(&server, "db.corp.example.", RecordType::A).1 != ["192.0.2.99"]
        && started.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(lines(&server, "db.corp.example.", RecordType::A).1, ["192.0.2.99"]);
}

/// A block with `hosts hosts ZONES { OPTIONS }` forwarding to `stub`.
fn hosts_server(tag: &str, stub: &Stub, zones: &str, options: &str) -> Server {
    let dir = temp_dir(tag);
    std::fs::write(
        dir.join("hosts"),
        "10.0.0.5 web.example.org\n192.0.2.7 *.apps.example.org\n10.0.0.6 a.apps.example.org\n\
         fd00::5 v6only.example.org\n10.0.0.8 outside.example.net\n",
    )
    .expect("write");
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    hosts hosts {zones} {{\n{options}\n    }}\n    forward . {}\n}}\n",
        stub.addr
    );
    Server::start(&dir, &text)
}

#[test]
fn hosts_answers_as_coredns_does_wildcards_cidr_zones_ptr_and_servfail() {
    let stub = Stub::start();
    let server = hosts_server(
        "hosts-cdns",
        &stub,
        "example.org 10.0.0.0/8",
        "        10.1.2.3 inline.example.org",
    );
    let a = |name: &str| lines(&server, name, RecordType::A);
    assert_eq!(a("web.example.org.").1, ["10.0.0.5"]);
    // `*.apps` answers one more label; an exact entry wins; not the apex, not two labels
    assert_eq!(a("x.apps.example.org.").1, ["192.0.2.7"]);
    assert_eq!(a("a.apps.example.org.").1, ["10.0.0.6"]);
    assert_eq!(a("deep.x.apps.example.org.").0, "SERVFAIL");
    assert_eq!(a("apps.example.org.").0, "SERVFAIL");
    // another type, or the other family, of a name in the data: NODATA
    assert_eq!(
        lines(&server, "web.example.org.", RecordType::TXT),
        ("NOERROR".into(), vec![], 0, true)
    );
    assert_eq!(a("v6only.example.org."), ("NOERROR".into(), vec![], 0, true));
    // the CIDR zone is 10.in-addr.arpa.: PTR of the file's and inline addresses
    let ptr = |name: &str| lines(&server, name, RecordType::PTR);
    assert_eq!(ptr("5.0.0.10.in-addr.arpa.").1, ["web.example.org."]);
    assert_eq!(ptr("3.2.1.10.in-addr.arpa.").1, ["inline.example.org."]);
    // a name outside the zones has no PTR; a wildcard has none either
    assert_eq!(stub.count(), 0);
    assert_eq!(ptr("8.0.0.10.in-addr.arpa.").0, "NOERROR");
    assert_eq!(ptr("7.2.0.192.in-addr.arpa.").0, "NOERROR");
    // an address without an entry goes on (to forward), fallthrough or not
    assert_eq!(ptr("9.9.9.10.in-addr.arpa.").0, "NOERROR");
    assert_eq!(
        stub.count(),
        3,
        "the three PTR questions without an entry were forwarded"
    );
    assert_eq!(a("other.example.net.").1, ["192.0.2.1"], "outside the zones: forwarded");
}

#[test]
fn hosts_fallthrough_unsupported_and_no_reverse_pass_questions_on() {
    let stub = Stub::start();
    let options = "        no_reverse\n        fallthrough\n        fallthrough_unsupported";
    let server = hosts_server("hosts-ftu", &stub, "example.org", options);
    assert_eq!(lines(&server, "web.example.org.", RecordType::A).1, ["10.0.0.5"]);
    assert_eq!(stub.count(), 0);
    let txt = udp(server.dns, "web.example.org.", RecordType::TXT);
    assert!(!txt.metadata.authoritative, "TXT went on to forward");
    assert_eq!(stub.count(), 1);
    assert_eq!(lines(&server, "missing.example.org.", RecordType::A).1, ["192.0.2.1"]);
    assert_eq!(lines(&server, "5.0.0.10.in-addr.arpa.", RecordType::PTR).0, "NOERROR");
    assert_eq!(stub.count(), 3, "no_reverse: the PTR question was forwarded");
    // `check` refuses fallthrough_unsupported alone, and inline lines after fallthrough
    let dir = temp_dir("hosts-ftu-check");
    let conf = dir.join("Corefile");
    std::fs::write(
        &conf,
        ".:53 {\n    hosts {\n        fallthrough_unsupported\n    }\n}\n",
    )
    .expect("write");
    let (status, stderr) = check(&conf);
    assert!(!status.success());
    assert!(
        stderr.contains("Corefile:3:9: hosts: fallthrough_unsupported requires fallthrough"),
        "{stderr}"
    );
    let late =
        ".:53 {\n    hosts {\n        fallthrough\n        10.0.0.1 a.example.org\n        ttl 70000\n    }\n}\n";
    std::fs::write(&conf, late).expect("write");
    let (status, stderr) = check(&conf);
    assert!(!status.success());
    assert!(
        stderr.contains("Corefile:4:9: hosts: an inline entry after fallthrough"),
        "{stderr}"
    );
    assert!(stderr.contains("Corefile:5:13: ttl: out of range 1..65535"), "{stderr}");
}

#[test]
fn a_zone_file_answers_authoritatively() {
    let dir = temp_dir("file");
    let zone = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("zones/example.db");
    let text = format!(
        "example.test:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file {} example.test\n}}\n",
        zone.display()
    );
    let server = Server::start(&dir, &text);
    let (rcode, ips, _, aa) = lines(&server, "www.example.test.", RecordType::A);
    assert_eq!(
        (rcode.as_str(), ips, aa),
        ("NOERROR", vec!["192.0.2.80".to_string()], true)
    );
    let (_, chain, _, _) = lines(&server, "web.example.test.", RecordType::A);
    assert_eq!(
        chain,
        ["www.example.test.", "192.0.2.80"],
        "CNAME followed inside the zone"
    );
    let (rcode, none, soa, _) = lines(&server, "www.example.test.", RecordType::TXT);
    assert_eq!(
        (rcode.as_str(), none.len(), soa),
        ("NOERROR", 0, 1),
        "NODATA with the SOA"
    );
    let (rcode, _, soa, _) = lines(&server, "missing.example.test.", RecordType::A);
    assert_eq!((rcode.as_str(), soa), ("NXDOMAIN", 1));
    let (rcode, _, _, _) = lines(&server, "_tcp.www.example.test.", RecordType::A);
    assert_eq!(rcode, "NOERROR", "an empty non-terminal exists");
    let (rcode, answers, ns, aa) = lines(&server, "host.sub.example.test.", RecordType::A);
    assert_eq!(
        (rcode.as_str(), answers.len(), ns, aa),
        ("NOERROR", 0, 1, false),
        "a referral"
    );
    assert_eq!(lines(&server, "example.test.", RecordType::SOA).1.len(), 1);
}

/// A zone with a wildcard, a delegation with glue and a DNAME, as dig and
/// kdig print the answers (RFC 4592, RFC 1034 4.3.2, RFC 6672).
const ZONE: &str = "$ORIGIN zone.test.\n$TTL 300\n@ IN SOA ns hostmaster 1 7200 3600 1209600 300\n  IN NS ns\nns IN A 192.0.2.1\n*.apps IN A 192.0.2.10\nsub IN NS ns.sub\nns.sub IN A 192.0.2.53\nold IN DNAME new\nweb.new IN A 192.0.2.80\nmail IN MX 10 ns\next IN CNAME www.example.net.\n";

#[test]
fn dig_and_kdig_see_wildcards_referrals_with_glue_and_dname() {
    let dir = temp_dir("zone-dig");
    std::fs::write(dir.join("zone.db"), ZONE).expect("write");
    let stub = Stub::start();
    let text = format!(
        "zone.test:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file zone.db\n}}\n.:0 {{\n    bind 127.0.0.1\n    forward . {}\n}}\n",
        stub.addr
    );
    let server = Server::start(&dir, &text);
    let apex_ns = vec!["zone.test. 300 IN NS ns.zone.test.".to_string()];
    for cmd in ["dig", "kdig"] {
        let wild = dig_with(cmd, &server, &["any-name.apps.zone.test.", "A"]);
        assert_eq!(wild.status, "NOERROR", "{}", wild.text);
        assert!(wild.aa(), "{}", wild.text);
        assert_eq!(
            wild.answers,
            ["any-name.apps.zone.test. 300 IN A 192.0.2.10"],
            "{}",
            wild.text
        );
        assert_eq!(wild.authority, apex_ns, "{}", wild.text);

        let referral = dig_with(cmd, &server, &["host.sub.zone.test.", "A"]);
        assert_eq!(referral.status, "NOERROR", "{}", referral.text);
        assert!(!referral.aa(), "a referral is not authoritative: {}", referral.text);
        assert!(referral.answers.is_empty(), "{}", referral.text);
        assert_eq!(
            referral.authority,
            ["sub.zone.test. 300 IN NS ns.sub.zone.test."],
            "{}",
            referral.text
        );
        assert_eq!(
            referral.additional,
            ["ns.sub.zone.test. 300 IN A 192.0.2.53"],
            "{}",
            referral.text
        );

        let dname = dig_with(cmd, &server, &["web.old.zone.test.", "A"]);
        assert_eq!(dname.status, "NOERROR", "{}", dname.text);
        let want = [
            "old.zone.test. 300 IN DNAME new.zone.test.",
            "web.old.zone.test. 300 IN CNAME web.new.zone.test.",
            "web.new.zone.test. 300 IN A 192.0.2.80",
        ];
        assert_eq!(
            dname.answers, want,
            "DNAME, its CNAME, the target's records: {}",
            dname.text
        );

        let mx = dig_with(cmd, &server, &["mail.zone.test.", "MX"]);
        assert_eq!(mx.additional, ["ns.zone.test. 300 IN A 192.0.2.1"], "{}", mx.text);
        // a CNAME leaving the zone: its target is asked of the server's own blocks (here forwarded)
        let ext = dig_with(cmd, &server, &["ext.zone.test.", "A"]);
        let want = [
            "ext.zone.test. 300 IN CNAME www.example.net.",
            "www.example.net. 60 IN A 192.0.2.1",
        ];
        assert_eq!(ext.answers, want, "{}", ext.text);
        let gone = dig_with(cmd, &server, &["a.b.apps.zone.test.", "A"]);
        assert_eq!(
            gone.answers.len(),
            1,
            "a wildcard covers deeper names too: {}",
            gone.text
        );
    }
}

#[test]
fn a_broken_zone_file_is_a_config_error_at_its_directive() {
    // CoreDNS refuses to start with a zone file that does not parse; so
    // do `check` and the server (a zone broken later keeps the last good one).
    let dir = temp_dir("file-broken");
    std::fs::write(
        dir.join("bad.db"),
        "$ORIGIN bad.test.\n@ IN SOA ns hostmaster ( 1 2 3\nwww IN A 999.1.1.1\n",
    )
    .expect("write");
    let conf = dir.join("Corefile");
    let text = "bad.test:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file bad.db\n}\n";
    std::fs::write(&conf, text).expect("write");
    let (status, stderr) = common::check(&conf);
    assert_eq!(status.code(), Some(64), "{stderr}");
    let want = format!(
        "{}:4:5: file: {} does not load",
        conf.display(),
        dir.join("bad.db").display()
    );
    assert!(stderr.contains(&want), "want '{want}' in:\n{stderr}");
}

#[test]
fn a_forwarding_loop_is_detected_and_the_cluster_zone_still_answers() {
    let dir = temp_dir("loop");
    let port = common::free_port();
    let text = format!(
        ".:{port} {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    hosts {{\n        192.0.2.7 local.example\n        fallthrough\n    }}\n    forward . 127.0.0.1:{port} {{\n        read_timeout 500ms\n    }}\n    loop\n}}\n"
    );
    let server = Server::start(&dir, &text);
    let started = Instant::now();
    while !server.log_contains("forwarding loop detected") && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        server.log_contains("forwarding loop detected"),
        "{:?}",
        server.log.lock().map(|l| l.clone())
    );
    assert_eq!(server.metric("clusterdns_loop_detected_total"), 1.0);
    assert!(server.is_running(), "unlike CoreDNS, no crash loop");
    assert_eq!(lines(&server, "local.example.", RecordType::A).1, ["192.0.2.7"]);
    let requests = || server.metric_sum("coredns_dns_requests_total", "");
    let before = requests();
    assert_eq!(lines(&server, "outside.example.", RecordType::A).0, "SERVFAIL");
    assert_eq!(
        requests() - before,
        1.0,
        "no longer forwarded into the loop (to itself)"
    );
}

#[test]
fn reload_switches_config_without_failing_a_query_and_survives_a_broken_file() {
    let dir = temp_dir("reload");
    let snapshot = common::demo_cluster();
    let conf = |marker: u8| {
        format!(
            ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    reload 2s 0s\n    hosts {{\n        192.0.2.{marker} marker.example\n        fallthrough\n    }}\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
            snapshot.display()
        )
    };
    let server = Server::start(&dir, &conf(1));
    let path = dir.join("Corefile");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (flag, dns) = (stop.clone(), server.dns);
    // Continuous queries on another thread: every one must be answered.
    let load = std::thread::spawn(move || {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(1))).expect("timeout");
        let (mut sent, mut failed) = (0u32, 0u32);
        let mut buf = vec![0u8; 1500];
        while !flag.load(std::sync::atomic::Ordering::Relaxed) && sent < 200_000 {
            let q = common::query(
                sent as u16,
                "kubernetes.default.svc.cluster.local.",
                RecordType::A,
                None,
            );
            sock.send_to(&q, dns).expect("send");
            sent += 1;
            match sock.recv(&mut buf) {
                Ok(n) if n > 3 && buf[3] & 0x0f == 0 => {}
                _ => failed += 1,
            }
        }
        (sent, failed)
    });
    for marker in 2..=11u8 {
        std::fs::write(&path, conf(marker)).expect("rewrite");
        let want = format!("192.0.2.{marker}");
        let started = Instant::now();
        while lines(&server, "marker.example.", RecordType::A).1 != [want.clone()]
            && started.elapsed() < Duration::from_secs(8)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            lines(&server, "marker.example.", RecordType::A).1,
            [want],
            "reload {marker}"
        );
    }
    std::fs::write(&path, ".:0 {\n    kubernetes {\n").expect("break");
    let started = Instant::now();
    while server.metric("coredns_reload_failed_total") < 1.0 && started.elapsed() < Duration::from_secs(8) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.metric("coredns_reload_failed_total"), 1.0);
    assert_eq!(
        lines(&server, "marker.example.", RecordType::A).1,
        ["192.0.2.11"],
        "the old config keeps serving"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (sent, failed) = load.join().expect("load thread");
    assert!(sent > 1000, "{sent}");
    assert_eq!(failed, 0, "{failed} of {sent} queries failed across 10 reloads");
}

/// One A query from `from` (a loopback address), the reply if any (1 s).
fn ask_from(
    from: &str,
    server: std::net::SocketAddr,
    name: &str,
    qtype: RecordType,
) -> Option<hickory_proto::op::Message> {
    let sock = std::net::UdpSocket::bind((from, 0)).expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(800)))
        .expect("timeout");
    sock.send_to(&common::query(7, name, qtype, Some(1232)), server)
        .expect("send");
    let mut buf = [0u8; 2048];
    let n = sock.recv(&mut buf).ok()?;
    hickory_proto::op::Message::from_vec(&buf[..n]).ok()
}

#[test]
fn acl_decides_by_client_and_type_and_any_gets_a_minimal_answer() {
    let dir = temp_dir("acl");
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    acl {{\n        drop net 127.0.0.2/32\n        block net 127.0.0.3\n        filter type TXT\n        allow net 127.0.0.0/8 ::1\n        block\n    }}\n    any\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
        common::demo_cluster().display()
    );
    let server = Server::start(&dir, &text);
    let name = "kubernetes.default.svc.cluster.local.";
    let allowed = ask_from("127.0.0.1", server.dns, name, RecordType::A).expect("reply");
    assert_eq!((rcode_name(&allowed).as_str(), allowed.answers.len()), ("NOERROR", 1));
    // the same question again from a blocked client: no memoized answer leaks
    let blocked = ask_from("127.0.0.3", server.dns, name, RecordType::A).expect("reply");
    assert_eq!((rcode_name(&blocked).as_str(), blocked.answers.len()), ("REFUSED", 0));
    assert!(
        ask_from("127.0.0.2", server.dns, name, RecordType::A).is_none(),
        "drop: no reply"
    );
    let filtered = ask_from("127.0.0.1", server.dns, name, RecordType::TXT).expect("reply");
    assert_eq!((rcode_name(&filtered).as_str(), filtered.answers.len()), ("NOERROR", 0));
    let any = ask_from("127.0.0.1", server.dns, name, RecordType::ANY).expect("reply");
    assert_eq!(any.answers.len(), 1, "RFC 8482: one record");
    assert_eq!(any.answers[0].record_type(), RecordType::HINFO);
    let axfr = ask_from("127.0.0.1", server.dns, "cluster.local.", RecordType::AXFR).expect("reply");
    assert_eq!(rcode_name(&axfr), "REFUSED", "zone transfers are never served");
}

/// `multisocket N` opens N UDP sockets on the port, each read by a worker
/// of its own; the kernel's table of UDP sockets (`/proc/net/udp`, the
/// server's own network namespace) lists them.
#[test]
fn multisocket_opens_that_many_udp_sockets() {
    let dir = temp_dir("multisocket");
    let text = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    multisocket 3\n    whoami\n}\n";
    let server = Server::start(&dir, text);
    let port: u16 = server.port().parse().expect("port");
    let table = std::fs::read_to_string("/proc/net/udp").expect("/proc/net/udp");
    let local = format!("0100007F:{port:04X}");
    let sockets = table
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(local.as_str()))
        .count();
    assert_eq!(sockets, 3, "UDP sockets on 127.0.0.1:{port}:\n{table}");
    assert_eq!(rcode_name(&udp(server.dns, "who.example.", RecordType::A)), "NOERROR");
}
