//! Per-client fairness end to end (issue 42): who is dropped first when the
//! server cannot answer everything, checked by order, not by timing.
//!
//! The server is stopped (SIGSTOP) while datagrams queue, so what the
//! kernel keeps and drops depends on the queues alone: queries queued while
//! stopped are a standing queue when the server resumes (its first batch
//! waited far longer than the standing threshold), the flooder sent most of
//! that batch, so it is limited at once; then, stopped again, a
//! second flood queues in the flooder's own tight queue, which drops its
//! excess at the door, while the polite clients' queries wait in the shared
//! queue and are all answered.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::{query, temp_dir, Server};
use hickory_proto::rr::RecordType;

const NAME: &str = "kubernetes.default.svc.cluster.local.";
const FLOOD: usize = 2000;

fn server(tag: &str) -> Server {
    let dir = temp_dir(tag);
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    limits {{\n        client_share 10\n    }}\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
        common::demo_cluster().display()
    );
    Server::start(&dir, &text)
}

/// Stops the server until `f` has run, and waits until every thread has.
fn stopped<T>(server: &Server, f: impl FnOnce() -> T) -> T {
    let pid = server.pid().to_string();
    common::run("kill", &["-STOP", &pid]);
    assert!(common::all_stopped(&pid), "the server did not stop");
    let out = f();
    // Long enough for the queued datagrams to be well past the standing
    // threshold (5 ms) and a fairness window (50 ms).
    std::thread::sleep(Duration::from_millis(100));
    common::run("kill", &["-CONT", &pid]);
    out
}

fn flood(from: &UdpSocket, to: SocketAddr) {
    for i in 0..FLOOD {
        from.send_to(&query(i as u16, NAME, RecordType::A, None), to)
            .expect("send");
    }
}

/// One query from each polite client.
fn ask(polite: &[UdpSocket], to: SocketAddr) {
    for (i, p) in polite.iter().enumerate() {
        p.send_to(&query(i as u16, NAME, RecordType::A, None), to)
            .expect("send");
    }
}

/// Whether a reply arrives on `socket` (within [`common::REPLY`], a
/// ceiling only a hang reaches).
fn replied(socket: &UdpSocket) -> bool {
    socket.set_read_timeout(Some(common::REPLY)).expect("timeout");
    socket.recv(&mut [0u8; 1500]).is_ok()
}

/// Replies that arrive on `socket` until it is quiet for `quiet`.
fn replies(socket: &UdpSocket, quiet: Duration) -> usize {
    socket.set_read_timeout(Some(quiet)).expect("timeout");
    let mut buf = [0u8; 1500];
    let mut n = 0;
    while n < 100_000 && socket.recv(&mut buf).is_ok() {
        n += 1;
    }
    n
}

fn wait_log(server: &Server, needle: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if server.log_contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn the_flooding_client_is_limited_and_dropped_first_the_polite_ones_are_all_answered() {
    let server = server("fair");
    let to: SocketAddr = format!("127.0.0.1:{}", server.port()).parse().expect("address");
    let flooder = UdpSocket::bind("127.0.0.2:0").expect("flooder");
    let polite: Vec<UdpSocket> = (10..30)
        .map(|last| UdpSocket::bind(format!("127.0.0.{last}:0")).expect("polite client"))
        .collect();
    // The kernel turns receive stamps on a moment after a socket asks.
    flooder.send_to(&query(1, NAME, RecordType::A, None), to).expect("send");
    assert!(replied(&flooder), "the first query is answered");
    assert_eq!(replies(&flooder, Duration::from_millis(100)), 0, "and only once");
    std::thread::sleep(Duration::from_millis(300));

    // 1. Polite queries and then a flood queued while stopped: the first
    // batch read stood in the queue, and the flooder stands out in it.
    stopped(&server, || {
        ask(&polite, to);
        flood(&flooder, to);
    });
    assert!(
        wait_log(&server, "client 127.0.0.2 (namespace unknown) limited", common::REPLY),
        "the flooder was not limited"
    );
    replies(&flooder, Duration::from_millis(50));
    for p in &polite {
        replies(p, Duration::from_millis(10));
    }

    // 2. Flood and polite queries queued together while stopped (well
    // within CALM of the limit, so the flooder is still limited).
    stopped(&server, || {
        flood(&flooder, to);
        ask(&polite, to);
    });
    let answered = polite.iter().filter(|p| replied(p)).count();
    let flood_answered = replies(&flooder, Duration::from_millis(100));
    assert_eq!(answered, polite.len(), "every polite query is answered");
    assert!(
        flood_answered < FLOOD / 2,
        "the flood's excess is dropped: {flood_answered} answered"
    );
    assert!(!server.log_contains("client 127.0.0.1"), "no polite client is limited");
    // The kernel reports a queue's drop count with the datagrams queued
    // after the drops (a worker may read the first of them without it, cut
    // short): a few more, one at a time, and the worker counts the shed.
    let mut shed = 0.0;
    let deadline = Instant::now() + common::REPLY;
    for i in 0..u16::MAX {
        flooder.send_to(&query(i, NAME, RecordType::A, None), to).expect("send");
        std::thread::sleep(Duration::from_millis(50));
        shed = server.metric_sum("clusterdns_fair_shed_total", "namespace=\"unknown\"");
        if shed >= (FLOOD / 2) as f64 || Instant::now() > deadline {
            break;
        }
    }
    assert!(shed >= (FLOOD / 2) as f64, "shed {shed}");
    assert!(server
        .metrics()
        .contains("clusterdns_fair_top_talkers{client=\"127.0.0.2\""));

    // 3. The flood over, the flooder is released and counted so.
    assert!(
        wait_log(
            &server,
            "client 127.0.0.2 (namespace unknown) no longer limited",
            common::REPLY
        ),
        "the flooder was not released"
    );
    assert_eq!(server.metric("clusterdns_fair_limited_clients"), 0.0);
}
