//! `transfer`: the real binary sends the cluster zone and `clusterset.local`
//! by AXFR over TCP, record by record what single queries answer (decoded
//! by hickory and by `kdig`); splits a zone of thousands of Services into
//! messages under 64 KiB; answers IXFR of the current serial with the SOA;
//! refuses clients not in `to` and AXFR over UDP; and BIND (`named`) as a
//! real secondary loads both zones and follows a Service's change when
//! NOTIFY tells it; a dead secondary holds up no other's NOTIFY.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{namespace, service};
use common::{installed, needs, rcode_name, read_frame, tcp, temp_dir, udp_raw, Server};
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use loadtest::fakeapi::FakeApi;
use serde_json::json;

/// Imports beside the demo cluster: a ClusterSetIP one and a headless one
/// from two clusters.
const IMPORTS: &str = r#"
---
apiVersion: v1
kind: List
items:
- apiVersion: multicluster.x-k8s.io/v1alpha1
  kind: ServiceImport
  metadata: {name: web, namespace: shop}
  spec: {type: ClusterSetIP, ips: [10.200.1.10], ports: [{name: http, port: 80, protocol: TCP}]}
- apiVersion: multicluster.x-k8s.io/v1alpha1
  kind: ServiceImport
  metadata: {name: peers, namespace: shop}
  spec: {type: Headless, ports: [{name: http, port: 80, protocol: TCP}]}
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata:
    name: peers-east
    namespace: shop
    labels: {multicluster.kubernetes.io/service-name: peers, multicluster.kubernetes.io/source-cluster: east}
  addressType: IPv4
  ports: [{name: http, port: 80, protocol: TCP}]
  endpoints: [{addresses: [10.244.12.1], hostname: peer-0, conditions: {ready: true}}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata:
    name: peers-west
    namespace: shop
    labels: {multicluster.kubernetes.io/service-name: peers, multicluster.kubernetes.io/source-cluster: west}
  addressType: IPv4
  ports: [{name: http, port: 80, protocol: TCP}]
  endpoints: [{addresses: [10.244.13.1], conditions: {ready: true}}]
"#;

fn corefile(source: &str, to: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local clusterset.local in-addr.arpa {{\n        {source}\n        multicluster clusterset.local\n    }}\n    transfer cluster.local clusterset.local {{\n        to {to}\n    }}\n}}\n"
    )
}

/// A transfer's messages as sent, each frame's length with the message.
struct Transfer {
    frames: Vec<(usize, Message)>,
}

impl Transfer {
    fn records(&self) -> Vec<&Record> {
        self.frames.iter().flat_map(|(_, m)| &m.answers).collect()
    }
}

/// Sends `request` over TCP from `from` and reads the reply messages until
/// the transfer ends (its closing SOA, or a message that is not NOERROR).
fn transfer_from(server: SocketAddr, from: IpAddr, request: &Message) -> Transfer {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket
        .bind(&SocketAddr::new(from, 0).into())
        .expect("bind the client address");
    socket
        .connect_timeout(&server.into(), Duration::from_secs(2))
        .expect("connect");
    let mut s: TcpStream = socket.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let bytes = request.to_vec().expect("encode");
    s.write_all(&common::framed(&bytes)).expect("send");
    let mut frames = Vec::new();
    let mut soas = 0;
    for _ in 0..10_000 {
        let frame = read_frame(&mut s).expect("a transfer message");
        let m = Message::from_vec(&frame).expect("decodable");
        soas += m.answers.iter().filter(|r| r.record_type() == RecordType::SOA).count();
        let ended = rcode_name(&m) != "NOERROR" || soas >= 2 || (soas == 1 && frames.is_empty() && is_ixfr_current(&m));
        frames.push((frame.len(), m));
        if ended {
            return Transfer { frames };
        }
    }
    panic!("the transfer did not end within 10,000 messages");
}

/// An IXFR answer holding the SOA alone (the client is current).
fn is_ixfr_current(m: &Message) -> bool {
    m.queries.first().is_some_and(|q| q.query_type() == RecordType::IXFR) && m.answers.len() == 1
}

