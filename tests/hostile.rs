//! Slow, idle, greedy and flooding clients against the real binary: the
//! TCP timeouts and caps (`timeouts`, `limits`), back-pressure on a
//! connection's pipeline, shedding at the in-flight cap, dropping UDP
//! queries that waited too long, and the memory that idle connections hold.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::stub::{Mode, Stub};
use common::{certs, framed, query, read_reply, temp_dir, udp, Server};
use hickory_proto::rr::RecordType;
use rustls::pki_types::ServerName;

const NAME: &str = "kubernetes.default.svc.cluster.local.";
/// The ceiling of a wait for an event: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

/// The real binary serving the demo cluster, forwarding the rest to a stub
/// upstream in `mode` (read_timeout 500 ms), with metrics on a free port
/// and `extra` lines in its server block.
fn start(tag: &str, mode: Mode, extra: &str) -> (Stub, Server) {
    start_timing_out(tag, mode, extra, "500ms")
}

/// [`start`] with another `read_timeout` for the upstream.
fn start_timing_out(tag: &str, mode: Mode, extra: &str, read_timeout: &str) -> (Stub, Server) {
    let stub = Stub::start();
    stub.set(mode);
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n    forward . {} {{\n        read_timeout {read_timeout}\n    }}\n{extra}}}\n",
        common::demo_cluster().display(),
        stub.addr
    );
    let server = Server::start(&temp_dir(tag), &text);
    (stub, server)
}

/// Whether the server closed `s` (EOF or reset) within `limit`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).expect("timeout");
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(0) | Err(_))
        && {
            // A timeout is an error too: tell it apart from a close.
            s.set_read_timeout(Some(Duration::from_millis(1))).expect("timeout");
            !matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut)
        }
}

/// A connection that has asked one cluster name and had its answer.
fn asked(server: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(server).expect("connect");
    s.set_read_timeout(Some(HANG)).expect("timeout");
    s.write_all(&framed(&query(1, NAME, RecordType::A, None)))
        .expect("write");
    assert!(read_reply(&mut s).is_some(), "answered");
    s
}

#[test]
fn a_client_sending_a_byte_at_a_time_is_cut_off_and_an_idle_one_closed() {
    let (_stub, server) = start(
        "slowloris",
        Mode::Answer,
        "    timeouts {\n        read 1s\n        idle 2s\n    }\n",
    );
    let mut idle = TcpStream::connect(server.dns).expect("connect");
    let opened = Instant::now();
    let mut slow = TcpStream::connect(server.dns).expect("connect");
    let message = framed(&query(7, NAME, RecordType::A, None));
    // One byte every 300 ms: a read timeout restarted by each byte would
    // never cut it; one counted from the first byte cuts it long before
    // the message is whole (its last byte comes after 10 s).
    let mut cut = false;
    for byte in &message {
        if slow.write_all(std::slice::from_ref(byte)).is_err() {
            cut = true;
            break;
        }
        // Others are served meanwhile.
        assert_eq!(common::rcode_name(&udp(server.dns, NAME, RecordType::A)), "NOERROR");
        if closed_within(&mut slow, Duration::from_millis(300)) {
            cut = true;
            break;
        }
    }
    // Every byte sent (a machine too busy to notice the cut meanwhile):
    // closed unanswered now, or answered (the timeout restarted).
    let cut = cut || closed_within(&mut slow, HANG);
    assert!(
        cut,
        "the slow client was never cut off: the read timeout restarts with each byte"
    );
    assert!(closed_within(&mut idle, HANG), "the idle connection is closed");
    let idle_for = opened.elapsed();
    assert!(
        idle_for >= Duration::from_millis(1800),
        "closed after the idle timeout (2 s), not {idle_for:?}"
    );
    assert_eq!(
        server.metric("clusterdns_tcp_closed_total{reason=\"read_timeout\"}"),
        1.0
    );
    assert_eq!(
        server.metric("clusterdns_tcp_closed_total{reason=\"idle_timeout\"}"),
        1.0
    );
    assert_eq!(server.metric("clusterdns_tcp_connections"), 0.0);
}

