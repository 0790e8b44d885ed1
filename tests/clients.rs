//! Real clients against the real binary: dig and kdig over UDP and TCP,
//! pipelined TCP, truncation with and without EDNS, the glibc resolver
//! walking the ndots:5 search path inside a private network namespace, and
//! `autopath` walking a pod's search path past upstreams' NXDOMAIN.

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use common::{corefile, query, run, tcp_pipelined, temp_dir, Server};
use hickory_proto::rr::RecordType;

/// A dump with one headless service of 100 ready endpoints: its A answer
/// (100 × 16 bytes) fits neither 512 nor 1232 bytes.
fn big_cluster(dir: &Path) -> std::path::PathBuf {
    let mut eps = String::new();
    for i in 0..100 {
        let _ = write!(
            eps,
            "\n  - addresses: [\"10.1.{}.{}\"]\n    conditions: {{ready: true}}",
            i / 200,
            i % 200 + 1
        );
    }
    let text = format!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {{name: big}}\n\
- apiVersion: v1\n  kind: Service\n  metadata: {{name: many, namespace: big}}\n  spec: {{clusterIP: None, ports: [{{name: http, port: 80}}]}}\n\
- apiVersion: discovery.k8s.io/v1\n  kind: EndpointSlice\n  metadata:\n    name: many-1\n    namespace: big\n    labels: {{kubernetes.io/service-name: many}}\n  addressType: IPv4\n  ports: [{{name: http, port: 80, protocol: TCP}}]\n  endpoints:{eps}\n"
    );
    let path = dir.join("big.yaml");
    std::fs::write(&path, text).expect("write dump");
    path
}

#[test]
fn dig_udp_tcp_and_kdig() {
    let server = Server::start(&temp_dir("dig"), &corefile(&common::demo_cluster(), "ttl 30"));
    let port = server.port();
    let base = ["@127.0.0.1", "-p", &port, "+norecurse"];
    let short = |extra: &[&str]| run("dig", &[&base[..], &["+short"], extra].concat());
    assert_eq!(short(&["kubernetes.default.svc.cluster.local"]).trim(), "10.96.0.1");
    assert_eq!(
        short(&["+tcp", "kubernetes.default.svc.cluster.local"]).trim(),
        "10.96.0.1"
    );
    assert_eq!(
        short(&["AAAA", "web.shop.svc.cluster.local"]).trim(),
        "fd00:10:96::1234"
    );
    assert_eq!(
        short(&["-x", "10.96.0.1"]).trim(),
        "kubernetes.default.svc.cluster.local."
    );
    let full = run("dig", &[&base[..], &["nosuch.shop.svc.cluster.local"]].concat());
    assert!(
        full.contains("status: NXDOMAIN") && full.contains("flags: qr aa"),
        "{full}"
    );
    assert!(
        full.contains("IN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local."),
        "{full}"
    );
    assert!(
        full.contains("; EDNS: version: 0, flags:; udp: 1232"),
        "dig sends EDNS; we answer with OPT: {full}"
    );

    let kbase = ["@127.0.0.1", "-p", &port];
    let k = run(
        "kdig",
        &[&kbase[..], &["+short", "postgres-1.postgres.db.svc.cluster.local"]].concat(),
    );
    assert_eq!(k.trim(), "10.244.3.11");
    let k = run(
        "kdig",
        &[
            &kbase[..],
            &[
                "+tcp",
                "+short",
                "SRV",
                "_https._tcp.kubernetes.default.svc.cluster.local",
            ],
        ]
        .concat(),
    );
    assert_eq!(k.trim(), "0 100 443 kubernetes.default.svc.cluster.local.");
    // several queries over one kept-open TCP connection
    let k = run(
        "kdig",
        &[
            &kbase[..],
            &[
                "+tcp",
                "+keepopen",
                "+short",
                "kubernetes.default.svc.cluster.local",
                "cart.shop.svc.cluster.local",
                "prometheus.monitoring.svc.cluster.local",
            ],
        ]
        .concat(),
    );
    assert_eq!(
        k.split_whitespace().collect::<Vec<_>>(),
        ["10.96.0.1", "10.96.45.6", "10.96.90.9"],
        "{k}"
    );
}

