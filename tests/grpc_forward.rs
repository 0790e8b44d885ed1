//! The `grpc` directive against real peers on loopback, asked with `dig`
//! at the front server:
//! - another clusterdns process serving a `grpc://` block, over TLS
//!   (tests/common/certs.rs certificates, `tls_servername`) and over
//!   plain HTTP/2 (h2c), with CoreDNS's `coredns_grpc_*` metrics under
//!   the `to` label;
//! - an independent gRPC server, grpcio with dnspython answers
//!   (tests/grpc_forward/upstream.py), counting the calls it served, and
//!   its NOT_FOUND read as NXDOMAIN; 32 queries at once ride one HTTP/2
//!   connection (`ss`);
//! - the same grpcio server on a unix socket (`grpc . unix://PATH`);
//! - an upstream that is down: the next one is asked; SERVFAIL when none
//!   answers within the query's 5 s budget (one that accepts the
//!   connection and never answers holds it to the end).
//!
//! Under `CI=true` a missing tool (dig, openssl, ss, the grpcio venv) fails
//! the test instead of skipping it.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::dig::dig_at;
use common::{certs, free_port, temp_dir, Server};
use hickory_proto::rr::RecordType;

const NAME: &str = "kubernetes.default.svc.cluster.local";
const WANT: &str = "10.96.0.1";

/// dig and openssl, or `None` (SKIP; a failure under CI).
fn tools(test: &str) -> Option<()> {
    for tool in ["dig", "openssl", "ss"] {
        common::needs(
            test,
            common::installed(tool),
            "apt-get install bind9-dnsutils openssl iproute2",
        )?;
    }
    Some(())
}

/// The `grpc://` server: the demo cluster over TLS on `tls` and h2c on `plain`.
fn backend(dir: &Path, tls: u16, plain: u16) -> Server {
    let cluster = common::demo_cluster();
    let block = |port: u16, inner: &str| {
        format!(
            "grpc://.:{port} {{\n    bind 127.0.0.1\n    {inner}\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
            cluster.display()
        )
    };
    let ready = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    whoami\n}\n";
    let tls_block = block(tls, &format!("tls {0}/srv.pem {0}/srv.key", dir.display()));
    Server::start(dir, &format!("{ready}{tls_block}{}", block(plain, "")))
}

/// A front server whose one block forwards everything with `grpc`.
fn front(dir: &Path, grpc: &str) -> Server {
    std::fs::create_dir_all(dir).expect("front dir");
    let conf =
        format!(".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    {grpc}\n}}\n");
    Server::start(dir, &conf)
}

