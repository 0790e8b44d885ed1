//! Options of the small directives CoreDNS 1.14 accepts, honoured over the
//! wire: `timeouts { maxtcpqueries N }` closes a TCP connection after N
//! answers; `reload` takes a jitter of `0s` and cuts one above half the
//! interval, as CoreDNS does.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{framed, query, read_reply, temp_dir, Server};
use hickory_proto::rr::RecordType;

/// Replies read from one connection that was sent `n` queries at once.
fn replies_on_one_connection(server: &Server, n: u16) -> usize {
    let mut s = TcpStream::connect_timeout(&server.dns, Duration::from_secs(2)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(3))).expect("timeout");
    let all: Vec<u8> = (0..n)
        .flat_map(|i| framed(&query(i, "localhost.", RecordType::A, None)))
        .collect();
    s.write_all(&all).expect("write");
    (0..n).take_while(|_| read_reply(&mut s).is_some()).count()
}

#[test]
fn maxtcpqueries_closes_a_connection_after_that_many_answers() {
    let text = |t: &str| format!(".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    local\n{t}\n}}\n");
    let capped = Server::start(
        &temp_dir("maxtcpq"),
        &text("    timeouts {\n        maxtcpqueries 2\n    }"),
    );
    assert_eq!(replies_on_one_connection(&capped, 5), 2, "then closed");
    let unlimited = Server::start(
        &temp_dir("maxtcpq-unlimited"),
        &text("    timeouts {\n        maxtcpqueries -1\n    }"),
    );
    assert_eq!(replies_on_one_connection(&unlimited, 5), 5);
}

#[test]
fn reload_jitter_zero_and_above_half_are_accepted_small_ones_refused() {
    let dir = temp_dir("reload-jitter");
    let conf = dir.join("Corefile");
    for (args, ok) in [("10s 0s", true), ("10s 9s", true), ("10s 500ms", false), ("1s", false)] {
        std::fs::write(&conf, format!(".:53 {{\n    reload {args}\n}}\n")).expect("write");
        let (status, out) = common::check(&conf);
        assert_eq!(status.success(), ok, "reload {args}: {out}");
    }
}