#[test]
fn the_log_directive_writes_one_line_per_query() {
    let text = corefile(&common::demo_cluster(), "").replace("    ready", "    log\n    ready");
    let server = Server::start(&temp_dir("log"), &text);
    for _ in 0..2 {
        common::udp(server.dns, "Kubernetes.default.svc.cluster.local.", RecordType::A);
    }
    common::tcp(server.dns, "nosuch.svc.cluster.local.", RecordType::AAAA);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let lines = server.log.lock().map(|l| l.clone()).unwrap_or_default();
    // {name} is the lowercased name, as CoreDNS's request.Name().
    let udp = "\"A IN kubernetes.default.svc.cluster.local. udp ";
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("[INFO] 127.0.0.1:") && l.contains(udp) && l.contains("NOERROR qr,aa,rd"))
            .count(),
        2,
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"AAAA IN nosuch.svc.cluster.local. tcp ") && l.contains(" NXDOMAIN qr,aa,rd ")),
        "{lines:#?}"
    );
}

#[test]
fn tcp_pipelining_answers_every_query_on_one_connection() {
    let server = Server::start(&temp_dir("pipeline"), &corefile(&common::demo_cluster(), ""));
    let names = [
        "kubernetes.default.svc.cluster.local.",
        "web.shop.svc.cluster.local.",
        "nosuch.svc.cluster.local.",
        "cart.shop.svc.cluster.local.",
    ];
    let queries: Vec<Vec<u8>> = (0..40)
        .map(|i| query(1000 + i as u16, names[i % names.len()], RecordType::A, None))
        .collect();
    let replies = tcp_pipelined(server.dns, &queries);
    let mut ids: Vec<u16> = replies.iter().map(|m| m.metadata.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1000..1040).collect::<Vec<u16>>());
    for m in &replies {
        let name = m.queries[0].name().to_string();
        let want = if name.starts_with("nosuch") {
            "NXDOMAIN"
        } else {
            "NOERROR"
        };
        assert_eq!(common::rcode_name(m), want, "{name}");
    }
}

#[test]
fn truncation_without_edns_and_with_edns_and_complete_over_tcp() {
    let dir = temp_dir("trunc");
    let server = Server::start(&dir, &corefile(&big_cluster(&dir), ""));
    let port = server.port();
    let name = "many.big.svc.cluster.local";
    let plain = run(
        "dig",
        &["@127.0.0.1", "-p", &port, "+noedns", "+notcp", "+ignore", name],
    );
    assert!(
        plain.contains("flags: qr tc aa") || plain.contains("flags: qr aa tc"),
        "TC without EDNS: {plain}"
    );
    let (ans, size) = (count_answers(&plain), msg_size(&plain));
    assert!(
        ans > 0 && ans < 100 && size <= 512,
        "records that fit are kept: {ans} answers, {size} bytes"
    );
    let edns = run(
        "dig",
        &["@127.0.0.1", "-p", &port, "+bufsize=4096", "+notcp", "+ignore", name],
    );
    assert!(edns.contains(" tc"), "over 1232 bytes even with EDNS 4096: {edns}");
    assert!(msg_size(&edns) <= 1232, "capped at 1232: {edns}");
    let full = run("dig", &["@127.0.0.1", "-p", &port, "+tcp", name]);
    assert_eq!(count_answers(&full), 100, "complete over TCP");
    // and dig's default (retry over TCP on TC) gets everything too
    let retried = run("dig", &["@127.0.0.1", "-p", &port, "+noedns", name]);
    assert_eq!(count_answers(&retried), 100, "{retried}");
    // A truncated reply ends with its last whole record: glibc's and musl's
    // ns_initparse reject a datagram with bytes left over.
    let srv = format!("_http._tcp.{name}.");
    for (qname, qtype) in [(format!("{name}."), RecordType::A), (srv, RecordType::SRV)] {
        for edns in [None, Some(1232)] {
            let reply = common::udp_raw(server.dns, &query(7, &qname, qtype, edns)).expect("a UDP reply");
            let parsed = clusterdns::fuzzing::parse_strict(&reply)
                .unwrap_or_else(|e| panic!("{qname} {qtype} EDNS {edns:?}: {e}"));
            assert!(parsed.metadata.truncation, "{qname} {qtype} EDNS {edns:?}: TC");
            assert!(
                reply.len() <= edns.map_or(512, usize::from),
                "{qname}: {} bytes",
                reply.len()
            );
        }
    }
}