fn request(zone: &str, qtype: RecordType, held: Option<u32>) -> Message {
    let mut m = Message::new(0x5151, MessageType::Query, OpCode::Query);
    let zone = Name::from_ascii(zone).expect("zone");
    m.add_query(Query::query(zone.clone(), qtype));
    if let Some(serial) = held {
        let ns = Name::from_ascii("ns.example.").expect("name");
        let soa = hickory_proto::rr::rdata::SOA::new(ns.clone(), ns, serial, 1, 1, 1, 1);
        m.add_authority(Record::from_rdata(zone, 0, RData::SOA(soa)));
    }
    m
}

fn axfr(server: &Server, zone: &str) -> Transfer {
    transfer_from(
        server.dns,
        [127, 0, 0, 1].into(),
        &request(zone, RecordType::AXFR, None),
    )
}

fn snapshot_server(tag: &str, to: &str) -> Server {
    let dir = temp_dir(tag);
    let demo = std::fs::read_to_string(common::demo_cluster()).expect("demo cluster");
    let file = dir.join("cluster.yaml");
    std::fs::write(&file, format!("{demo}{IMPORTS}")).expect("write snapshot");
    Server::start(&dir, &corefile(&format!("snapshot {}", file.display()), to))
}

/// The records of a transfer by (name, type), as zone-file lines.
fn by_name(records: &[&Record]) -> BTreeMap<(String, RecordType), Vec<String>> {
    let mut all: BTreeMap<(String, RecordType), Vec<String>> = BTreeMap::new();
    for r in records {
        let key = (r.name.to_string().to_lowercase(), r.record_type());
        all.entry(key).or_default().push(r.to_string());
    }
    all
}

#[test]
fn the_zones_transfer_record_by_record_as_queries_answer_them() {
    let server = snapshot_server("xfer-records", "127.0.0.1");
    for (zone, must) in [
        (
            "cluster.local.",
            &[
                ("ns.dns.cluster.local.", RecordType::A),
                ("dns-version.cluster.local.", RecordType::TXT),
                ("postgres.db.svc.cluster.local.", RecordType::A),
                ("postgres-0.postgres.db.svc.cluster.local.", RecordType::A),
                ("_postgres._tcp.postgres.db.svc.cluster.local.", RecordType::SRV),
                ("web.shop.svc.cluster.local.", RecordType::AAAA),
                ("payments.shop.svc.cluster.local.", RecordType::CNAME),
                ("10-244-1-10.web.shop.svc.cluster.local.", RecordType::A),
            ][..],
        ),
        (
            "clusterset.local.",
            &[
                ("ns.dns.clusterset.local.", RecordType::A),
                ("dns-version.clusterset.local.", RecordType::TXT),
                ("web.shop.svc.clusterset.local.", RecordType::A),
                ("_http._tcp.web.shop.svc.clusterset.local.", RecordType::SRV),
                ("peers.shop.svc.clusterset.local.", RecordType::A),
                ("peer-0.east.peers.shop.svc.clusterset.local.", RecordType::A),
                ("10-244-13-1.west.peers.shop.svc.clusterset.local.", RecordType::A),
            ][..],
        ),
    ] {
        let t = axfr(&server, zone);
        let records = t.records();
        let soa = tcp(server.dns, zone, RecordType::SOA).answers.remove(0).to_string();
        assert_eq!(
            records.first().map(|r| r.to_string()),
            Some(soa.clone()),
            "{zone}: SOA first, as queries answer it"
        );
        assert_eq!(records.last().map(|r| r.to_string()), Some(soa), "{zone}: and last");
        assert_eq!(
            records[1].to_string(),
            format!("{zone} 5 IN NS ns.dns.{zone}"),
            "the apex NS"
        );
        let middle = &records[1..records.len() - 1];
        assert!(middle.iter().all(|r| r.record_type() != RecordType::SOA));
        let names = by_name(middle);
        for (name, qtype) in must {
            assert!(
                names.contains_key(&(name.to_string(), *qtype)),
                "{zone}: no {name} {qtype}:\n{names:#?}"
            );
        }
        for ((name, qtype), mut transferred) in names {
            let reply = tcp(server.dns, &name, qtype);
            let mut answered: Vec<String> = reply
                .answers
                .iter()
                .filter(|r| r.name.to_string().eq_ignore_ascii_case(&name) && r.record_type() == qtype)
                .map(ToString::to_string)
                .collect();
            transferred.sort();
            answered.sort();
            assert_eq!(transferred, answered, "{name} {qtype}: transferred vs answered");
        }
    }
    // kdig takes the same zone, record for record.
    if let Some(kdig) = needs("transfer kdig", installed("kdig"), "apt-get install knot-dnsutils") {
        let out = Command::new(kdig)
            .args([
                "-p",
                &server.port(),
                "@127.0.0.1",
                "AXFR",
                "cluster.local.",
                "+noall",
                "+answer",
            ])
            .output()
            .expect("run kdig");
        let lines = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("\tIN\t"))
            .count();
        assert_eq!(
            lines,
            axfr(&server, "cluster.local.").records().len(),
            "kdig's record count"
        );
    }
}

