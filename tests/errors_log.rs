//! The log lines of `log` with a custom format and of the `errors` plugin
//! as the server writes them, read from its stdout. `log`: CoreDNS's
//! placeholders and the log plugin's `{/log/class}`/`{/log/type}`, with the
//! `class` filter on the reply's class. `errors`: every failed forwarded query logged in CoreDNS's format; with
//! `consolidate`, a burst of alike errors folded into count lines whose
//! counts add up to the failures; with `show_first`, the first error in
//! full; a stop logs the count of a period not yet over. The upstream never answers (a bound UDP socket nobody reads), so
//! every query fails with `i/o timeout` after forward's read timeout.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::{query, temp_dir, Server};
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;

fn server(tag: &str, errors: &str, hole: SocketAddr) -> Server {
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    {errors}\n    forward . {hole} {{\n        \
         read_timeout 300ms\n        max_fails 0\n        max_connect_attempts 1\n    }}\n}}\n"
    );
    Server::start(&temp_dir(tag), &text)
}

/// Asks `names` from one socket at once, then reads a reply for each (10 s at most).
fn ask_all(server: SocketAddr, names: &[String]) -> Vec<Message> {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    for (i, name) in names.iter().enumerate() {
        let id = u16::try_from(i).expect("fits");
        sock.send_to(&query(id, name, RecordType::A, None), server)
            .expect("send");
    }
    let mut buf = vec![0u8; 4096];
    let mut replies = Vec::new();
    while replies.len() < names.len() {
        let Ok(n) = sock.recv(&mut buf) else { break };
        replies.extend(Message::from_vec(&buf[..n]).ok());
    }
    replies
}

/// The server's `plugin/errors` lines so far.
fn error_lines(s: &Server) -> Vec<String> {
    let lines = s.log.lock().map(|l| l.clone()).unwrap_or_default();
    lines.into_iter().filter(|l| l.contains("plugin/errors:")).collect()
}

/// Waits (20 s at most) until `done` holds for the error lines; returns them.
fn wait_lines(s: &Server, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let lines = error_lines(s);
        if done(&lines) || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn every_failure_is_logged_without_consolidate() {
    let hole = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = hole.local_addr().expect("addr");
    let s = server("errors-plain", "errors", addr);
    let names: Vec<String> = (0..3).map(|i| format!("plain{i}.example.org.")).collect();
    let replies = ask_all(s.dns, &names);
    assert_eq!(replies.len(), 3);
    assert!(replies
        .iter()
        .all(|r| r.metadata.response_code == ResponseCode::ServFail));
    let lines = wait_lines(&s, |l| l.len() >= 3);
    for name in &names {
        let want = format!("[ERROR] plugin/errors: 2 {name} A: read udp {addr}: i/o timeout");
        assert!(lines.contains(&want), "no {want:?} in {lines:#?}");
    }
    assert_eq!(lines.len(), 3, "{lines:#?}");
}

#[test]
fn a_burst_is_consolidated_into_counts_that_add_up() {
    let hole = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let s = server(
        "errors-burst",
        "errors {\n        consolidate 1s \"i/o timeout$\" warning\n    }",
        hole.local_addr().expect("addr"),
    );
    let mut failed = 0;
    // 1,000 failures in twenty bursts of 50 distinct names (never coalesced).
    for burst in 0..20 {
        let names: Vec<String> = (0..50).map(|i| format!("b{burst}x{i}.example.org.")).collect();
        let replies = ask_all(s.dns, &names);
        failed += replies
            .iter()
            .filter(|r| r.metadata.response_code == ResponseCode::ServFail)
            .count();
    }
    // A query the loaded machine dropped before the server read it gets no
    // reply and logs no error: the counts must add up to the failures seen.
    assert!(failed >= 900, "most queries fail at the silent upstream: {failed}");
    let counted = |lines: &[String]| -> usize {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix("[WARNING] plugin/errors: "))
            .filter_map(|l| l.strip_suffix(" errors like 'i/o timeout$' occurred in last 1s"))
            .filter_map(|n| n.parse::<usize>().ok())
            .sum()
    };
    let lines = wait_lines(&s, |l| counted(l) >= failed);
    assert_eq!(counted(&lines), failed, "{lines:#?}");
    let other: Vec<&String> = lines.iter().filter(|l| !l.contains(" errors like ")).collect();
    assert!(other.is_empty(), "a consolidated error was logged alone: {other:#?}");
    assert!(
        lines.len() < 100,
        "one line per period, not per error: {} lines",
        lines.len()
    );
}

