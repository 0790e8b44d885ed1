//! The memo across store changes, end to end: after a Service changes,
//! the first query for it gets the new answer (never the memoized old
//! one), while memoized answers for other Services keep being replayed
//! (`clusterdns_memo_revalidations_total{result="kept"}` counts them).

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::{answer_lines, rcode_name, temp_dir, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;

/// One client socket for every query, so they all reach the same UDP
/// worker (and its memo).
struct Client {
    sock: UdpSocket,
    server: SocketAddr,
    id: u16,
}

impl Client {
    /// A client of `server` on a socket of its own, replies within 2 s.
    fn to(server: SocketAddr) -> Client {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        Client { sock, server, id: 0 }
    }

    fn ask(&mut self, name: &str, qtype: RecordType) -> Message {
        self.id = self.id.wrapping_add(1);
        let q = common::query(self.id, name, qtype, Some(1232));
        self.sock.send_to(&q, self.server).expect("send");
        let mut buf = vec![0u8; 65535];
        loop {
            let n = self.sock.recv(&mut buf).expect("a reply within 2 s");
            let m = Message::from_vec(&buf[..n]).expect("decodable reply");
            if m.metadata.id == self.id {
                return m;
            }
        }
    }
}

fn dump(a_ip: &str) -> String {
    let service = |name: &str, ip: &str| {
        format!("- apiVersion: v1\n  kind: Service\n  metadata: {{name: {name}, namespace: app}}\n  spec: {{clusterIP: \"{ip}\", ports: [{{port: 80}}]}}\n")
    };
    format!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {{name: app}}\n{}{}",
        service("a", a_ip),
        service("b", "10.0.0.2")
    )
}

fn loads(server: &Server) -> usize {
    let lines = server.log.lock().map(|l| l.clone()).unwrap_or_default();
    lines
        .iter()
        .filter(|l| l.contains("loaded") && l.contains("objects"))
        .count()
}

#[test]
fn a_change_drops_only_the_memoized_answers_it_touches() {
    let dir = temp_dir("memo");
    let path = dir.join("cluster.yaml");
    std::fs::write(&path, dump("10.0.0.1")).expect("write");
    let corefile = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local in-addr.arpa {{\n        snapshot {}\n    }}\n}}\n",
        path.display()
    );
    let server = Server::start(&dir, &corefile);
    let mut c = Client::to(server.dns);
    let (a, b) = ("a.app.svc.cluster.local.", "b.app.svc.cluster.local.");
    let (ptr_a, ptr_b) = ("1.0.0.10.in-addr.arpa.", "2.0.0.10.in-addr.arpa.");
    for _ in 0..3 {
        assert_eq!(answer_lines(&c.ask(a, RecordType::A)), [format!("{a} 5 IN A 10.0.0.1")]);
        assert_eq!(answer_lines(&c.ask(b, RecordType::A)), [format!("{b} 5 IN A 10.0.0.2")]);
        assert_eq!(
            answer_lines(&c.ask(ptr_a, RecordType::PTR)),
            [format!("{ptr_a} 5 IN PTR {a}")]
        );
        assert_eq!(
            answer_lines(&c.ask(ptr_b, RecordType::PTR)),
            [format!("{ptr_b} 5 IN PTR {b}")]
        );
    }
    let kept = |s: &Server| s.metric("clusterdns_memo_revalidations_total{result=\"kept\"}");
    let dropped = |s: &Server| s.metric("clusterdns_memo_revalidations_total{result=\"dropped\"}");
    let (kept_before, dropped_before) = (kept(&server), dropped(&server));
    assert!(kept_before >= 0.0 && dropped_before >= 0.0, "the series exist");

    // Only Service a changes: its answers (and its old and new PTR) must
    // be fresh on the first query after the reload; b's are replayed.
    let reloads = loads(&server);
    std::fs::write(&path, dump("10.0.0.11")).expect("write");
    let deadline = Instant::now() + Duration::from_secs(10);
    while loads(&server) == reloads && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(loads(&server) > reloads, "the changed dump was loaded");
    assert_eq!(
        answer_lines(&c.ask(a, RecordType::A)),
        [format!("{a} 5 IN A 10.0.0.11")],
        "never the memoized old address"
    );
    assert_eq!(
        rcode_name(&c.ask(ptr_a, RecordType::PTR)),
        "NXDOMAIN",
        "the old address lost its PTR"
    );
    let new_ptr = "11.0.0.10.in-addr.arpa.";
    assert_eq!(
        answer_lines(&c.ask(new_ptr, RecordType::PTR)),
        [format!("{new_ptr} 5 IN PTR {a}")]
    );
    assert_eq!(answer_lines(&c.ask(b, RecordType::A)), [format!("{b} 5 IN A 10.0.0.2")]);
    assert_eq!(
        answer_lines(&c.ask(ptr_b, RecordType::PTR)),
        [format!("{ptr_b} 5 IN PTR {b}")]
    );
    assert!(
        kept(&server) >= kept_before + 2.0,
        "b's A and PTR answers outlived the change: kept {} -> {}",
        kept_before,
        kept(&server)
    );
    assert!(
        dropped(&server) >= dropped_before + 2.0,
        "a's A and PTR answers were dropped: {} -> {}",
        dropped_before,
        dropped(&server)
    );
}

/// Answers from a `file` zone are memoized too: after the file is
/// reloaded with a new serial, the first query gets the new record,
/// never the memoized old one.
#[test]
fn a_reloaded_zone_file_is_answered_anew_at_once() {
    let dir = temp_dir("memo-file");
    let path = dir.join("db.example.org");
    let zone = |serial: u32, ip: &str| {
        format!("$ORIGIN example.org.\n@ 60 IN SOA ns admin {serial} 60 60 60 60\n@ 60 IN NS ns\nns 60 IN A 127.0.0.1\nwww 60 IN A {ip}\n")
    };
    std::fs::write(&path, zone(1, "192.0.2.1")).expect("write");
    let corefile = format!(
        "example.org:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file {} {{\n        reload 100ms\n    }}\n}}\n",
        path.display()
    );
    let server = Server::start(&dir, &corefile);
    let mut c = Client::to(server.dns);
    let www = "www.example.org.";
    for _ in 0..3 {
        assert_eq!(
            answer_lines(&c.ask(www, RecordType::A)),
            [format!("{www} 60 IN A 192.0.2.1")]
        );
    }
    // Asked in other spellings (0x20): the answer keeps the zone's, as
    // CoreDNS writes it, never the question's patched into a replay.
    for spelling in ["WWW.Example.ORG.", "wWw.eXample.org."] {
        let m = c.ask(spelling, RecordType::A);
        assert_eq!(m.queries[0].name().to_ascii(), spelling, "the question as asked");
        assert_eq!(answer_lines(&m), [format!("{www} 60 IN A 192.0.2.1")], "{spelling}");
    }
    let reloaded = |s: &Server| {
        let lines = s.log.lock().map(|l| l.clone()).unwrap_or_default();
        lines.iter().any(|l| l.contains("reloaded zone example.org."))
    };
    std::fs::write(&path, zone(2, "192.0.2.2")).expect("rewrite");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reloaded(&server) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(reloaded(&server), "the zone was reloaded");
    assert_eq!(
        answer_lines(&c.ask(www, RecordType::A)),
        [format!("{www} 60 IN A 192.0.2.2")],
        "never the memoized old address"
    );
}
