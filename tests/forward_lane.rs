//! A UDP worker runs the misses it reads on its own runtime, on its own
//! thread (`src/query/forward/lanes.rs`, `src/query/udp/wait.rs`): the real
//! binary forwarding to the test itself as its upstream, checking that the
//! worker still reads while misses are in flight, that a miss is answered
//! when no other traffic wakes the worker, and that a stopping worker
//! lets its misses in flight finish.

mod common;

use std::net::UdpSocket;
use std::time::Duration;

use common::held::{answer, held};
use common::{query, rcode_name, temp_dir, udp, Server, REPLY};
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;

/// The server forwarding to `up` (this test, answering when it chooses),
/// with `extra` in its block.
fn forwarding_to(up: &UdpSocket, tag: &str, extra: &str) -> Server {
    let corefile = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    forward . {} {{\n        max_fails 0\n    }}\n{extra}}}\n",
        up.local_addr().expect("addr")
    );
    Server::start(&temp_dir(tag), &corefile)
}

/// Sends a query for `name` from a socket of its own, without waiting.
fn send(server: &Server, name: &str) -> UdpSocket {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.send_to(&query(0x5151, name, RecordType::A, None), server.dns)
        .expect("send");
    sock
}

fn reply(sock: &UdpSocket, limit: Duration) -> Option<Message> {
    sock.set_read_timeout(Some(limit)).expect("timeout");
    let mut buf = vec![0u8; 65535];
    let n = sock.recv(&mut buf).ok()?;
    Message::from_vec(&buf[..n]).ok()
}

#[test]
fn hits_are_answered_while_misses_wait_and_a_miss_needs_no_other_traffic() {
    // the upstream is this test: it answers when told, nothing else does
    let up = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let server = forwarding_to(&up, "lane-hits", "    cache 30\n");
    let warm = send(&server, "hit.example.org.");
    let (req, from) = held(&up);
    up.send_to(&answer(&req), from).expect("answer");
    assert_eq!(rcode_name(&reply(&warm, REPLY).expect("warmed")), "NOERROR");
    // misses held upstream, on both workers (the kernel picks one by source port)
    let waiting: Vec<UdpSocket> = (0..8)
        .map(|i| send(&server, &format!("held{i}.example.org.")))
        .collect();
    let asked: Vec<_> = (0..8).map(|_| held(&up)).collect();
    // hits from many source ports reach the workers with misses in flight:
    // each is read and answered while the misses wait
    for _ in 0..16 {
        assert_eq!(
            rcode_name(&udp(server.dns, "hit.example.org.", RecordType::A)),
            "NOERROR"
        );
    }
    // now only the upstream's replies wake the workers, and each is relayed
    for (req, from) in &asked {
        up.send_to(&answer(req), *from).expect("answer");
    }
    for sock in &waiting {
        let m = reply(sock, REPLY).expect("the miss answered");
        assert_eq!((rcode_name(&m), m.answers.len()), ("NOERROR".to_string(), 1));
    }
    // a timed-out miss is answered too (SERVFAIL after read_timeout)
    let lost = send(&server, "lost.example.org.");
    let _ = held(&up);
    assert_eq!(rcode_name(&reply(&lost, REPLY).expect("answered")), "SERVFAIL");
}

#[test]
fn a_stopping_worker_answers_its_misses_in_flight() {
    // the upstream is this test: the misses are held until the server was told to stop
    let up = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut server = forwarding_to(&up, "lane-stop", "");
    let waiting: Vec<UdpSocket> = (0..4)
        .map(|i| send(&server, &format!("late{i}.example.org.")))
        .collect();
    let asked: Vec<_> = (0..4).map(|_| held(&up)).collect();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    assert!(server.logged("SIGTERM received"), "the server heard SIGTERM");
    for (req, from) in &asked {
        up.send_to(&answer(req), *from).expect("answer");
    }
    for sock in &waiting {
        let m = reply(sock, REPLY).expect("answered while stopping");
        assert_eq!(rcode_name(&m), "NOERROR");
    }
    assert!(server.wait_exit(REPLY).is_some(), "the server exits");
}
