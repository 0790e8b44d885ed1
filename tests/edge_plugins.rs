//! `bufsize`, `chaos`, `local`, `any`, `loadbalance` and `import` globs
//! end to end: the real binary, asked with dig, forwarding to the
//! in-process stub upstream.

mod common;

use std::net::UdpSocket;
use std::time::Duration;

use common::stub::Stub;
use common::{check, query, run, temp_dir, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;

/// A server block on 127.0.0.1 with `body`, forwarding to `stub`, with
/// `ready` and `prometheus` on free loopback ports.
fn corefile(stub: &Stub, body: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n{body}\n    forward . {}\n}}\n",
        stub.addr
    )
}

/// `dig @server ARGS...` (one try, short timeout), stdout.
fn dig(server: &Server, args: &[&str]) -> String {
    let port = server.port();
    let mut all = vec!["@127.0.0.1", "-p", &port, "+tries=1", "+time=2"];
    all.extend_from_slice(args);
    run("dig", &all)
}

#[test]
fn chaos_answers_ch_txt_about_the_server() {
    let dir = temp_dir("chaos");
    let stub = Stub::start();
    let server = Server::start(
        &dir,
        &corefile(&stub, "    chaos clusterdns-test ops@example.org dev@example.org"),
    );
    let short = |name: &str| dig(&server, &["+short", "CH", "TXT", name]);
    assert_eq!(short("version.bind").trim(), "\"clusterdns-test\"");
    assert_eq!(short("version.server").trim(), "\"clusterdns-test\"");
    let mut authors: Vec<_> = short("authors.bind").lines().map(str::to_string).collect();
    authors.sort();
    assert_eq!(authors, ["\"dev@example.org\"", "\"ops@example.org\""]);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    assert_eq!(short("hostname.bind").trim(), format!("\"{}\"", host.trim()));
    assert_eq!(short("id.server").trim(), format!("\"{}\"", host.trim()));
    let full = dig(&server, &["CH", "TXT", "version.bind"]);
    assert!(full.contains("0\tCH\tTXT\t\"clusterdns-test\""), "{full}");
    // Another CH name or type is not chaos's: it goes to `forward`, as in CoreDNS.
    assert_eq!(stub.count(), 0, "what chaos answers is not forwarded");
    assert!(dig(&server, &["CH", "TXT", "other.bind"]).contains("status: NOERROR"));
    assert!(dig(&server, &["CH", "A", "version.bind"]).contains("status: NOERROR"));
    assert_eq!(stub.count(), 2, "both CH questions forwarded");
    // IN TXT version.bind is an ordinary name: forwarded.
    assert!(dig(&server, &["IN", "TXT", "version.bind"]).contains("status: NOERROR"));
    assert_eq!(stub.count(), 3, "the IN question forwarded too");
}

#[test]
fn local_answers_loopback_names_and_never_forwards_them() {
    let dir = temp_dir("local");
    let stub = Stub::start();
    let server = Server::start(&dir, &corefile(&stub, "    local"));
    let short = |args: &[&str]| dig(&server, &[&["+short"], args].concat()).trim().to_string();
    assert_eq!(short(&["localhost", "A"]), "127.0.0.1");
    assert_eq!(short(&["localhost", "AAAA"]), "::1");
    assert_eq!(short(&["localhost", "NS"]), "localhost.");
    assert_eq!(short(&["app.localhost", "A"]), "127.0.0.1");
    assert_eq!(short(&["localhost.example.com", "AAAA"]), "::1");
    assert_eq!(short(&["-x", "127.0.0.1"]), "localhost.");
    let nx = dig(&server, &["-x", "127.0.0.5"]);
    assert!(
        nx.contains("status: NXDOMAIN") && nx.contains("root.localhost."),
        "{nx}"
    );
    let nodata = dig(&server, &["0.in-addr.arpa", "TXT"]);
    assert!(
        nodata.contains("status: NOERROR") && nodata.contains("ANSWER: 0"),
        "{nodata}"
    );
    assert!(short(&["255.in-addr.arpa", "SOA"]).starts_with("localhost. root.localhost. 1 0 0 0 604800"));
    assert_eq!(stub.count(), 0, "local names never reach the upstream");
    assert_eq!(short(&["www.example.org", "A"]), "192.0.2.1");
    assert_eq!(stub.count(), 1);
    // Repeated: each one counts (not replayed from the memo).
    assert_eq!(short(&["app.localhost", "A"]), "127.0.0.1");
    assert_eq!(server.metric("coredns_local_localhost_requests_total"), 3.0);
    let plugin = server.metric_sum("coredns_dns_responses_total", "plugin=\"local\"");
    assert_eq!(plugin, 10.0);
}

