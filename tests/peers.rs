//! Real upstreams: Debian's unbound, started by the test on loopback,
//! serving a test zone; clusterdns forwards to it — alone, and as
//! kubeadm's default Corefile with the demo cluster.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{rcode_name, tcp, temp_dir, udp, Server};
use hickory_proto::rr::RecordType;

struct Unbound(Child, std::net::SocketAddr);

impl Drop for Unbound {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// unbound on a free loopback port serving `example.org` locally.
fn unbound(dir: &Path) -> Option<Unbound> {
    let install = "apt-get install unbound (tests/run installs it)";
    let bin = common::needs("forwarding to unbound", common::installed("unbound"), install)?;
    let port = common::free_port();
    let conf = dir.join("unbound.conf");
    let body = format!(
        "server:\n  interface: 127.0.0.1\n  port: {port}\n  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"{d}\"\n  pidfile: \"{d}/unbound.pid\"\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  module-config: \"iterator\"\n  local-zone: \"example.org.\" static\n  local-data: \"www.example.org. 300 IN A 192.0.2.1\"\n  local-data: \"www.example.org. 300 IN AAAA 2001:db8::1\"\n  local-data: \"example.org. 300 IN SOA ns.example.org. h.example.org. 1 3600 600 86400 60\"\n  local-data-ptr: \"192.0.2.1 www.example.org.\"\n  local-zone: \"2.0.192.in-addr.arpa.\" static\n",
        d = dir.display()
    );
    std::fs::write(&conf, body).expect("write unbound.conf");
    let child = Command::new(&bin)
        .arg("-d")
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let u = Unbound(child, addr);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let q = common::query(1, "www.example.org.", RecordType::A, None);
        if common::udp_raw(addr, &q).is_some() {
            return Some(u);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("unbound did not start on {addr}");
}

#[test]
fn forwards_to_unbound_over_udp_and_tcp() {
    let dir = temp_dir("peer-unbound");
    let Some(up) = unbound(&dir) else { return };
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    forward . {}\n    cache 30\n}}\n",
        up.1
    );
    let server = Server::start(&dir, &text);
    let m = udp(server.dns, "www.example.org.", RecordType::A);
    assert_eq!(common::answer_lines(&m), ["www.example.org. 30 IN A 192.0.2.1"]);
    let m = tcp(server.dns, "www.example.org.", RecordType::AAAA);
    assert_eq!(m.answers.len(), 1);
    let m = udp(server.dns, "nothing.example.org.", RecordType::A);
    assert_eq!(rcode_name(&m), "NXDOMAIN");
    let dig = common::run(
        "dig",
        &["+short", "-p", &server.port(), "@127.0.0.1", "www.example.org", "A"],
    );
    assert_eq!(dig.trim(), "192.0.2.1");
}

#[test]
fn kubeadm_default_corefile_serves_the_cluster_and_forwards_the_rest() {
    let dir = temp_dir("peer-kubeadm");
    let Some(up) = unbound(&dir) else { return };
    let kubeadm =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/zones/kubeadm.Corefile")).expect("read");
    // Only what a test must change: ports, the snapshot source, the resolv.conf path.
    let text = kubeadm
        .replace(".:53 {", ".:0 {\n    bind 127.0.0.1")
        .replace("    ready\n", "    ready 127.0.0.1:0\n")
        .replace("lameduck 5s", "lameduck 1s")
        .replace("    health {", "    health 127.0.0.1:0 {")
        .replace("prometheus :9153", "prometheus 127.0.0.1:0")
        .replace(
            "pods insecure",
            &format!("pods insecure\n       snapshot {}", common::demo_cluster().display()),
        )
        .replace("forward . /etc/resolv.conf {", &format!("forward . {} {{", up.1));
    let server = Server::start(&dir, &text);
    let m = udp(server.dns, "kubernetes.default.svc.cluster.local.", RecordType::A);
    assert_eq!(rcode_name(&m), "NOERROR");
    assert_eq!(m.answers[0].ttl, 30);
    let m = udp(server.dns, "www.example.org.", RecordType::A);
    assert_eq!(common::answer_lines(&m), ["www.example.org. 30 IN A 192.0.2.1"]);
    // PTR outside the cluster falls through to the upstream
    let m = udp(server.dns, "1.2.0.192.in-addr.arpa.", RecordType::PTR);
    assert_eq!(common::answer_lines(&m).len(), 1, "{m:?}");
    // cluster names are not cached (disable success/denial cluster.local)
    let m = udp(server.dns, "missing.default.svc.cluster.local.", RecordType::A);
    assert_eq!(rcode_name(&m), "NXDOMAIN");
}