#[test]
fn at_the_connection_cap_the_connection_idle_longest_is_closed_first() {
    // The upstream's silence lasts longer than any wait below: the
    // connections waiting on it stay busy however slow the machine.
    let (_stub, server) = start_timing_out(
        "conncap",
        Mode::Silent,
        "    limits {\n        connections 3\n    }\n",
        "30s",
    );
    let mut first = asked(server.dns);
    std::thread::sleep(Duration::from_millis(30));
    let mut second = asked(server.dns);
    std::thread::sleep(Duration::from_millis(30));
    let mut third = asked(server.dns);
    // The first asks again: now the second has been idle longest.
    first
        .write_all(&framed(&query(2, NAME, RecordType::A, None)))
        .expect("write");
    assert!(read_reply(&mut first).is_some());
    std::thread::sleep(Duration::from_millis(30));
    let mut fourth = asked(server.dns);
    assert!(closed_within(&mut second, HANG), "the idle-longest is closed");
    for (name, s) in [("first", &mut first), ("third", &mut third), ("fourth", &mut fourth)] {
        s.write_all(&framed(&query(3, NAME, RecordType::A, None)))
            .expect("write");
        assert!(read_reply(s).is_some(), "the {name} connection still answers");
    }
    assert_eq!(server.metric("clusterdns_tcp_closed_total{reason=\"evicted\"}"), 1.0);

    // None idle (each waits for a forwarded answer): a new one is refused.
    for s in [&mut first, &mut third, &mut fourth] {
        s.write_all(&framed(&query(4, "slow.example.org.", RecordType::A, None)))
            .expect("write");
    }
    let started = Instant::now();
    while server.metric("clusterdns_requests_in_flight") < 3.0 && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        server.metric("clusterdns_requests_in_flight"),
        3.0,
        "all three wait upstream"
    );
    let mut fifth = TcpStream::connect(server.dns).expect("the kernel accepts the connection");
    assert!(closed_within(&mut fifth, HANG), "refused at the cap");
    assert_eq!(server.metric("clusterdns_tcp_rejected_total"), 1.0);
    assert_eq!(server.metric("clusterdns_tcp_connections"), 3.0);
}

#[test]
fn a_full_pipeline_is_not_read_until_a_forwarded_query_is_answered() {
    let (_stub, server) = start("pipeline", Mode::Silent, "    limits {\n        pipeline 2\n    }\n");
    let mut s = TcpStream::connect(server.dns).expect("connect");
    s.set_read_timeout(Some(HANG)).expect("timeout");
    let mut burst = Vec::new();
    for i in 0..4u16 {
        burst.extend(framed(&query(
            100 + i,
            &format!("n{i}.example.org."),
            RecordType::A,
            None,
        )));
    }
    burst.extend(framed(&query(200, NAME, RecordType::A, None)));
    let sent = Instant::now();
    s.write_all(&burst).expect("write");
    let mut cluster_at = None;
    let mut servfails = 0;
    for _ in 0..5 {
        let reply = read_reply(&mut s).expect("every query is answered");
        if reply.metadata.id == 200 {
            cluster_at = Some(sent.elapsed());
            assert_eq!(common::rcode_name(&reply), "NOERROR");
        } else {
            assert_eq!(common::rcode_name(&reply), "SERVFAIL");
            servfails += 1;
        }
    }
    assert_eq!(servfails, 4);
    let cluster_at = cluster_at.expect("the cluster name was answered");
    // Two forwarded queries fill the pipeline; the third waits for them
    // (read_timeout 500 ms), the fourth is read with it, and the cluster
    // name behind them waits for a slot again: read at about 1 s.
    assert!(
        cluster_at >= Duration::from_millis(800),
        "the connection was not read while its pipeline was full (answered after {cluster_at:?})"
    );
}