#[test]
fn show_first_logs_the_first_in_full_and_counts_the_rest() {
    let hole = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = hole.local_addr().expect("addr");
    let s = server(
        "errors-first",
        "errors {\n        consolidate 1s \"timeout\" info show_first\n        consolidate 1h \"never matches\"\n    }",
        addr,
    );
    let first = ask_all(s.dns, &["first.example.org.".to_string()]);
    assert_eq!(first.len(), 1);
    let want = format!("[INFO] plugin/errors: 2 first.example.org. A: read udp {addr}: i/o timeout");
    let lines = wait_lines(&s, |l| !l.is_empty());
    assert_eq!(lines, vec![want], "the first error in full, at info");
    // The rest are counted: one count line for the period (which counts
    // the first too), or, if the first's period ended alone (no line), a
    // second shown first and a count of the others.
    let names: Vec<String> = (0..5).map(|i| format!("more{i}.example.org.")).collect();
    assert_eq!(ask_all(s.dns, &names).len(), 5);
    let counts = |lines: &[String]| -> usize {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix("[INFO] plugin/errors: "))
            .filter_map(|l| l.strip_suffix(" errors like 'timeout' occurred in last 1s"))
            .filter_map(|n| n.parse::<usize>().ok())
            .sum()
    };
    let shown = |lines: &[String]| lines.iter().filter(|l| l.contains(": 2 more")).count();
    let lines = wait_lines(&s, |l| counts(l) + shown(l) >= 5);
    let (shown, counted) = (shown(&lines), counts(&lines));
    // 6 errors in all: a period that saw only its shown first logs no count.
    assert!((5..=6).contains(&(counted + shown)) && counted >= 4, "{lines:#?}");
    assert_eq!(
        lines.len(),
        1 + shown + lines.iter().filter(|l| l.contains(" errors like ")).count()
    );
}

#[test]
fn log_formats_fill_coredns_placeholders_and_filter_by_class() {
    let text = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    \
                log . \"{/log/class} {/log/type} {type} {name} {rcode} {>opcode} {/forward/upstream} {when}\" {\n        \
                class denial error\n    }\n    local\n}\n";
    let s = Server::start(&temp_dir("log-format"), text);
    let ask = |name: &str, qtype| {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        sock.send_to(&query(9, name, qtype, None), s.dns).expect("send");
        let mut buf = vec![0u8; 4096];
        sock.recv(&mut buf).expect("a reply");
    };
    ask("localhost.", RecordType::A); // success: not logged
    ask("2.0.0.127.in-addr.arpa.", RecordType::PTR); // NXDOMAIN: denial
    ask("localhost.", RecordType::MX); // no data: denial
    let want = [
        "[INFO] denial NXDOMAIN PTR 2.0.0.127.in-addr.arpa. NXDOMAIN 0 - {when}",
        "[INFO] denial NODATA MX localhost. NOERROR 0 - {when}",
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let lines: Vec<String> = s.log.lock().map(|l| l.clone()).unwrap_or_default();
        if want.iter().all(|w| lines.iter().any(|l| l == w)) || Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for w in want {
        assert!(lines.iter().any(|l| l == w), "no {w:?} in {lines:#?}");
    }
    assert!(
        !lines.iter().any(|l| l.contains(" A localhost.")),
        "a success was logged under class denial error: {lines:#?}"
    );
}

// CoreDNS plugin/errors/errors_test.go TestStop: the errors counted in a
// period that has not ended are logged when the server stops.
#[test]
fn a_stop_logs_the_count_of_an_unfinished_period() {
    let hole = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut s = server(
        "errors-stop",
        "errors {\n        consolidate 1h \"timeout$\"\n    }",
        hole.local_addr().expect("addr"),
    );
    let names: Vec<String> = (0..3).map(|i| format!("stop{i}.example.org.")).collect();
    assert_eq!(ask_all(s.dns, &names).len(), 3);
    assert!(error_lines(&s).is_empty(), "counted, not logged, while the hour runs");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    assert!(s.wait_exit(Duration::from_secs(10)).is_some(), "exits");
    let lines = wait_lines(&s, |l| !l.is_empty());
    assert_eq!(
        lines,
        ["[ERROR] plugin/errors: 3 errors like 'timeout$' occurred in last 1h0m0s"]
    );
}