#[test]
fn grpc_forwards_to_a_clusterdns_grpc_block_over_tls_and_h2c() {
    let test = "grpc_forwards_to_a_clusterdns_grpc_block_over_tls_and_h2c";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("grpc-forward-peer");
    certs::ca(&dir, "ca", "clusterdns test CA");
    certs::signed(&dir, "srv", "ca", "dns.test", certs::Usage::Server, false);
    let (tls, plain) = (free_port(), free_port());
    let _back = backend(&dir, tls, plain);
    let ca = dir.join("ca.pem");
    let secure = front(
        &dir.join("tls"),
        &format!(
            "grpc . 127.0.0.1:{tls} {{\n        tls {}\n        tls_servername dns.test\n    }}",
            ca.display()
        ),
    );
    for _ in 0..3 {
        let d = dig_at("127.0.0.1", secure.dns.port(), &[NAME, "A"]);
        assert_eq!(
            (d.status.as_str(), d.data()),
            ("NOERROR", vec![WANT.to_string()]),
            "{}",
            d.text
        );
    }
    let nx = dig_at("127.0.0.1", secure.dns.port(), &["nope.default.svc.cluster.local", "A"]);
    assert_eq!(nx.status, "NXDOMAIN", "{}", nx.text);
    // CoreDNS's families, `to` as CoreDNS writes it (IP:PORT)
    let to = format!("to=\"127.0.0.1:{tls}\"");
    assert_eq!(secure.metric(&format!("coredns_grpc_requests_total{{{to}}}")), 4.0);
    let noerror = secure.metric(&format!("coredns_grpc_responses_total{{rcode=\"NOERROR\",{to}}}"));
    assert_eq!(noerror, 3.0, "{}", secure.metrics());
    assert_eq!(
        secure.metric(&format!("coredns_grpc_responses_total{{rcode=\"NXDOMAIN\",{to}}}")),
        1.0
    );
    assert_eq!(
        secure.metric(&format!("coredns_grpc_request_duration_seconds_count{{{to}}}")),
        4.0
    );
    assert!(
        !secure
            .metrics()
            .contains("coredns_proxy_request_duration_seconds_count{"),
        "grpc is not forward"
    );
    let plugin = secure.metric_sum("coredns_dns_responses_total", "plugin=\"grpc\"");
    assert_eq!(plugin, 4.0, "the plugin label of its answers");
    // h2c: no tls, plain HTTP/2
    let h2c = front(&dir.join("h2c"), &format!("grpc cluster.local 127.0.0.1:{plain}"));
    let d = dig_at("127.0.0.1", h2c.dns.port(), &[NAME, "A"]);
    assert_eq!(
        (d.status.as_str(), d.data()),
        ("NOERROR", vec![WANT.to_string()]),
        "{}",
        d.text
    );
    // a TLS front at the h2c port, and one that trusts no CA of ours, get no answer
    let wrong = front(
        &dir.join("wrong"),
        &format!("grpc . 127.0.0.1:{tls} {{\n        tls_servername dns.test\n    }}"),
    );
    let d = dig_at("127.0.0.1", wrong.dns.port(), &[NAME, "A", "+time=10"]);
    assert_eq!(
        d.status, "SERVFAIL",
        "certificate not verified by system roots: {}",
        d.text
    );
}

/// The grpcio upstream, killed on drop.
struct Upstream {
    child: Child,
    port: u16,
    count: PathBuf,
}

impl Upstream {
    fn start(test: &str, dir: &Path) -> Option<Upstream> {
        Upstream::start_at(test, dir, None)
    }

    /// On 127.0.0.1, or on the unix socket `socket` when given.
    fn start_at(test: &str, dir: &Path, socket: Option<&Path>) -> Option<Upstream> {
        let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/grpc/bin/python");
        let have = if py.is_file() {
            Ok(py)
        } else {
            Err("no grpc venv".to_string())
        };
        let py = common::needs(
            test,
            have,
            "bash tests/run creates target/tools/grpc (pip grpcio dnspython)",
        )?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc_forward/upstream.py");
        let count = dir.join("calls");
        let mut child = Command::new(py)
            .arg(script)
            .arg(&count)
            .args(socket)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start upstream.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("upstream.py port");
        let port = line.trim().parse().expect("a port");
        Some(Upstream { child, port, count })
    }