#[test]
fn local_without_the_prefix_form_forwards_localhost_dot_domain() {
    let dir = temp_dir("local-off");
    let stub = Stub::start();
    let body = "    local {\n        localhost_prefix off\n    }";
    let server = Server::start(&dir, &corefile(&stub, body));
    let short = |name: &str| dig(&server, &["+short", name, "A"]).trim().to_string();
    assert_eq!(short("localhost.example.com"), "192.0.2.1");
    assert_eq!(short("a.localhost"), "127.0.0.1");
    assert_eq!(stub.count(), 1);
}

/// 40 addresses for `many.test.`: about 700 bytes of answer.
fn many_hosts() -> String {
    let lines: Vec<String> = (1..=40).map(|i| format!("        10.0.0.{i} many.test")).collect();
    format!("    hosts {{\n{}\n    }}", lines.join("\n"))
}

#[test]
fn bufsize_caps_the_payload_a_client_advertises() {
    let dir = temp_dir("bufsize");
    let stub = Stub::start();
    let capped = Server::start(&dir, &corefile(&stub, &format!("    bufsize 512\n{}", many_hosts())));
    let dir2 = temp_dir("bufsize-none");
    let plain = Server::start(&dir2, &corefile(&stub, &many_hosts()));
    let ask = |s: &Server| dig(s, &["+ignore", "+bufsize=1232", "many.test", "A"]);
    let (small, whole) = (ask(&capped), ask(&plain));
    assert!(small.contains("flags: qr aa tc") || small.contains(" tc"), "{small}");
    assert!(whole.contains("ANSWER: 40"), "{whole}");
    // Without EDNS the limit is 512 either way; over TCP there is none.
    assert!(dig(&capped, &["+tcp", "many.test", "A"]).contains("ANSWER: 40"));
}

/// The EDNS payload size of the request `body`'s server forwards to a
/// bare UDP socket when a client asks with a payload of 4096.
fn forwarded_payload(tag: &str, body: &str) -> Option<u16> {
    let upstream = UdpSocket::bind("127.0.0.1:0").expect("bind");
    upstream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let dir = temp_dir(tag);
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n{body}\n    forward . {}\n}}\n",
        upstream.local_addr().expect("addr")
    );
    let server = Server::start(&dir, &text);
    let client = std::thread::spawn({
        let dns = server.dns;
        move || common::udp_raw(dns, &query(9, "up.example.", RecordType::A, Some(4096)))
    });
    let mut buf = [0u8; 1500];
    let (n, _) = upstream.recv_from(&mut buf).expect("the query reaches the upstream");
    let _ = client.join();
    Message::from_vec(&buf[..n])
        .expect("decodes")
        .edns
        .map(|e| e.max_payload())
}

#[test]
fn bufsize_lowers_the_payload_sent_upstream() {
    assert_eq!(forwarded_payload("bufsize-up", "    bufsize 1232"), Some(1232));
    assert_eq!(forwarded_payload("bufsize-up-512", "    bufsize 512"), Some(512));
    assert_eq!(forwarded_payload("bufsize-up-none", ""), Some(4096));
}