#[test]
fn a_flood_of_forwarded_misses_is_shed_at_the_in_flight_cap_with_bounded_memory() {
    let (_stub, server) = start("flood", Mode::Silent, "    limits {\n        in_flight 100\n    }\n");
    let rss = || loadtest::watchbench::rss_kb(server.pid());
    let before = rss();
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let flood = 5_000u16;
    for i in 0..flood {
        let q = query(i, &format!("flood{i}.example.org."), RecordType::A, None);
        sock.send_to(&q, server.dns).expect("send");
        if i % 500 == 499 {
            // Paced just enough that the kernel queue does not overflow.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    // Read once the server has accounted for every datagram (a busy
    // machine only makes that later; the ceiling guards a hang).
    let counted = || {
        let kernel = server.metric("clusterdns_udp_kernel_drops").max(0.0);
        let (shed, late) = (
            server.metric("clusterdns_overload_dropped_total"),
            server.metric("clusterdns_udp_late_dropped_total"),
        );
        (shed, kernel, late)
    };
    let deadline = Instant::now() + HANG;
    while Instant::now() < deadline && {
        let (shed, kernel, late) = counted();
        shed + kernel + late + 100.0 < f64::from(flood)
    } {
        std::thread::sleep(Duration::from_millis(20));
    }
    let in_flight = server.metric("clusterdns_requests_in_flight");
    let (shed, kernel, late) = counted();
    assert!(in_flight <= 100.0, "in flight {in_flight} above the cap");
    assert_eq!(
        shed + kernel + late + 100.0,
        f64::from(flood),
        "every query beyond the cap was shed and counted ({shed} shed, {kernel} kernel drops, {late} late)"
    );
    let grown = rss().saturating_sub(before);
    assert!(grown < 20 * 1024, "RSS grew {grown} KB under the flood");
    // The cluster zone answers throughout, and the in-flight queries time out.
    assert_eq!(common::rcode_name(&udp(server.dns, NAME, RecordType::A)), "NOERROR");
    let deadline = Instant::now() + HANG;
    while server.metric("clusterdns_requests_in_flight") > 0.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.metric("clusterdns_requests_in_flight"), 0.0);
}

/// Raises this process's open-file limit to its hard limit; how many
/// connections up to `want` that leaves room for.
fn room_for_connections(want: usize) -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: limit.maximum,
        },
    );
    want.min(hard.saturating_sub(500) as usize)
}

#[test]
fn ten_thousand_idle_connections_hold_bounded_memory() {
    let n = room_for_connections(10_000);
    assert!(
        n >= 5_000,
        "the open-file hard limit leaves room for only {n} connections"
    );
    let (_stub, server) = start("idle10k", Mode::Answer, "    timeouts {\n        idle 120s\n    }\n");
    // One connection that has been used, so per-thread scratch space exists.
    drop(asked(server.dns));
    let before = loadtest::watchbench::rss_kb(server.pid());
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let c = TcpStream::connect(server.dns).expect("connect");
        // Closed with a reset: no TIME_WAIT left holding 10,000 ports.
        socket2::SockRef::from(&c)
            .set_linger(Some(Duration::ZERO))
            .expect("linger");
        conns.push(c);
    }
    let deadline = Instant::now() + HANG;
    while server.metric("clusterdns_tcp_connections") < n as f64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.metric("clusterdns_tcp_connections"), n as f64);
    let after = loadtest::watchbench::rss_kb(server.pid());
    let per_conn = (after.saturating_sub(before) * 1024) as f64 / n as f64;
    eprintln!("{n} idle connections: RSS {before} KB -> {after} KB, {per_conn:.0} bytes each");
    assert!(per_conn < 8192.0, "{per_conn:.0} bytes per idle connection");
    // Still serving, over UDP and on a new connection.
    assert_eq!(common::rcode_name(&udp(server.dns, NAME, RecordType::A)), "NOERROR");
    assert_eq!(
        common::rcode_name(&common::tcp(server.dns, NAME, RecordType::A)),
        "NOERROR"
    );
}

/// DNS over TLS on a free port beside the plain block (`start`'s, with
/// `extra`), its certificate made in the server's directory; the port and
/// a client configuration trusting the certificate (ALPN `dot`).
fn start_dot(tag: &str, extra: &str) -> Option<(Stub, Server, SocketAddr, Arc<rustls::ClientConfig>)> {
    common::needs(tag, common::installed("openssl"), "apt-get install openssl")?;
    let dir = temp_dir(tag);
    certs::ca(&dir, "ca", "clusterdns test CA");
    certs::signed(&dir, "srv", "ca", "dns.test", certs::Usage::Server, false);
    let port = common::free_port();
    let dot = format!(
        "}}\ntls://.:{port} {{\n    bind 127.0.0.1\n    tls srv.pem srv.key\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n{extra}",
        common::demo_cluster().display()
    );
    let stub = Stub::start();
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    forward . {}\n{dot}}}\n",
        stub.addr
    );
    let server = Server::start(&dir, &text);
    let config = certs::client_config(&dir, b"dot");
    Some((stub, server, SocketAddr::from(([127, 0, 0, 1], port)), config))
}

/// A DoT connection after its handshake, as the client sees it; closed
/// with a reset when dropped.
fn dot_handshaken(addr: SocketAddr, config: &Arc<rustls::ClientConfig>) -> (TcpStream, rustls::ClientConnection) {
    let mut sock = TcpStream::connect(addr).expect("connect");
    socket2::SockRef::from(&sock)
        .set_linger(Some(Duration::ZERO))
        .expect("linger");
    sock.set_read_timeout(Some(HANG)).expect("timeout");
    let name = ServerName::try_from("dns.test").expect("server name");
    let mut tls = rustls::ClientConnection::new(config.clone(), name).expect("client");
    while tls.is_handshaking() || tls.wants_write() {
        tls.complete_io(&mut sock).expect("handshake");
    }
    assert_eq!(tls.alpn_protocol(), Some(&b"dot"[..]), "ALPN");
    (sock, tls)
}

