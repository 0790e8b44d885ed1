//! `dnstap listen`: the server listens and real collectors connect to it.
//! Debian's `dnstap` tool only listens itself, so `socat` connects our
//! listening socket to the tool's unix socket: the bytes, the Frame
//! Streams handshake (our READY, its ACCEPT, our START) included, pass
//! through unchanged. Cases: TCP and unix listeners, two collectors on
//! one listener each getting every message; TLS (CoreDNS's README form,
//! `tls CERT KEY` with `skipverify`) and mutual TLS (`tls CERT KEY CA`: a
//! collector without a client certificate is refused); a collector that
//! stops reading is cut off with its messages counted, queries answered.

#[path = "dnstap/collector.rs"]
mod collector;
mod common;
#[path = "dnstap/script.rs"]
mod script;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use collector::{json_count, Collector};
use common::stub::Stub;
use common::{certs, free_port, temp_dir, Server};
use script::{ask, check_json, corefile, script, tools, until_metric, wait_connected, wait_for_socket};

/// A `socat` bridging two addresses, killed on drop.
struct Bridge(Child);

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `socat FROM TO`; FROM retried while our listener is not up yet.
fn bridge(from: &str, to: &str) -> Bridge {
    let child = Command::new("socat")
        .args([from, to])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start socat");
    Bridge(child)
}

/// A `dnstap -u` collector on `dir/NAME.sock`, printing to `dir/NAME.json`.
fn tool(dir: &Path, name: &str) -> (Collector, String) {
    let socket = dir.join(format!("{name}.sock"));
    let c = Collector::dnstap(
        &["-u", &socket.display().to_string()],
        &dir.join(format!("{name}.json")),
    );
    wait_for_socket(&socket);
    (c, format!("UNIX-CONNECT:{}", socket.display()))
}

const RETRY: &str = "retry=100,interval=0.1";

#[test]
fn collectors_connecting_over_tcp_and_unix_each_get_every_message() {
    if !tools("collectors_connecting_over_tcp_and_unix_each_get_every_message") {
        return;
    }
    let dir = temp_dir("dnstap-listen");
    let (port, ours) = (free_port(), dir.join("ours.sock"));
    let up = Stub::start();
    let taps = format!(
        "    dnstap listen tcp://127.0.0.1:{port} {{\n        identity listen-tcp\n    }}\n    dnstap listen unix://{} full {{\n        identity listen-unix\n    }}",
        ours.display()
    );
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    let (one, to_one) = tool(&dir, "one");
    let (two, to_two) = tool(&dir, "two");
    let (three, to_three) = tool(&dir, "three");
    let tcp = format!("TCP:127.0.0.1:{port},{RETRY}");
    let _b1 = bridge(&tcp, &to_one);
    let _b2 = bridge(&tcp, &to_two);
    let _b3 = bridge(&format!("UNIX-CONNECT:{},{RETRY}", ours.display()), &to_three);
    wait_connected(&server, 3);
    let sent = script(&server);
    for (c, identity, full) in [
        (&one, "listen-tcp", false),
        (&two, "listen-tcp", false),
        (&three, "listen-unix", true),
    ] {
        let got = json_count(&c.out, 16, Duration::from_secs(10));
        check_json(&got, &sent, &up, identity, full);
    }
    until_metric(&server, "clusterdns_dnstap_sent_total", 48.0);
    assert_eq!(server.metric("coredns_dnstap_dropped_total"), 0.0);
}

#[test]
fn tls_listeners_as_coredns_readme_writes_them() {
    if !tools("tls_listeners_as_coredns_readme_writes_them") {
        return;
    }
    let dir = temp_dir("dnstap-listen-tls");
    certs::ca(&dir, "ca", "dnstap test CA");
    certs::signed(&dir, "srv", "ca", "localhost", certs::Usage::Server, false);
    certs::signed(&dir, "cli", "ca", "collector", certs::Usage::Client, false);
    let (plain, mutual) = (free_port(), free_port());
    let d = dir.display();
    let up = Stub::start();
    let taps = format!(
        "    dnstap listen tls://127.0.0.1:{plain} full {{\n        tls {d}/srv.pem {d}/srv.key\n        skipverify\n        identity tls\n    }}\n    \
         dnstap listen tls://127.0.0.1:{mutual} full {{\n        tls {d}/srv.pem {d}/srv.key {d}/ca.pem\n        identity mtls\n    }}"
    );
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    let (one, to_one) = tool(&dir, "one");
    let (two, to_two) = tool(&dir, "two");
    let ssl = |port: u16, client: bool| {
        let cert = if client {
            format!(",cert={d}/cli.pem,key={d}/cli.key")
        } else {
            String::new()
        };
        format!("OPENSSL:127.0.0.1:{port},cafile={d}/ca.pem{cert},{RETRY}")
    };
    let _b1 = bridge(&ssl(plain, false), &to_one);
    wait_connected(&server, 1);
    // Mutual TLS: no client certificate, no session; with one, the stream.
    let refused = bridge(&ssl(mutual, false), &to_two);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.log_contains("handshake failed") {
        assert!(
            Instant::now() < deadline,
            "the certificate-less collector is not refused"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(refused);
    assert_eq!(server.metric("clusterdns_dnstap_connects_total"), 1.0);
    let _b2 = bridge(&ssl(mutual, true), &to_two);
    wait_connected(&server, 2);
    let sent = script(&server);
    for (c, identity) in [(&one, "tls"), (&two, "mtls")] {
        check_json(
            &json_count(&c.out, 16, Duration::from_secs(10)),
            &sent,
            &up,
            identity,
            true,
        );
    }
}

#[test]
fn a_collector_that_stops_reading_is_cut_off_and_costs_no_answer() {
    if !tools("a_collector_that_stops_reading_is_cut_off_and_costs_no_answer") {
        return;
    }
    let dir = temp_dir("dnstap-listen-stalled");
    let port = free_port();
    let up = Stub::start();
    let taps = format!("    dnstap listen tcp://127.0.0.1:{port} full 1 1");
    let server = Server::start(&dir, &corefile(up.addr, &taps));
    // A collector that answers the handshake, then never reads.
    let mut conn = connect_retrying(port);
    let mut ready = [0u8; 64];
    let _ = conn.read(&mut ready);
    conn.write_all(&accept()).expect("ACCEPT");
    wait_connected(&server, 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut asked = 0u16;
    while server.metric("coredns_dnstap_dropped_total") <= 0.0 {
        assert!(
            Instant::now() < deadline,
            "nothing dropped in 60 s: {}",
            server.metrics()
        );
        for _ in 0..200 {
            // every query answered while the collector stalls (ask panics otherwise)
            ask(server.dns, asked, "kubernetes.default.svc.cluster.local.", false);
            asked = asked.wrapping_add(1);
        }
    }
    assert!(server.is_running());
    assert!(
        server.log_contains("a dnstap collector fell behind")
            || server.log_contains("a dnstap collector stopped reading"),
        "the cut-off is logged"
    );
}

fn connect_retrying(port: u16) -> std::net::TcpStream {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => return c,
            Err(e) => assert!(Instant::now() < deadline, "no listener on {port}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Frame Streams ACCEPT naming dnstap's content type.
fn accept() -> Vec<u8> {
    let ct = b"protobuf:dnstap.Dnstap";
    let body_len = 4 + 4 + 4 + ct.len() as u32;
    let mut f = Vec::new();
    for w in [0, body_len, 1, 1, ct.len() as u32] {
        f.extend_from_slice(&w.to_be_bytes());
    }
    f.extend_from_slice(ct);
    f
}
