//! `proxyproto` behind real load balancers: dnsdist (PROXY v2 over UDP and
//! TCP, `useProxyProtocol`) and HAProxy (TCP, `send-proxy` v1 and
//! `send-proxy-v2`) sit in front of clusterdns, sending from the allowed
//! 127.0.0.2; the client asks them from 127.0.0.9, and `whoami` must name
//! 127.0.0.9, not the balancer. A datagram with a header from a source not
//! allowed (`default reject`) is dropped and counted; without a header it
//! is answered as ever.

mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::dig::dig_at;
use common::{free_port, installed, needs, temp_dir, Server, REPLY};

/// A balancer process, killed on drop.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(cmd: &Path, args: &[&str], dir: &Path) -> Peer {
    let name = cmd
        .file_name()
        .map_or("peer".into(), |n| n.to_string_lossy().into_owned());
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).expect("log");
    let child = Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", cmd.display()));
    Peer(child)
}

/// The address `whoami` gives a client asking `addr:port` from 127.0.0.9
/// (over TCP with `tcp`), once the balancer passes queries on.
fn seen_through(addr: &str, port: u16, tcp: bool) -> String {
    let deadline = Instant::now() + REPLY;
    let mut args = vec!["-b", "127.0.0.9", "who.example.", "A"];
    if tcp {
        args.push("+tcp");
    }
    loop {
        let d = dig_at(addr, port, &args);
        if let Some(a) = d.additional.iter().find(|l| l.contains(" IN A ")) {
            return a.rsplit(' ').next().unwrap_or_default().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no whoami answer through {addr}:{port}: {}",
            d.text
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server(dir: &Path) -> Server {
    let corefile = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    \
                    proxyproto {\n        allow 127.0.0.2/32\n        default reject\n    }\n    whoami\n}\n";
    Server::start(dir, corefile)
}

#[test]
fn dnsdist_passes_the_client_over_udp_and_tcp() {
    let Some(dnsdist) = needs("dnsdist", installed("dnsdist"), "apt-get install dnsdist") else {
        return;
    };
    let dir = temp_dir("proxyproto-dnsdist");
    let s = server(&dir);
    let port = free_port();
    let conf = dir.join("dnsdist.conf");
    let text = format!(
        "setLocal(\"127.0.0.3:{port}\")\nsetSecurityPollSuffix(\"\")\n\
         newServer({{address=\"{}\", useProxyProtocol=true, source=\"127.0.0.2\"}})\n",
        s.dns
    );
    std::fs::write(&conf, text).expect("dnsdist.conf");
    let conf = conf.to_string_lossy().into_owned();
    let _dd = start(&dnsdist, &["--supervised", "--disable-syslog", "-C", &conf], &dir);
    assert_eq!(seen_through("127.0.0.3", port, false), "127.0.0.9");
    assert_eq!(seen_through("127.0.0.3", port, true), "127.0.0.9");
    assert_eq!(s.metric_sum("clusterdns_proxyproto_refused_total", ""), 0.0);
}

#[test]
fn haproxy_v1_and_v2_pass_the_client_over_tcp() {
    let Some(haproxy) = needs("haproxy", installed("haproxy"), "apt-get install haproxy") else {
        return;
    };
    let dir = temp_dir("proxyproto-haproxy");
    let s = server(&dir);
    let (v1, v2) = (free_port(), free_port());
    let text = format!(
        "global\n    maxconn 100\ndefaults\n    mode tcp\n    timeout connect 2s\n    timeout client 5s\n    \
         timeout server 5s\nfrontend v1\n    bind 127.0.0.4:{v1}\n    default_backend b1\nfrontend v2\n    \
         bind 127.0.0.4:{v2}\n    default_backend b2\nbackend b1\n    server s {0} send-proxy source 127.0.0.2\n\
         backend b2\n    server s {0} send-proxy-v2 source 127.0.0.2\n",
        s.dns
    );
    let conf = dir.join("haproxy.cfg");
    std::fs::write(&conf, text).expect("haproxy.cfg");
    let conf = conf.to_string_lossy().into_owned();
    let _hp = start(&haproxy, &["-f", &conf, "-db"], &dir);
    assert_eq!(seen_through("127.0.0.4", v1, true), "127.0.0.9");
    assert_eq!(seen_through("127.0.0.4", v2, true), "127.0.0.9");
}

/// A PROXY v2 header for a UDP client at 203.0.113.7:40000.
fn v2_header() -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x12, 0, 12, 203, 0, 113, 7, 127, 0, 0, 1, 0x9c, 0x40, 0, 53]);
    h
}

fn ask_raw(from: &str, to: std::net::SocketAddr, bytes: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let sock = UdpSocket::bind((from, 0)).expect("bind");
    sock.set_read_timeout(Some(wait)).expect("timeout");
    sock.send_to(bytes, to).expect("send");
    let mut buf = [0u8; 1500];
    sock.recv(&mut buf).ok().map(|n| buf[..n].to_vec())
}

#[test]
fn a_header_from_a_source_not_allowed_is_dropped_and_counted() {
    let dir = temp_dir("proxyproto-reject");
    let s = server(&dir);
    let query = common::query(0x1234, "who.example.", hickory_proto::rr::RecordType::A, None);
    let with_header = [v2_header(), query.clone()].concat();
    // allowed: answered, whoami names the header's client
    let reply = ask_raw("127.0.0.2", s.dns, &with_header, REPLY).expect("a reply from the allowed balancer");
    assert!(
        reply.windows(4).any(|w| w == [203, 0, 113, 7]),
        "whoami names 203.0.113.7"
    );
    // not allowed, no header: answered as ever
    let reply = ask_raw("127.0.0.5", s.dns, &query, REPLY).expect("a reply without a header");
    assert!(reply.windows(4).any(|w| w == [127, 0, 0, 5]));
    // not allowed, with a header: dropped, counted
    assert!(ask_raw("127.0.0.5", s.dns, &with_header, Duration::from_millis(800)).is_none());
    assert_eq!(
        s.metric_sum("clusterdns_proxyproto_refused_total", "transport=\"udp\""),
        1.0
    );
}