    fn calls(&self) -> u64 {
        std::fs::read_to_string(&self.count)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn grpc_asks_a_grpcio_server_and_passes_over_an_upstream_that_is_down() {
    let test = "grpc_asks_a_grpcio_server_and_passes_over_an_upstream_that_is_down";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("grpc-forward-grpcio");
    let Some(up) = Upstream::start(test, &dir) else {
        return;
    };
    let down = free_port(); // nothing listens there: the connection is refused
    let grpc = format!(
        "grpc . 127.0.0.1:{down} 127.0.0.1:{} {{\n        policy sequential\n    }}",
        up.port
    );
    let server = front(&dir.join("front"), &grpc);
    for i in 1..=3 {
        let d = dig_at("127.0.0.1", server.dns.port(), &[&format!("q{i}.example.org"), "A"]);
        assert_eq!(
            (d.status.as_str(), d.data()),
            ("NOERROR", vec!["192.0.2.7".to_string()]),
            "{}",
            d.text
        );
        assert_eq!(up.calls(), i, "grpcio served every query (no cache in front)");
    }
    let d = dig_at("127.0.0.1", server.dns.port(), &["missing.example.org", "A"]);
    assert_eq!(
        d.status, "NXDOMAIN",
        "NOT_FOUND is NXDOMAIN, as CoreDNS reads it: {}",
        d.text
    );
    let to = format!("to=\"127.0.0.1:{}\"", up.port);
    assert_eq!(
        server.metric(&format!("coredns_grpc_requests_total{{{to}}}")),
        4.0,
        "{}",
        server.metrics()
    );
    // 32 queries at once: streams of the one HTTP/2 connection kept open
    let threads: Vec<_> = (0..32)
        .map(|i| {
            let at = server.dns;
            std::thread::spawn(move || common::udp(at, &format!("c{i}.example.org"), RecordType::A))
        })
        .collect();
    for t in threads {
        let m = t.join().expect("a reply");
        assert_eq!(common::answer_lines(&m).len(), 1, "{m:?}");
    }
    assert_eq!(up.calls(), 36, "grpcio served them all");
    let dst = format!("127.0.0.1:{}", up.port);
    let open = common::run("ss", &["-Htn", "state", "established", "dst", &dst]);
    assert_eq!(open.lines().count(), 1, "one connection to the upstream:\n{open}");
    assert_eq!(
        server.metric(&format!("coredns_grpc_requests_total{{to=\"127.0.0.1:{down}\"}}")),
        0.0
    );
}

#[test]
fn grpc_is_servfail_when_no_upstream_answers_within_the_budget() {
    let test = "grpc_is_servfail_when_no_upstream_answers_within_the_budget";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("grpc-forward-down");
    // accepts connections (the kernel's backlog) and never says a word
    let hole = TcpListener::bind("127.0.0.1:0").expect("bind");
    let hole_port = hole.local_addr().expect("addr").port();
    let down = free_port();
    let server = front(&dir, &format!("grpc . 127.0.0.1:{down} 127.0.0.1:{hole_port}"));
    let started = Instant::now();
    let d = dig_at("127.0.0.1", server.dns.port(), &["example.org", "A", "+time=15"]);
    assert_eq!(d.status, "SERVFAIL", "{}", d.text);
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "the silent upstream held the query to the budget"
    );
    let refused = front(&dir.join("refused"), &format!("grpc . 127.0.0.1:{down}"));
    let d = dig_at("127.0.0.1", refused.dns.port(), &["example.org", "A"]);
    assert_eq!(d.status, "SERVFAIL", "{}", d.text);
}

#[test]
fn grpc_asks_a_grpcio_server_on_a_unix_socket() {
    let test = "grpc_asks_a_grpcio_server_on_a_unix_socket";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("grpc-forward-unix");
    let socket = dir.join("g.sock");
    let Some(up) = Upstream::start_at(test, &dir, Some(&socket)) else {
        return;
    };
    let server = front(&dir.join("front"), &format!("grpc . unix://{}", socket.display()));
    for i in 1..=2 {
        let d = dig_at("127.0.0.1", server.dns.port(), &[&format!("u{i}.example.org"), "A"]);
        assert_eq!(
            (d.status.as_str(), d.data()),
            ("NOERROR", vec!["192.0.2.7".to_string()]),
            "{}",
            d.text
        );
        assert_eq!(up.calls(), i, "grpcio served it over the socket");
    }
    let d = dig_at("127.0.0.1", server.dns.port(), &["missing.example.org", "A"]);
    assert_eq!(d.status, "NXDOMAIN", "{}", d.text);
    let to = format!("to=\"unix://{}\"", socket.display());
    assert_eq!(
        server.metric(&format!("coredns_grpc_requests_total{{{to}}}")),
        3.0,
        "{}",
        server.metrics()
    );
}