#[test]
fn import_globs_that_match_nothing_warn_and_missing_files_fail() {
    let dir = temp_dir("import");
    std::fs::create_dir_all(dir.join("custom")).expect("custom dir");
    let conf = dir.join("Corefile");
    let text =
        ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    import custom/*.override\n}\nimport custom/*.server\n";
    std::fs::write(&conf, text).expect("write");
    let (status, stderr) = check(&conf);
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("Corefile:4:12: No files matching import glob pattern: custom/*.override"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Corefile:6:8: No files matching import glob pattern: custom/*.server"),
        "{stderr}"
    );
    // An override file appears: it is imported into the block.
    std::fs::write(dir.join("custom/x.override"), "chaos v-imported\n").expect("write");
    let server = Server::start(&dir, text);
    assert_eq!(
        dig(&server, &["+short", "CH", "TXT", "version.bind"]).trim(),
        "\"v-imported\""
    );
    drop(server);
    // A named file that does not exist is an error with its position.
    let missing = ".:0 {\n    import custom/extra.conf\n}\n";
    std::fs::write(&conf, missing).expect("write");
    let (status, stderr) = check(&conf);
    assert_eq!(status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("Corefile:2:12: import 'custom/extra.conf'"), "{stderr}");
}

#[test]
fn any_answers_hinfo_and_without_it_an_any_question_is_forwarded() {
    let stub = Stub::start();
    let without = Server::start(&temp_dir("any-off"), &corefile(&stub, ""));
    let m = common::udp(without.dns, "x.example.org.", RecordType::ANY);
    assert_eq!(m.answers.len(), 0, "the stub has no ANY records: {m:?}");
    assert_eq!(stub.last().map(|q| q.queries[0].query_type()), Some(RecordType::ANY));
    assert_eq!(stub.count(), 1, "forwarded like any other type");
    drop(without);
    let with = Server::start(&temp_dir("any-on"), &corefile(&stub, "    any"));
    let out = dig(&with, &["ANY", "x.example.org"]);
    assert!(
        out.contains("8482\tIN\tHINFO\t\"ANY obsoleted\" \"See RFC 8482\""),
        "{out}"
    );
    assert_eq!(stub.count(), 1, "any answered it");
    assert!(dig(&with, &["A", "x.example.org"]).contains("192.0.2.1"));
    let conf = temp_dir("any-check").join("Corefile");
    std::fs::write(&conf, ".:53 {\n    any {\n        foo\n    }\n}\n").expect("write");
    let (status, stderr) = check(&conf);
    assert!(!status.success());
    assert!(stderr.contains("Corefile:3:9: any: takes no options block"), "{stderr}");
}

#[test]
fn loadbalance_prefer_puts_the_listed_networks_first() {
    let stub = Stub::start();
    let body = "    hosts {\n        10.0.0.1 lb.example.org\n        192.168.1.1 lb.example.org\n        \
                10.9.20.5 lb.example.org\n        172.16.0.1 lb.example.org\n        fallthrough\n    }\n    \
                loadbalance round_robin {\n        prefer 10.9.20.0/24 192.168.1.0/24\n    }";
    let server = Server::start(&temp_dir("lb-prefer"), &corefile(&stub, body));
    let mut tails = std::collections::HashSet::new();
    for _ in 0..20 {
        let m = common::udp(server.dns, "lb.example.org.", RecordType::A);
        let ips: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
        assert_eq!(ips[..2], ["10.9.20.5", "192.168.1.1"], "{ips:?}");
        tails.insert(ips[2..].to_vec());
    }
    assert_eq!(tails.len(), 2, "the others are still shuffled: {tails:?}");
    let conf = temp_dir("lb-check").join("Corefile");
    let text =
        ".:53 {\n    loadbalance weighted w.txt {\n        reload 0s\n    }\n}\n.:54 {\n    loadbalance {\n        prefer 10.0.0.0/33\n    }\n}\n";
    std::fs::write(&conf, text).expect("write");
    let (status, stderr) = check(&conf);
    assert!(!status.success());
    assert!(
        stderr.contains("Corefile:2:26: loadbalance: cannot open weight file"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Corefile:8:16: loadbalance: prefer: '10.0.0.0/33' is not a CIDR"),
        "{stderr}"
    );
}

/// The first address of each answer to `lb.example.org` A from `server`
/// (all three must be there).
fn first_address(server: &Server) -> String {
    let m = common::udp(server.dns, "lb.example.org.", RecordType::A);
    let mut ips: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
    let first = ips.first().cloned().unwrap_or_default();
    ips.sort();
    assert_eq!(
        ips,
        ["10.0.0.1", "10.0.0.2", "10.0.0.3"],
        "every address is in the answer"
    );
    first
}

#[test]
fn loadbalance_weighted_draws_the_first_address_by_weight_and_rereads_its_file() {
    let stub = Stub::start();
    let dir = temp_dir("lb-weighted");
    let weights = dir.join("weights");
    std::fs::write(&weights, "lb.example.org\n10.0.0.1 255\n10.0.0.2 1\n").expect("write");
    let body = "    hosts {\n        10.0.0.1 lb.example.org\n        10.0.0.2 lb.example.org\n        \
                10.0.0.3 lb.example.org\n        fallthrough\n    }\n    \
                loadbalance weighted weights {\n        reload 1s\n    }";
    let server = Server::start(&dir, &corefile(&stub, body));
    // 10.0.0.1 weighs 255 of 257: first in nearly every answer (40 draws
    // with fewer than 30 of it is a chance below 1e-20).
    let firsts: Vec<String> = (0..40).map(|_| first_address(&server)).collect();
    let heavy = firsts.iter().filter(|f| *f == "10.0.0.1").count();
    assert!(heavy >= 30, "10.0.0.1 first {heavy} times of 40: {firsts:?}");
    // The file changes: 10.0.0.3 becomes the heavy one once it is re-read
    // (every second); waited for in bounded steps.
    std::fs::write(&weights, "lb.example.org\n10.0.0.3 255\n").expect("rewrite");
    let mut in_a_row = 0;
    for _ in 0..200 {
        in_a_row = if first_address(&server) == "10.0.0.3" {
            in_a_row + 1
        } else {
            0
        };
        if in_a_row == 8 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(in_a_row, 8, "the re-read weights put 10.0.0.3 first");
}

/// `header` as dig sees it, over UDP and TCP: the response rules on a
/// forwarded answer (the stub sets RA), the query rules on what is echoed;
/// a truncated answer keeps TC (no rule names it).
#[test]
fn header_sets_and_clears_the_flags_dig_prints() {
    let dir = temp_dir("header");
    let stub = Stub::start();
    let rules = "    header {\n        response set aa\n        response clear ra\n        query clear rd\n    }";
    let server = Server::start(&dir, &corefile(&stub, rules));
    for transport in ["+notcp", "+tcp"] {
        let d = common::dig::dig_with("dig", &server, &[transport, "+recurse", "www.example.org", "A"]);
        assert_eq!(d.status, "NOERROR", "{}", d.text);
        assert_eq!(d.flags, "qr aa", "{}", d.text);
        assert_eq!(d.data(), ["192.0.2.1"], "{}", d.text);
    }
    let big = dig(&server, &["+ignore", "+noedns", "big.example.org", "TXT"]);
    assert!(big.contains("flags: qr aa tc;"), "{big}");
}

/// `erratic` as dig sees it: query 0 comes late (at least the delay; the
/// worker answered others meanwhile) and truncated, query 1 at once and
/// whole; `/ready` holds from erratic's third query on.
#[test]
fn erratic_replies_late_and_truncated_as_dig_sees() {
    let dir = temp_dir("erratic");
    let text = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    erratic {\n        delay 2 300ms\n        truncate 3\n    }\n}\n";
    let server = Server::spawn(&dir, text);
    let msec = |out: &str| -> u64 {
        let at = out.split("Query time: ").nth(1).unwrap_or_default();
        at.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    let first = dig(&server, &["+ignore", "+noedns", "example.org", "A"]);
    assert!(first.contains("flags: qr aa tc rd;"), "{first}");
    assert!(first.contains("example.org.\t\t0\tIN\tA\t192.0.2.53"), "{first}");
    // at least the delay, less a few ms of rounding in tokio's timer and dig's clock
    assert!(msec(&first) >= 290, "query 0 is delayed 300ms: {first}");
    let second = dig(&server, &["+tcp", "example.org", "AAAA"]);
    assert!(second.contains("flags: qr aa rd;"), "{second}");
    assert!(second.contains("2001:db8::53"), "{second}");
    dig(&server, &["example.org", "A"]);
    server.wait_ready(Duration::from_secs(20));
    dig(&server, &["example.org", "A"]);
    dig(&server, &["example.org", "A"]);
    server.wait_ready(Duration::from_secs(1)); // seen ready: ready for good
}