#[test]
fn ixfr_refusals_and_udp_follow_coredns() {
    let server = snapshot_server("xfer-refuse", "127.0.0.1");
    let zone = "cluster.local.";
    let full = axfr(&server, zone).records().len();
    let serial = match &tcp(server.dns, zone, RecordType::SOA).answers[0].data {
        RData::SOA(soa) => soa.serial,
        other => panic!("not a SOA: {other:?}"),
    };
    let local = [127, 0, 0, 1].into();
    let current = transfer_from(server.dns, local, &request(zone, RecordType::IXFR, Some(serial)));
    assert_eq!(current.frames.len(), 1);
    assert_eq!(current.records().len(), 1, "IXFR of the current serial: the SOA alone");
    let old = transfer_from(server.dns, local, &request(zone, RecordType::IXFR, Some(serial - 10)));
    assert_eq!(
        old.records().len(),
        full,
        "IXFR of an older serial: the whole zone, as AXFR"
    );
    // A client not in `to` (127.0.0.2): REFUSED, nothing of the zone.
    let refused = transfer_from(
        server.dns,
        [127, 0, 0, 2].into(),
        &request(zone, RecordType::AXFR, None),
    );
    assert_eq!(refused.frames.len(), 1);
    assert_eq!(rcode_name(&refused.frames[0].1), "REFUSED");
    assert!(refused.records().is_empty());
    // Over UDP: REFUSED, as CoreDNS answers (transfers are TCP only).
    let udp = udp_raw(server.dns, &common::query(9, zone, RecordType::AXFR, None)).expect("a reply");
    assert_eq!(rcode_name(&Message::from_vec(&udp).expect("decodes")), "REFUSED");
    // A zone of the block that is not transferred (a reverse zone): REFUSED.
    let reverse = transfer_from(server.dns, local, &request("in-addr.arpa.", RecordType::AXFR, None));
    assert_eq!(rcode_name(&reverse.frames[0].1), "REFUSED");
    let metrics = server.metrics();
    let count = |result: &str| {
        common::sum_of(
            &metrics,
            "clusterdns_transfer_requests_total",
            &format!("zone=\"cluster.local.\",result=\"{result}\""),
        )
    };
    assert_eq!(
        (count("transferred"), count("current"), count("refused")),
        (2.0, 1.0, 1.0)
    );
    let transfers = common::sum_of(&metrics, "coredns_dns_responses_total", "plugin=\"transfer\"");
    assert_eq!(
        transfers, 3.0,
        "the served transfers count in coredns_dns_responses_total"
    );
    if let Some(verdict) = common::promtool_check(&metrics, &temp_dir("xfer-metrics").join("metrics.txt")) {
        verdict.expect("promtool accepts the page with the transfer families");
    }
}

/// `acl` judges a transfer request before `transfer` does (CoreDNS's
/// plugin order; its README restricts transfers this way).
#[test]
fn acl_judges_transfer_requests_first() {
    let dir = temp_dir("xfer-acl");
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    acl cluster.local {{\n        allow type AXFR net 127.0.0.1/32\n        block type AXFR IXFR net *\n    }}\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n    transfer {{\n        to *\n    }}\n}}\n",
        common::demo_cluster().display()
    );
    let server = Server::start(&dir, &text);
    let allowed = transfer_from(
        server.dns,
        [127, 0, 0, 1].into(),
        &request("cluster.local.", RecordType::AXFR, None),
    );
    assert!(allowed.records().len() > 10, "127.0.0.1 may transfer");
    for from in [[127, 0, 0, 2], [127, 0, 0, 1]] {
        let qtype = if from[3] == 2 {
            RecordType::AXFR
        } else {
            RecordType::IXFR
        };
        let denied = transfer_from(server.dns, from.into(), &request("cluster.local.", qtype, Some(1)));
        assert_eq!(
            rcode_name(&denied.frames[0].1),
            "REFUSED",
            "{from:?} {qtype}: blocked by the acl"
        );
        assert!(denied.records().is_empty());
    }
}