/// A DoT connection whose handshake the server has finished: its session
/// tickets, sent once it took the client's last handshake message, came.
fn dot_idle(addr: SocketAddr, config: &Arc<rustls::ClientConfig>) -> TcpStream {
    let (mut sock, mut tls) = dot_handshaken(addr, config);
    assert!(tls.read_tls(&mut sock).expect("session tickets") > 0, "session tickets");
    tls.process_new_packets().expect("session tickets");
    sock
}

/// One query over a DoT connection; its answer's rcode.
fn dot_asked(addr: SocketAddr, config: &Arc<rustls::ClientConfig>) -> String {
    let (sock, tls) = dot_handshaken(addr, config);
    let mut stream = rustls::StreamOwned::new(tls, sock);
    stream
        .write_all(&framed(&query(9, NAME, RecordType::A, None)))
        .expect("write");
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).expect("length");
    let mut reply = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut reply).expect("reply");
    common::rcode_name(&hickory_proto::op::Message::from_vec(&reply).expect("message"))
}

/// Idle DNS-over-TLS connections (handshake done, no query) hold no more
/// than TCP's bound each: no TLS buffer while there is nothing in it.
#[test]
fn idle_dot_connections_hold_bounded_memory() {
    let n = room_for_connections(3_000);
    let Some((_stub, server, addr, config)) = start_dot("idledot", "    timeouts {\n        idle 120s\n    }\n") else {
        return;
    };
    // One connection that has been used, so per-thread scratch space exists.
    assert_eq!(dot_asked(addr, &config), "NOERROR");
    let before = loadtest::watchbench::rss_kb(server.pid());
    let started = Instant::now();
    let conns: Vec<_> = (0..n).map(|_| dot_idle(addr, &config)).collect();
    let deadline = Instant::now() + HANG;
    while server.metric("clusterdns_tcp_connections") < n as f64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.metric("clusterdns_tcp_connections"), n as f64);
    std::thread::sleep(Duration::from_millis(200));
    let after = loadtest::watchbench::rss_kb(server.pid());
    let per_conn = (after.saturating_sub(before) * 1024) as f64 / n as f64;
    eprintln!(
        "{n} idle DoT connections (opened in {:?}): RSS {before} KB -> {after} KB, {per_conn:.0} bytes each",
        started.elapsed()
    );
    assert!(per_conn < 8192.0, "{per_conn:.0} bytes per idle DoT connection");
    // Still serving on a new connection.
    assert_eq!(dot_asked(addr, &config), "NOERROR");
    drop(conns);
}

#[test]
fn udp_queries_that_waited_too_long_are_dropped_and_counted_not_answered_late() {
    let (_stub, server) = start("late", Mode::Answer, "");
    assert_eq!(common::rcode_name(&udp(server.dns, NAME, RecordType::A)), "NOERROR");
    // The kernel turns receive timestamps on in a deferred work item after
    // the first socket asks; until then a datagram is stamped when read.
    std::thread::sleep(Duration::from_millis(300));
    // Stopped, the server cannot read: what arrives meanwhile waits in the
    // kernel's queue longer than the limit (1 s).
    let pid = server.pid().to_string();
    common::run("kill", &["-STOP", &pid]);
    // A stop is delivered asynchronously: a worker may still read (and
    // answer at once) what is sent before every thread has stopped.
    assert!(common::all_stopped(&pid), "the server did not stop");
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    for i in 0..10u16 {
        sock.send_to(&query(500 + i, NAME, RecordType::A, None), server.dns)
            .expect("send");
    }
    std::thread::sleep(Duration::from_millis(1500));
    common::run("kill", &["-CONT", &pid]);
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut buf = [0u8; 512];
    assert!(sock.recv(&mut buf).is_err(), "a late query was answered");
    // Counted once the worker has read the batch (bounded wait: a loaded machine).
    let deadline = std::time::Instant::now() + HANG;
    while server.metric("clusterdns_udp_late_dropped_total") < 10.0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(server.metric("clusterdns_udp_late_dropped_total"), 10.0);
    // Fresh queries are answered as before.
    assert_eq!(common::rcode_name(&udp(server.dns, NAME, RecordType::A)), "NOERROR");
}