fn count_answers(dig: &str) -> usize {
    dig.split(", ANSWER: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn msg_size(dig: &str) -> usize {
    dig.split("MSG SIZE  rcvd: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// glibc's resolver through `getent`, in a private mount + network
/// namespace: the server listens on 127.0.0.1:53 there and a bind-mounted
/// resolv.conf points at it with the kubelet's search path.
#[test]
fn glibc_resolver_walks_the_search_path() {
    if !common::namespaces_or_skip("glibc_resolver_walks_the_search_path") {
        return;
    }
    let dir = temp_dir("glibc");
    let conf = dir.join("Corefile");
    let text = corefile(&common::demo_cluster(), "")
        .replace(".:0", ".:53")
        .replace("ready 127.0.0.1:0", "ready 127.0.0.1:8181");
    std::fs::write(&conf, text).expect("Corefile");
    let resolv = dir.join("resolv.conf");
    std::fs::write(&resolv, "nameserver 127.0.0.1\nsearch shop.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:1 attempts:1\n").expect("resolv.conf");
    let script = format!(
        r#"set -u
ip link set lo up
mount --bind {resolv} /etc/resolv.conf
{bin} -conf {conf} 2>{dir}/server.log &
pid=$!
for i in $(seq 1 100); do
  [ "$(cat < /dev/null > /dev/tcp/127.0.0.1/8181 && echo up)" = up ] 2>/dev/null && break
  sleep 0.1
done
sleep 0.5
echo "hosts-web: $(getent hosts web)"
echo "ahosts-web: $(getent ahosts web | awk '{{print $1}}' | sort -u | tr '\n' ' ')"
echo "hosts-cross-ns: $(getent hosts postgres-primary.db)"
echo "hosts-fqdn: $(getent hosts kubernetes.default.svc.cluster.local)"
echo "hosts-missing: $(getent hosts no-such-service; echo rc=$?)"
kill $pid
wait $pid 2>/dev/null
"#,
        resolv = resolv.display(),
        bin = env!("CARGO_BIN_EXE_clusterdns"),
        conf = conf.display(),
        dir = dir.display(),
    );
    let out = Command::new("unshare")
        .args(["-mn", "bash", "-c", &script])
        .output()
        .expect("run unshare");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    assert!(
        line("hosts-web:").starts_with("10.96.12.34") || line("hosts-web:").starts_with("fd00:10:96::1234"),
        "{text}\n{log}"
    );
    assert!(line("hosts-web:").contains("web.shop.svc.cluster.local"), "{text}");
    assert_eq!(line("ahosts-web:"), "10.96.12.34 fd00:10:96::1234", "{text}");
    assert!(line("hosts-cross-ns:").starts_with("10.96.77.1"), "{text}");
    assert!(line("hosts-fqdn:").starts_with("10.96.0.1"), "{text}");
    assert!(line("hosts-missing:").ends_with("rc=2"), "{text}");
}

/// `autopath`: glibc resolving an outside name from a pod costs one query
/// to the cluster server instead of the whole search walk.
#[test]
fn autopath_answers_the_search_walk_in_one_query() {
    if !common::namespaces_or_skip("autopath_answers_the_search_walk_in_one_query") {
        return;
    }
    let dir = temp_dir("autopath");
    let cluster = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: default}\n- apiVersion: v1\n  kind: Service\n  metadata: {name: kubernetes, namespace: default}\n  spec: {clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1], ports: [{name: https, port: 443, protocol: TCP}]}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: client, namespace: default}\n  status: {phase: Running, podIP: 127.0.0.1, podIPs: [{ip: 127.0.0.1}]}\n";
    std::fs::write(dir.join("cluster.yaml"), cluster).expect("cluster");
    let conf = dir.join("Corefile");
    let text = format!(
        ".:53 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:8181\n    prometheus 127.0.0.1:9153\n    kubernetes cluster.local {{\n        snapshot {}\n        pods verified\n    }}\n    autopath @kubernetes\n    forward . 127.0.0.1:5300\n}}\nexample.org:5300 {{\n    bind 127.0.0.1\n    hosts {{\n        192.0.2.44 www.example.org\n    }}\n}}\n",
        dir.join("cluster.yaml").display()
    );
    std::fs::write(&conf, text).expect("Corefile");
    let resolv = dir.join("resolv.conf");
    std::fs::write(&resolv, "nameserver 127.0.0.1\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:1 attempts:1\n").expect("resolv.conf");
    let script = format!(
        r#"set -u
ip link set lo up
mount --bind {resolv} /etc/resolv.conf
{bin} -conf {conf} 2>{dir}/server.log &
pid=$!
for i in $(seq 1 100); do
  [ "$(cat < /dev/null > /dev/tcp/127.0.0.1/8181 && echo up)" = up ] 2>/dev/null && break
  sleep 0.1
done
sleep 0.5
scrape() {{ exec 3<>/dev/tcp/127.0.0.1/9153; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3 > "$1"; exec 3<&-; }}
scrape {dir}/before.txt
echo "ahosts: $(getent ahosts www.example.org | head -1)"
scrape {dir}/after.txt
echo "short: $(getent ahosts kubernetes | head -1)"
kill $pid
wait $pid 2>/dev/null
"#,
        resolv = resolv.display(),
        bin = env!("CARGO_BIN_EXE_clusterdns"),
        conf = conf.display(),
        dir = dir.display(),
    );
    let out = Command::new("unshare")
        .args(["-mn", "bash", "-c", &script])
        .output()
        .expect("run unshare");
    let text = String::from_utf8_lossy(&out.stdout);
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    let ahosts = text
        .lines()
        .find_map(|l| l.strip_prefix("ahosts:"))
        .unwrap_or("")
        .trim()
        .to_string();
    assert!(ahosts.starts_with("192.0.2.44"), "{text}\n{log}");
    assert!(
        ahosts.ends_with("STREAM www.example.org"),
        "the canonical name is the outside name: {ahosts}"
    );
    let requests = |file: &str| -> f64 {
        std::fs::read_to_string(dir.join(file))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("coredns_dns_requests_total{server=\"dns://127.0.0.1:53\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let walked = requests("after.txt") - requests("before.txt");
    // glibc asks A and AAAA together: 2 queries, where the walk would be 8.
    assert!(
        (1.0..=2.0).contains(&walked),
        "{walked} queries reached the cluster server (without autopath: 8)\n{log}"
    );
    let after = std::fs::read_to_string(dir.join("after.txt")).unwrap_or_default();
    assert!(
        common::value(&after, "coredns_autopath_success_total") >= 1.0,
        "{after}"
    );
    assert!(
        text.contains("short: 10.96.0.1"),
        "a name of the pod's own namespace is answered directly: {text}"
    );
}

/// One query for `name` A from `from` (a pod's address on loopback) over
/// UDP or TCP, decoded; its reply must come within 5 s.
fn ask_as(from: &str, server: std::net::SocketAddr, name: &str, tcp: bool) -> hickory_proto::op::Message {
    use std::io::Write as _;
    let q = query(0x4444, name, RecordType::A, Some(1232));
    let local: std::net::SocketAddr = format!("{from}:0").parse().expect("source address");
    let limit = Some(std::time::Duration::from_secs(5));
    let reply = if tcp {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
        sock.bind(&local.into()).expect("bind");
        sock.connect(&server.into()).expect("connect");
        let mut s: std::net::TcpStream = sock.into();
        s.set_read_timeout(limit).expect("timeout");
        s.write_all(&common::framed(&q)).expect("write");
        common::read_frame(&mut s).expect("a TCP reply within 5 s")
    } else {
        let sock = std::net::UdpSocket::bind(local).expect("bind");
        sock.set_read_timeout(limit).expect("timeout");
        sock.send_to(&q, server).expect("send");
        let mut buf = vec![0u8; 65535];
        let n = sock.recv(&mut buf).expect("a UDP reply within 5 s");
        buf[..n].to_vec()
    };
    // strictly: the whole reply is the message, nothing left over
    use hickory_proto::serialize::binary::{BinDecodable as _, BinDecoder};
    let mut decoder = BinDecoder::new(&reply);
    let m = hickory_proto::op::Message::read(&mut decoder).expect("decodable reply");
    assert!(decoder.is_empty(), "{} bytes after the message", decoder.len());
    m
}

/// `m` has rcode `rcode` and echoes the client's question `name` (stub
/// resolvers drop a reply to another question).
fn replied(m: &hickory_proto::op::Message, rcode: &str, name: &str, how: &str) {
    assert_eq!(common::rcode_name(m), rcode, "{how}: {m:?}");
    let question = m.queries.first().map(|q| q.name().to_ascii());
    assert_eq!(question.as_deref(), Some(name), "{how}: the asked question");
}

/// `autopath` walks on past names the upstream does not know, as CoreDNS:
/// a pod's `a.default.svc.cluster.local.` goes `a.svc.cluster.local.` and
/// `a.cluster.local.` (NXDOMAIN here), then `a.example.org.` and
/// `a.example.com.` (NXDOMAIN upstream), then `a.com.`, whose address comes
/// back behind a CNAME from the asked name; a name every search domain
/// fails is the asked name's NXDOMAIN, with the cluster zone's SOA; `acl`
/// judges the names walked after an upstream's NXDOMAIN too (a blocked one
/// ends the walk REFUSED, as in CoreDNS); an upstream's SERVFAIL ends it.
/// Over UDP and TCP (which forwards over TCP).
#[test]
fn autopath_walks_on_past_upstream_nxdomain() {
    use common::stub::{Mode, Stub};
    use hickory_proto::op::ResponseCode;
    let dir = temp_dir("autopath-walk");
    let (nx, up) = (Stub::start(), Stub::start());
    nx.set(Mode::Rcode(ResponseCode::NXDomain));
    let cluster = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: default}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: client, namespace: default}\n  status: {phase: Running, podIP: 127.0.0.2, podIPs: [{ip: 127.0.0.2}]}\n";
    std::fs::write(dir.join("cluster.yaml"), cluster).expect("cluster");
    std::fs::write(dir.join("resolv.conf"), "search example.org example.com com\n").expect("resolv.conf");
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    acl b.example.com {{\n        block\n    }}\n    autopath {d}/resolv.conf\n    kubernetes cluster.local {{\n        snapshot {d}/cluster.yaml\n        pods verified\n    }}\n    forward example.org {nx}\n    forward example.com {nx}\n    forward . {up}\n}}\n",
        d = dir.display(),
        nx = nx.addr,
        up = up.addr,
    );
    let server = Server::start(&dir, &text);
    let names = |stub: &Stub| -> Vec<String> {
        let seen = stub.seen.lock().map(|s| s.clone()).unwrap_or_default();
        seen.iter()
            .filter_map(|m| m.queries.first().map(|q| q.name().to_ascii()))
            .collect()
    };
    // every reply echoes the client's question, whichever name ended the walk
    for tcp in [false, true] {
        let how = if tcp { "TCP" } else { "UDP" };
        let (nx_before, up_before) = (names(&nx).len(), names(&up).len());
        let m = ask_as("127.0.0.2", server.dns, "a.default.svc.cluster.local.", tcp);
        replied(&m, "NOERROR", "a.default.svc.cluster.local.", how);
        let chain: Vec<String> = m.answers.iter().map(ToString::to_string).collect();
        assert_eq!(
            chain,
            [
                "a.default.svc.cluster.local. 60 IN CNAME a.com.",
                "a.com. 60 IN A 192.0.2.1"
            ],
            "{how}: the CNAME from the asked name, then the answer"
        );
        assert_eq!(names(&nx)[nx_before..], ["a.example.org.", "a.example.com."], "{how}");
        assert_eq!(names(&up)[up_before..], ["a.com."], "{how}");

        // every name fails: `nx.` names are NXDOMAIN at the second upstream too
        let up_before = names(&up).len();
        let m = ask_as("127.0.0.2", server.dns, "nx.default.svc.cluster.local.", tcp);
        replied(&m, "NXDOMAIN", "nx.default.svc.cluster.local.", how);
        assert!(m.answers.is_empty(), "{how}: {m:?}");
        let soa: Vec<String> = m.authorities.iter().map(|r| r.name.to_ascii()).collect();
        assert_eq!(soa, ["cluster.local."], "{how}: the asked name's SOA");
        assert_eq!(
            names(&up)[up_before..],
            ["nx.com.", "nx."],
            "{how}: the walk ends at the root"
        );

        // `acl` blocks the name after the upstream's NXDOMAIN: the walk ends there
        let (nx_before, up_before) = (names(&nx).len(), names(&up).len());
        let m = ask_as("127.0.0.2", server.dns, "b.default.svc.cluster.local.", tcp);
        replied(&m, "REFUSED", "b.default.svc.cluster.local.", how);
        assert_eq!(names(&nx)[nx_before..], ["b.example.org."], "{how}");
        assert_eq!(names(&up).len(), up_before, "{how}: nothing after the blocked name");
    }
    // an upstream's SERVFAIL ends the walk: the client gets it, as from CoreDNS
    nx.set(Mode::ServFail);
    for tcp in [false, true] {
        let up_before = names(&up).len();
        let m = ask_as("127.0.0.2", server.dns, "c.default.svc.cluster.local.", tcp);
        replied(
            &m,
            "SERVFAIL",
            "c.default.svc.cluster.local.",
            if tcp { "TCP" } else { "UDP" },
        );
        assert_eq!(
            names(&up).len(),
            up_before,
            "tcp {tcp}: the walk ended at c.example.org."
        );
    }
}