#[test]
fn a_zone_of_thousands_of_services_is_split_under_64_kib() {
    let dir = temp_dir("xfer-big");
    let mut items = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "big"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-dns", "namespace": "kube-system"},
               "spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}}),
    ];
    const SERVICES: usize = 4000;
    for i in 0..SERVICES {
        let ip = format!("10.97.{}.{}", i / 250, i % 250 + 1);
        items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("service-number-{i}"), "namespace": "big"},
                          "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}));
    }
    let file = dir.join("cluster.json");
    std::fs::write(
        &file,
        json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .expect("write");
    let server = Server::start(&dir, &corefile(&format!("snapshot {}", file.display()), "*"));
    let t = axfr(&server, "cluster.local.");
    assert!(t.frames.len() > 3, "{} messages", t.frames.len());
    for (len, m) in &t.frames {
        assert!(*len <= 65_535, "a message of {len} bytes");
        assert_eq!(rcode_name(m), "NOERROR");
        assert!(m.metadata.authoritative);
    }
    let records = t.records();
    let addresses = records
        .iter()
        .filter(|r| r.record_type() == RecordType::A && r.name.to_string().contains(".big."))
        .count();
    assert_eq!(addresses, SERVICES, "every Service's A record");
    // A, SRV and the named port's SRV per Service; the apex SOA twice, NS,
    // its glue, dns-version; kube-dns's A, SRV and _dns._udp SRV.
    assert_eq!(records.len(), 3 * SERVICES + 5 + 3);
}

/// `named` from Debian's bind9, killed when dropped.
struct Named(Child);

impl Drop for Named {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_named(named: &Path, dir: &Path, port: u16, primary: SocketAddr) -> Named {
    let zone = |name: &str| {
        format!(
            "zone \"{name}\" {{\n    type secondary;\n    primaries {{ {} port {}; }};\n    file \"{name}.db\";\n}};\n",
            primary.ip(),
            primary.port()
        )
    };
    let conf = format!(
        "options {{\n    directory \"{d}\";\n    pid-file \"{d}/named.pid\";\n    listen-on port {port} {{ 127.0.0.1; }};\n    listen-on-v6 {{ none; }};\n    recursion no;\n    dnssec-validation no;\n    notify no;\n}};\ncontrols {{ }};\n{}{}",
        zone("cluster.local"),
        zone("clusterset.local"),
        d = dir.display()
    );
    let path = dir.join("named.conf");
    std::fs::write(&path, conf).expect("write named.conf");
    let log = std::fs::File::create(dir.join("named.log")).expect("named log");
    let child = Command::new(named)
        .args(["-g", "-u", "root", "-c"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start named");
    Named(child)
}

/// What `named` answers for `name` A (sorted), polled until it is `want`
/// or `limit` passes; the last answer.
fn named_until(port: u16, name: &str, want: &[&str], limit: Duration) -> Vec<String> {
    let server = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    loop {
        let reply =
            udp_raw(server, &common::query(3, name, RecordType::A, None)).and_then(|b| Message::from_vec(&b).ok());
        let mut got: Vec<String> = reply
            .iter()
            .flat_map(|m| m.answers.iter().map(|r| r.data.to_string()))
            .collect();
        got.sort();
        if got == want || started.elapsed() > limit {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bind_is_a_real_secondary_that_follows_notify() {
    let Some(named) = needs("transfer bind", installed("named"), "apt-get install bind9") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = rt.block_on(FakeApi::start()).expect("fake api");
    for ns in ["default", "kube-system", "shop"] {
        api.put("namespaces", namespace(ns));
    }
    api.put("services", service("kube-system", "kube-dns", "10.96.0.10"));
    api.put("services", service("shop", "web", "10.96.1.1"));
    api.put(
        "serviceimports",
        json!({"metadata": {"name": "web", "namespace": "shop"},
               "spec": {"type": "ClusterSetIP", "ips": ["10.200.0.1"], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}),
    );
    let port = common::free_port();
    let dir = temp_dir("xfer-bind");
    let server = Server::start(
        &dir,
        &corefile(&format!("endpoint {}", api.url()), &format!("127.0.0.1:{port}")),
    );
    let _named = start_named(&named, &dir, port, server.dns);
    let limit = Duration::from_secs(20);
    let loaded = named_until(port, "web.shop.svc.cluster.local.", &["10.96.1.1"], limit);
    let log = || std::fs::read_to_string(dir.join("named.log")).unwrap_or_default();
    assert_eq!(loaded, ["10.96.1.1"], "named loads cluster.local by AXFR:\n{}", log());
    let set = named_until(port, "web.shop.svc.clusterset.local.", &["10.200.0.1"], limit);
    assert_eq!(set, ["10.200.0.1"], "and clusterset.local:\n{}", log());
    // The Service changes: NOTIFY, and named transfers again (its own
    // refresh would wait the SOA's 7200 s).
    api.put("services", service("shop", "web", "10.96.1.2"));
    let followed = named_until(port, "web.shop.svc.cluster.local.", &["10.96.1.2"], limit);
    assert_eq!(followed, ["10.96.1.2"], "named follows the NOTIFY:\n{}", log());
    assert!(log().contains("received notify for zone 'cluster.local'"), "{}", log());
    let accepted = common::sum_of(
        &server.metrics(),
        "clusterdns_transfer_notifies_total",
        "result=\"accepted\"",
    );
    assert!(accepted >= 2.0, "NOTIFY counted as accepted: {accepted}");
}

/// A NOTIFY read from `socket` within 50 ms, answered NOERROR when
/// `answer`: whether one came.
fn take_notify(socket: &std::net::UdpSocket, answer: bool) -> bool {
    let mut buf = [0u8; 512];
    let Ok((n, from)) = socket.recv_from(&mut buf) else {
        return false;
    };
    let Ok(m) = Message::from_vec(&buf[..n]) else {
        return false;
    };
    if m.metadata.op_code != OpCode::Notify {
        return false;
    }
    if answer {
        let mut reply = Message::new(m.metadata.id, MessageType::Response, OpCode::Notify);
        reply.metadata.authoritative = true;
        reply.add_queries(m.queries.clone());
        socket.send_to(&reply.to_vec().expect("encode"), from).expect("answer");
    }
    true
}

/// Two secondaries, one that never answers: the one that does is notified
/// of each change without waiting for the dead one's tries. Each answered
/// NOTIFY is followed by a Service change. Both zones are notified, so
/// the dead secondary's twelfth packet is its second round's last try; by
/// then rounds shared by every secondary (each zone's tries awaited in
/// turn) would have let the live one see four NOTIFYs at most.
#[test]
fn a_dead_secondary_holds_up_no_other() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = rt.block_on(FakeApi::start()).expect("fake api");
    for ns in ["default", "kube-system", "shop"] {
        api.put("namespaces", namespace(ns));
    }
    api.put("services", service("kube-system", "kube-dns", "10.96.0.10"));
    api.put("services", service("shop", "web", "10.96.1.1"));
    let bind = || {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        s.set_read_timeout(Some(Duration::from_millis(50))).expect("timeout");
        s
    };
    let (dead, live) = (bind(), bind());
    let addr = |s: &std::net::UdpSocket| s.local_addr().expect("addr").to_string();
    let dir = temp_dir("xfer-dead");
    let to = format!("{} {}", addr(&dead), addr(&live));
    let _server = Server::start(&dir, &corefile(&format!("endpoint {}", api.url()), &to));
    let (mut dead_packets, mut live_notifies) = (0, 0);
    let started = Instant::now();
    while dead_packets < 12 && started.elapsed() < Duration::from_secs(60) {
        dead_packets += usize::from(take_notify(&dead, false));
        if take_notify(&live, true) {
            live_notifies += 1;
            api.put("services", service("shop", "web", &format!("10.96.2.{live_notifies}")));
        }
    }
    assert_eq!(
        dead_packets, 12,
        "the dead secondary is tried three times a zone and round"
    );
    assert!(
        live_notifies >= 6,
        "the live secondary was notified {live_notifies} times while the dead one took 12"
    );
}
