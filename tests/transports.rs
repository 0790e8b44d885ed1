//! `tls://` (DNS over TLS), `https://` (DNS over HTTPS) and `quic://` (DNS
//! over QUIC) server blocks end to end: the real binary asked by real
//! clients (`kdig +tls`/`+https`, BIND's `dig +tls`/`+https`, `curl
//! --http2` GET and POST, plain HTTP behind a proxy, dnspython's DoQ and
//! aioquic from tests/run's pinned venv), with certificates made by openssl
//! at test time.
//!
//! Cases: answers over every client with the scheme in the metrics'
//! `server` label; mutual TLS (no client certificate: no answer; one the
//! CA signed: an answer); an oversized GET `?dns=` (CVE-2026-32936) and
//! DNS UPDATE over DoH (CVE-2026-86003: NOTIMP, as over plain DNS);
//! stalled handshakes closed and counted, an idle connection giving way
//! at `https { max_connections }`; certificates rotated by a plain rename and by a Secret
//! volume's `..data` symlink swap, a broken new certificate kept out, and
//! by a Corefile reload naming other files;
//! DoQ answers, UPDATE over DoQ NOTIMP, and 20,000 streams that send a
//! byte and never finish (CVE-2026-32934) leave memory flat and answers
//! flowing; gRPC (grpcio, over TLS and plain HTTP/2) answering, UPDATE
//! NOTIMP, a message over 65,535 bytes RESOURCE_EXHAUSTED, another method
//! UNIMPLEMENTED, `grpc_server { max_connections }`; DNS over HTTP/3
//! (dnspython's DoH3 and aioquic) answering GET and POST, UPDATE NOTIMP,
//! oversized GETs 431, a body over a message 413, a 30 MB head leaving
//! memory flat; a 64 KB compression bomb over gRPC and DoH3 raising the
//! peak RSS by under 10 MiB (CVE-2026-82399); `clusterdns check` printing
//! the directives and refusing what it must.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{certs, free_port, temp_dir, Server, REPLY};

const NAME: &str = "kubernetes.default.svc.cluster.local";
const WANT: &str = "10.96.0.1";

/// The tools these tests need, or `None` (SKIP; a failure under CI).
fn tools(test: &str) -> Option<()> {
    let install = "apt-get install knot-dnsutils bind9-dnsutils curl openssl (tests/run installs them)";
    for tool in ["kdig", "dig", "curl", "openssl"] {
        common::needs(test, common::installed(tool), install)?;
    }
    Some(())
}

/// A test CA (`ca.pem`), a server certificate for `dns.test` and
/// 127.0.0.1 (`srv.pem`, `srv.key`) and a client certificate (`client.*`).
fn certificates(dir: &Path) {
    certs::ca(dir, "ca", "clusterdns test CA");
    certs::signed(dir, "srv", "ca", "dns.test", certs::Usage::Server, false);
    certs::signed(dir, "client", "ca", "client.test", certs::Usage::Client, false);
}

/// A server block of `scheme` on 127.0.0.1:`port` answering the demo cluster.
fn block(scheme: &str, port: u16, inner: &str) -> String {
    format!(
        "{scheme}://.:{port} {{\n    bind 127.0.0.1\n    {inner}\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
        common::demo_cluster().display()
    )
}

/// The plain block the test harness waits on (its UDP address, `ready`,
/// `prometheus`), then `more`.
fn corefile(more: &str) -> String {
    let plain = block("dns", 0, "ready 127.0.0.1:0\n    prometheus 127.0.0.1:0");
    format!("{plain}{more}")
}

/// Runs `cmd args` in `dir`; its stdout (and stderr after it).
fn output(dir: &Path, cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    printed(&out)
}

/// What a finished command printed: its stdout, then its stderr.
fn printed(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `kdig`/`dig` asking `NAME` at 127.0.0.1:`port` with `args`: the answer's addresses.
fn ask(dir: &Path, cmd: &str, port: u16, args: &[&str]) -> String {
    let p = port.to_string();
    let base = ["@127.0.0.1", "-p", p.as_str(), "+short", "+time=5", NAME];
    output(dir, cmd, &[&base[..], args].concat())
}

/// `curl` against `https://dns.test:PORT/dns-query...` (or plain `http`),
/// trusting `ca.pem`; returns "STATUS VERSION" then the body as hex.
fn curl(dir: &Path, port: u16, url_tail: &str, args: &[&str]) -> String {
    let scheme = if args.contains(&"--http2-prior-knowledge") {
        "http"
    } else {
        "https"
    };
    let url = format!("url = \"{scheme}://dns.test:{port}{url_tail}\"\n");
    std::fs::write(dir.join("curl.cfg"), url).expect("curl config");
    let resolve = format!("dns.test:{port}:127.0.0.1");
    let base = [
        "-s",
        "-K",
        "curl.cfg",
        "--cacert",
        "ca.pem",
        "--resolve",
        &resolve,
        "-o",
        "body",
        "-w",
        "%{http_code} %{http_version}",
    ];
    let status = output(dir, "curl", &[&base[..], args].concat());
    let body = std::fs::read(dir.join("body")).unwrap_or_default();
    let _ = std::fs::remove_file(dir.join("body"));
    format!(
        "{status} {}",
        body.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// The wire query for `NAME` A (ID 0, as RFC 8484 asks of GET).
fn wire_query(opcode: hickory_proto::op::OpCode) -> Vec<u8> {
    use hickory_proto::op::{Message, MessageType, Query};
    use hickory_proto::rr::{Name, RecordType};
    let mut m = Message::new(0, MessageType::Query, opcode);
    m.add_query(Query::query(Name::from_ascii(NAME).expect("name"), RecordType::A));
    m.to_vec().expect("encode")
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn dot_and_doh_answer_every_client_through_the_same_path() {
    let test = "dot_and_doh_answer_every_client_through_the_same_path";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-answer");
    certificates(&dir);
    let (tls, https, plain) = (free_port(), free_port(), free_port());
    let more = [
        block("tls", tls, "tls srv.pem srv.key"),
        block("https", https, "tls srv.pem srv.key"),
        block("https", plain, "https {\n        max_connections 10\n    }"),
    ];
    let server = Server::start(&dir, &corefile(&more.concat()));
    let verified = ["+tls-ca=ca.pem", "+tls-hostname=dns.test"];
    assert_eq!(ask(&dir, "kdig", tls, &verified).trim(), WANT, "kdig +tls");
    assert_eq!(ask(&dir, "dig", tls, &["+tls"]).trim(), WANT, "dig +tls");
    let https_args = [&verified[..], &["+https"]].concat();
    assert_eq!(ask(&dir, "kdig", https, &https_args).trim(), WANT, "kdig +https");
    let get = [&https_args[..], &["+https-get"]].concat();
    assert_eq!(ask(&dir, "kdig", https, &get).trim(), WANT, "kdig +https-get");
    assert_eq!(ask(&dir, "dig", https, &["+https"]).trim(), WANT, "dig +https");
    let query = wire_query(hickory_proto::op::OpCode::Query);
    let answer = "0a600001"; // 10.96.0.1 in the body
    let got = curl(
        &dir,
        https,
        &format!("/dns-query?dns={}", base64url(&query)),
        &["--http2"],
    );
    assert!(
        got.starts_with("200 2 ") && got.ends_with(answer),
        "curl --http2 GET: {got}"
    );
    std::fs::write(dir.join("q.bin"), &query).expect("query file");
    let post = [
        "--http2",
        "-H",
        "content-type: application/dns-message",
        "--data-binary",
        "@q.bin",
    ];
    let got = curl(&dir, https, "/dns-query", &post);
    assert!(
        got.starts_with("200 2 ") && got.ends_with(answer),
        "curl --http2 POST: {got}"
    );
    let got = curl(&dir, https, "/dns-query", &[&post[1..], &["--http1.1"]].concat());
    assert!(
        got.starts_with("200 1.1 ") && got.ends_with(answer),
        "curl --http1.1 POST: {got}"
    );
    // Without `tls`: plain HTTP/2 for a TLS-terminating proxy in front.
    let got = curl(
        &dir,
        plain,
        "/dns-query",
        &[&post[1..], &["--http2-prior-knowledge"]].concat(),
    );
    assert!(
        got.starts_with("200 2 ") && got.ends_with(answer),
        "plain h2c POST: {got}"
    );
    let metrics = server.metrics();
    for label in [format!("tls://127.0.0.1:{tls}"), format!("https://127.0.0.1:{https}")] {
        let having = format!("server=\"{label}\",zone=\".\"");
        let n = common::sum_of(&metrics, "coredns_dns_requests_total", &having);
        assert!(n >= 2.0, "{label}: {n} requests counted\n{metrics}");
    }
}

#[test]
fn mutual_tls_answers_only_a_client_the_ca_signed() {
    let test = "mutual_tls_answers_only_a_client_the_ca_signed";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-mtls");
    certificates(&dir);
    let tls = free_port();
    let _server = Server::start(&dir, &corefile(&block("tls", tls, "tls srv.pem srv.key ca.pem")));
    let verified = ["+tls-ca=ca.pem", "+tls-hostname=dns.test"];
    let without = ask(&dir, "kdig", tls, &verified);
    assert!(
        !without.contains(WANT),
        "answered without a client certificate: {without}"
    );
    let with = [&verified[..], &["+tls-certfile=client.pem", "+tls-keyfile=client.key"]].concat();
    assert_eq!(
        ask(&dir, "kdig", tls, &with).trim(),
        WANT,
        "with the client certificate"
    );
}

/// A DoH query the block forwards is answered with the upstream's reply
/// (the forwarding task's answer comes back on the query's own channel):
/// here the upstream is this server's plain block, which answers `NAME`.
#[test]
fn doh_answers_what_it_forwards() {
    let test = "doh_answers_what_it_forwards";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-doh-forward");
    certificates(&dir);
    let https = free_port();
    let upstream = Server::start(&dir, &corefile(""));
    let doh = format!(
        "https://.:{https} {{\n    bind 127.0.0.1\n    forward . {}\n}}\n",
        upstream.dns
    );
    let dir2 = dir.join("front");
    std::fs::create_dir_all(&dir2).expect("dir");
    let _front = Server::start(&dir2, &corefile(&doh));
    let tail = format!(
        "/dns-query?dns={}",
        base64url(&wire_query(hickory_proto::op::OpCode::Query))
    );
    let got = curl(&dir, https, &tail, &["--http2-prior-knowledge"]);
    let octets = WANT.split('.').map(|o| o.parse::<u8>().expect("octet"));
    let want: String = octets.map(|o| format!("{o:02x}")).collect();
    assert!(
        got.starts_with("200 2 ") && got.ends_with(&want),
        "forwarded answer over DoH: {got}"
    );
}

/// `tls { keylog FILE }`: the secrets clusterdns writes are the ones the
/// client's own TLS library (kdig's GnuTLS, `SSLKEYLOGFILE`) logged for the
/// same session, line for line.
#[test]
fn keylog_writes_the_sessions_secrets_as_the_client_sees_them() {
    let test = "keylog_writes_the_sessions_secrets_as_the_client_sees_them";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-keylog");
    certificates(&dir);
    let tls = free_port();
    let inner = "tls srv.pem srv.key {\n        keylog server.keys\n    }";
    let _server = Server::start(&dir, &corefile(&block("tls", tls, inner)));
    let p = tls.to_string();
    let args = [
        "@127.0.0.1",
        "-p",
        &p,
        "+short",
        "+time=5",
        NAME,
        "+tls-ca=ca.pem",
        "+tls-hostname=dns.test",
    ];
    let out = Command::new("kdig")
        .args(args)
        .current_dir(&dir)
        .env("SSLKEYLOGFILE", dir.join("client.keys"))
        .output()
        .expect("kdig");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), WANT);
    let lines = |f: &str| {
        let mut v: Vec<String> = std::fs::read_to_string(dir.join(f))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    let (server, client) = (lines("server.keys"), lines("client.keys"));
    assert!(
        server.iter().any(|l| l.starts_with("SERVER_TRAFFIC_SECRET_0 ")),
        "TLS 1.3 secrets logged: {server:?}"
    );
    assert_eq!(server, client, "the server's key log is the client's");
}

#[test]
fn oversized_get_and_update_over_doh_are_refused() {
    let test = "oversized_get_and_update_over_doh_are_refused";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-refuse");
    certificates(&dir);
    let https = free_port();
    let server = Server::start(&dir, &corefile(&block("https", https, "tls srv.pem srv.key")));
    // CVE-2026-32936: a `dns` parameter far over a message's size.
    let huge = format!("/dns-query?dns={}", "A".repeat(100_000));
    let got = curl(&dir, https, &huge, &["--http1.1"]);
    assert!(got.starts_with('4'), "HTTP/1.1 oversized GET: {got}");
    let got = curl(&dir, https, &huge, &["--http2"]);
    assert!(!got.starts_with('2'), "HTTP/2 oversized GET answered: {got}");
    let got = curl(&dir, https, "/other?dns=AAAA", &["--http2"]);
    assert!(got.starts_with("404"), "another path: {got}");
    // Still serving.
    let query = wire_query(hickory_proto::op::OpCode::Query);
    let got = curl(
        &dir,
        https,
        &format!("/dns-query?dns={}", base64url(&query)),
        &["--http2"],
    );
    assert!(got.starts_with("200"), "after the oversized requests: {got}");
    // CVE-2026-86003: UPDATE is NOTIMP over DoH, as over plain DNS.
    let update = wire_query(hickory_proto::op::OpCode::Update);
    std::fs::write(dir.join("u.bin"), &update).expect("update file");
    let post = [
        "--http2",
        "-H",
        "content-type: application/dns-message",
        "--data-binary",
        "@u.bin",
    ];
    let got = curl(&dir, https, "/dns-query", &post);
    let body = got.rsplit(' ').next().unwrap_or_default();
    // Flags byte 3: rcode 4 (NOTIMP) in the low bits; opcode 5 echoed.
    assert!(
        got.starts_with("200") && body.get(6..8) == Some("04"),
        "UPDATE over DoH: {got}"
    );
    let plain = common::udp_raw(server.dns, &update).expect("a reply over UDP");
    assert_eq!(plain[3] & 0x0f, 4, "UPDATE over plain DNS is NOTIMP too");
    assert!(server.metric("clusterdns_doh_refused_total{reason=\"path\"}") >= 1.0);
}

/// Connects to 127.0.0.1:`port` sending nothing; whether the server
/// closed the connection within the hang ceiling.
fn closed_by_server(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(REPLY));
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(0) | Err(_))
}

#[test]
fn stalled_handshakes_and_connections_over_the_cap_are_closed_and_counted() {
    let test = "stalled_handshakes_and_connections_over_the_cap_are_closed_and_counted";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-bounds");
    certificates(&dir);
    let (tls, https) = (free_port(), free_port());
    let more = [
        block(
            "tls",
            tls,
            "tls srv.pem srv.key\n    timeouts {\n        read 1s\n    }",
        ),
        block(
            "https",
            https,
            "tls srv.pem srv.key\n    https {\n        max_connections 1\n    }",
        ),
    ];
    let server = Server::start(&dir, &corefile(&more.concat()));
    assert!(closed_by_server(tls), "a silent client is let go");
    let closed = await_metric(&server, "clusterdns_tcp_closed_total{reason=\"handshake\"}");
    assert!(closed >= 1.0, "handshake closes counted: {closed}");
    // One connection holds the only slot, idle in its handshake: the next
    // takes it (the rule of TCP's cap; who is refused: tests/fair_caps.rs).
    let mut holder = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], https))).expect("connect");
    let deadline = Instant::now() + REPLY;
    while server.metric("clusterdns_tcp_connections") < 1.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let next = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], https))).expect("connect");
    holder.set_read_timeout(Some(REPLY)).expect("timeout");
    assert!(
        matches!(holder.read(&mut [0u8; 64]), Ok(0) | Err(_)),
        "the idle holder gives way"
    );
    let evicted = await_metric(&server, "clusterdns_tcp_closed_total{reason=\"evicted\"}");
    assert!(evicted >= 1.0, "evictions counted: {evicted}");
    drop(next);
    // DoH in the clear: a silent client, half a request head, and an
    // HTTP/2 preface never followed by SETTINGS are each let go.
    let plain = free_port();
    // idle past read: a half-sent head is closed by the read timeout, never
    // by the idle check that looks every 500 ms
    let timeouts = "timeouts {\n        idle 2s\n        read 1s\n        write 1s\n    }";
    let other = Server::start(&dir, &corefile(&block("https", plain, timeouts)));
    let sends: [&[u8]; 3] = [
        b"",
        b"GET /dns-query HTTP/1.1\r\nHost: x\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ];
    for bytes in sends {
        let mut s = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], plain))).expect("connect");
        s.write_all(bytes).expect("send");
        s.set_read_timeout(Some(REPLY)).expect("timeout");
        let mut sink = Vec::new();
        assert!(s.read_to_end(&mut sink).is_ok(), "{bytes:?}: closed by the server");
    }
    assert!(await_metric(&other, "clusterdns_tcp_closed_total{reason=\"read_timeout\"}") >= 1.0);
    assert!(other.metric_at_least("clusterdns_tcp_closed_total{reason=\"idle_timeout\"}", 2.0) >= 2.0);
}

/// The value of `series` once it is at least 1 (or at the hang ceiling).
fn await_metric(server: &Server, series: &str) -> f64 {
    server.metric_at_least(series, 1.0)
}

/// The subject CN of the certificate 127.0.0.1:`port` presents now.
fn presented(dir: &Path, port: u16) -> String {
    let connect = format!("127.0.0.1:{port}");
    let text = output(
        dir,
        "openssl",
        &["s_client", "-connect", &connect, "-servername", "dns.test"],
    );
    text.lines()
        .find_map(|l| l.strip_prefix("subject="))
        .map(|s| s.replace(' ', ""))
        .unwrap_or_default()
}

/// Polls handshakes until 127.0.0.1:`port` presents `cn`, up to the hang ceiling.
fn await_presented(dir: &Path, port: u16, cn: &str) -> bool {
    let want = format!("CN={cn}");
    let deadline = Instant::now() + REPLY;
    while Instant::now() < deadline {
        if presented(dir, port) == want {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// A Secret volume as the kubelet writes it: `..TS/tls.{crt,key}`,
/// `..data` -> `..TS`, `tls.crt` -> `..data/tls.crt`; a swap replaces
/// `..data` by a rename of a new link over it.
fn secret_version(vol: &Path, ts: &str, dir: &Path, cert: &str) {
    let version = vol.join(ts);
    std::fs::create_dir_all(&version).expect("version dir");
    std::fs::copy(dir.join(format!("{cert}.pem")), version.join("tls.crt")).expect("crt");
    std::fs::copy(dir.join(format!("{cert}.key")), version.join("tls.key")).expect("key");
    let tmp = vol.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(ts, &tmp).expect("link");
    std::fs::rename(&tmp, vol.join("..data")).expect("swap ..data");
    for f in ["tls.crt", "tls.key"] {
        let _ = std::os::unix::fs::symlink(format!("..data/{f}"), vol.join(f));
    }
}

#[test]
fn certificates_rotate_by_rename_and_by_secret_volume_swap() {
    let test = "certificates_rotate_by_rename_and_by_secret_volume_swap";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-rotate");
    certificates(&dir);
    for (name, cn) in [("two", "two.test"), ("three", "three.test"), ("four", "four.test")] {
        certs::signed(&dir, name, "ca", cn, certs::Usage::Server, false);
    }
    let vol: PathBuf = dir.join("secret");
    secret_version(&vol, "..2026_01", &dir, "srv");
    std::fs::copy(dir.join("srv.pem"), dir.join("live.pem")).expect("live cert");
    std::fs::copy(dir.join("srv.key"), dir.join("live.key")).expect("live key");
    let (by_secret, by_rename) = (free_port(), free_port());
    let more = [
        block("tls", by_secret, "tls secret/tls.crt secret/tls.key"),
        block("tls", by_rename, "tls live.pem live.key"),
    ];
    let server = Server::start(&dir, &corefile(&more.concat()));
    assert!(await_presented(&dir, by_rename, "dns.test"), "the first certificate");
    // A plain rename of new files over the old ones.
    for ext in ["key", "pem"] {
        std::fs::copy(dir.join(format!("two.{ext}")), dir.join(format!("new.{ext}"))).expect("copy");
        std::fs::rename(dir.join(format!("new.{ext}")), dir.join(format!("live.{ext}"))).expect("rename");
    }
    assert!(
        await_presented(&dir, by_rename, "two.test"),
        "renamed: {}",
        presented(&dir, by_rename)
    );
    // cert-manager's Secret volume: the `..data` link swapped.
    assert!(await_presented(&dir, by_secret, "dns.test"));
    secret_version(&vol, "..2026_02", &dir, "three");
    assert!(
        await_presented(&dir, by_secret, "three.test"),
        "swapped: {}",
        presented(&dir, by_secret)
    );
    // A broken new certificate: logged, counted, the old one kept.
    let failed = "clusterdns_tls_certificate_reloads_total{result=\"failed\"}";
    let before = server.metric(failed);
    std::fs::copy(dir.join("four.pem"), dir.join("four.key")).expect("a key file holding a certificate");
    secret_version(&vol, "..2026_03", &dir, "four");
    let deadline = Instant::now() + REPLY;
    while server.metric(failed) <= before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(server.metric(failed) > before, "the broken certificate counted");
    let deadline = Instant::now() + REPLY;
    while !server.log_contains("certificate not replaced") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.log_contains("certificate not replaced"), "and logged");
    assert_eq!(presented(&dir, by_secret), "CN=three.test", "the old certificate kept");
}

#[test]
fn check_prints_the_transports_and_refuses_what_it_must() {
    let test = "check_prints_the_transports_and_refuses_what_it_must";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-check");
    certificates(&dir);
    let good = corefile(
        &[
            block(
                "tls",
                853,
                "tls srv.pem srv.key ca.pem {\n        client_auth verify_if_given\n    }",
            ),
            block("https", 8443, "https {\n        max_connections 5\n    }"),
            block(
                "quic",
                853,
                "tls srv.pem srv.key\n    quic {\n        max_streams 8\n    }",
            ),
            block("grpc", 443, "grpc_server {\n        max_streams 0\n    }"),
            block(
                "https3",
                443,
                "tls srv.pem srv.key\n    https3 {\n        max_connections 0\n    }",
            ),
        ]
        .concat(),
    );
    std::fs::write(dir.join("Corefile"), good).expect("Corefile");
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(dir.join("Corefile"))
        .output()
        .expect("check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for want in [
        "tls://.:853 {",
        "client_auth verify_if_given",
        "https://.:8443 {",
        "    https {\n        max_connections 5\n    }",
        "quic://.:853 {",
        "    quic {\n        max_streams 8\n        worker_pool_size 1024\n    }",
        "grpc://.:443 {",
        "    grpc_server {\n        max_streams 0\n        max_connections 200\n    }",
        "https3://.:443 {",
        "    https3 {\n        max_streams 256\n        max_connections 0\n    }",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let bad = [
        (
            "grpcs://.:443 {\n    whoami\n}\n",
            "'grpcs://' servers are not supported",
        ),
        (
            "https://.:443 {\n    grpc_server {\n        max_streams 1\n    }\n}\n",
            "grpc_server: only in a grpc:// server block",
        ),
        (
            "grpc://.:443 {\n    grpc_server {\n        max_streams -1\n    }\n}\n",
            "'max_streams': '-1' is not a number",
        ),
        ("tls://.:853 {\n    whoami\n}\n", "tls:// servers need a tls directive"),
        (
            "quic://.:853 {\n    whoami\n}\n",
            "quic:// servers need a tls directive",
        ),
        (
            "https3://.:443 {\n    whoami\n}\n",
            "https3:// servers need a tls directive",
        ),
        (
            ".:53 {\n    tls srv.pem srv.key\n}\n",
            "tls: only in a tls://, https://, https3://, quic:// or grpc:// server block",
        ),
        ("tls://.:853 {\n    tls srv.pem ca.key\n}\n", "tls: "),
        ("tls://.:853 {\n    tls srv.pem srv.key missing.pem\n}\n", "missing.pem"),
        (
            "https://.:443 {\n    https {\n        max_connection 3\n    }\n}\n",
            "did you mean 'max_connections'?",
        ),
    ];
    for (text, want) in bad {
        std::fs::write(dir.join("Corefile"), text).expect("Corefile");
        let (status, err) = common::check(&dir.join("Corefile"));
        assert!(!status.success() && err.contains(want), "{text}: {err}");
        assert!(err.contains("Corefile:"), "FILE:LINE:COL: {err}");
    }
}

/// The DoQ client's interpreter (tests/run's venv with aioquic and dnspython).
fn doq_python(test: &str) -> Option<PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/doq/bin/python");
    let have = if py.is_file() {
        Ok(py)
    } else {
        Err("no DoQ client venv".to_string())
    };
    common::needs(
        test,
        have,
        "bash tests/run creates target/tools/doq (pip aioquic==1.2.0 dnspython==2.7.0)",
    )
}

fn doq_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transports/doq_client.py")
}

/// What a DoQ test needs: the tools, the DoQ client's interpreter and a
/// directory `tag` with the test certificates; `None` (SKIP; a failure
/// under CI) without them.
fn doq_setup(test: &str, tag: &str) -> Option<(PathBuf, PathBuf)> {
    tools(test)?;
    let py = doq_python(test)?;
    let dir = temp_dir(tag);
    certificates(&dir);
    Some((py, dir))
}

/// The DoQ client asking `name` of 127.0.0.1:`port`, whose certificate
/// must chain to ca.pem and name `host`; to run in the test's directory.
fn doq_query(py: &Path, dir: &Path, port: u16, name: &str, host: &str) -> Command {
    let mut cmd = Command::new(py);
    cmd.arg(doq_script())
        .args(["query", &port.to_string(), "ca.pem", name, host])
        .current_dir(dir)
        .stdin(Stdio::null());
    cmd
}

/// What [`doq_query`] printed, stdout then stderr.
fn doq_ask(py: &Path, dir: &Path, port: u16, name: &str, host: &str) -> String {
    printed(
        &doq_query(py, dir, port, name, host)
            .output()
            .expect("run the DoQ client"),
    )
}

/// VmRSS of process `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[test]
fn doq_answers_and_a_flood_of_unfinished_streams_stays_bounded() {
    let test = "doq_answers_and_a_flood_of_unfinished_streams_stays_bounded";
    let Some((py, dir)) = doq_setup(test, "transports-doq") else {
        return;
    };
    let port = free_port();
    let inner =
        "tls srv.pem srv.key\n    quic {\n        max_streams 16\n    }\n    timeouts {\n        read 1s\n    }";
    let server = Server::start(&dir, &corefile(&block("quic", port, inner)));
    let ask = || doq_ask(&py, &dir, port, NAME, "dns.test");
    assert_eq!(ask().trim(), WANT, "an answer over DoQ");
    let script = doq_script();
    let args = [
        script.to_str().expect("path"),
        "update",
        &port.to_string(),
        "ca.pem",
        "cluster.local",
    ];
    let rcode = output(&dir, py.to_str().expect("path"), &args);
    assert_eq!(rcode.trim(), "NOTIMP", "UPDATE over DoQ (CVE-2026-86003)");
    // CVE-2026-32934: 20,000 streams of one byte each, never finished.
    let before = rss_kib(server.pid());
    let mut flood = Command::new(&py)
        .arg(doq_script())
        .args(["flood", &port.to_string(), "ca.pem", "20000"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the flood");
    let mut line = String::new();
    let mut out = std::io::BufReader::new(flood.stdout.take().expect("stdout"));
    std::io::BufRead::read_line(&mut out, &mut line).expect("the flood starts");
    assert_eq!(line.trim(), "flooding");
    // The server resets streams whose query is not whole within `read`;
    // more than one round of max_streams shows the credit being reused.
    let timed_out = server.metric_at_least("clusterdns_doq_refused_total{reason=\"stream_timeout\"}", 32.0);
    assert!(timed_out >= 32.0, "unfinished streams reset: {timed_out}");
    assert_eq!(ask().trim(), WANT, "answered during the flood");
    let grown = rss_kib(server.pid()).saturating_sub(before);
    assert!(grown < 16 * 1024, "memory grew {grown} KiB under the flood");
    let _ = flood.kill();
    let _ = flood.wait();
    assert_eq!(ask().trim(), WANT, "answered after the flood");
    let labelled = format!("server=\"quic://127.0.0.1:{port}\",zone=\".\"");
    assert!(common::sum_of(&server.metrics(), "coredns_dns_requests_total", &labelled) >= 3.0);
}

#[test]
fn a_reload_naming_other_certificate_files_serves_them() {
    let test = "a_reload_naming_other_certificate_files_serves_them";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("transports-reload");
    certificates(&dir);
    certs::signed(&dir, "two", "ca", "two.test", certs::Usage::Server, false);
    let port = free_port();
    let text = |cert: &str| {
        let tls = block("tls", port, &format!("tls {cert}.pem {cert}.key"));
        corefile(&tls).replacen("ready 127.0.0.1:0", "ready 127.0.0.1:0\n    reload 2s 1s", 1)
    };
    let _server = Server::start(&dir, &text("srv"));
    assert!(await_presented(&dir, port, "dns.test"), "{}", presented(&dir, port));
    std::fs::write(dir.join("Corefile"), text("two")).expect("rewrite the Corefile");
    assert!(
        await_presented(&dir, port, "two.test"),
        "after the reload: {}",
        presented(&dir, port)
    );
    let verified = ["+tls-ca=ca.pem", "+tls-hostname=two.test"];
    assert_eq!(ask(&dir, "kdig", port, &verified).trim(), WANT);
}

/// The same for a DNS over QUIC listener: the new endpoint binds beside
/// the old one (`SO_REUSEPORT`), so DoQ is served with the new
/// certificate at once. (It was not served at all: the new bind failed,
/// the port held, and the old endpoint closed.)
#[test]
fn a_reload_naming_other_certificate_files_keeps_doq_listening() {
    let test = "a_reload_naming_other_certificate_files_keeps_doq_listening";
    let Some((py, dir)) = doq_setup(test, "transports-doq-reload") else {
        return;
    };
    certs::signed(&dir, "two", "ca", "two.test", certs::Usage::Server, false);
    let port = free_port();
    let text = |cert: &str| {
        let quic = block("quic", port, &format!("tls {cert}.pem {cert}.key"));
        corefile(&quic).replacen("ready 127.0.0.1:0", "ready 127.0.0.1:0\n    reload 2s 1s", 1)
    };
    let server = Server::start(&dir, &text("srv"));
    let ask = |host: &str| doq_ask(&py, &dir, port, NAME, host);
    assert_eq!(ask("dns.test").trim(), WANT, "DoQ before the reload");
    std::fs::write(dir.join("Corefile"), text("two")).expect("rewrite the Corefile");
    // Logged once the new listeners are bound and the old told to stop.
    assert!(server.logged(&format!("closing listeners on port {port}")), "no reload");
    let log = || server.log.lock().map(|l| l.join("\n")).unwrap_or_default();
    assert_eq!(ask("two.test").trim(), WANT, "DoQ after the reload:\n{}", log());
    assert!(!server.log_contains("cannot listen"), "{}", log());
}

/// A client venv's interpreter under target/tools/`venv`, or `None`
/// (SKIP; a failure under CI).
fn venv_python(test: &str, venv: &str, pins: &str) -> Option<PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/tools/{venv}/bin/python"));
    let have = if py.is_file() {
        Ok(py)
    } else {
        Err(format!("no {venv} client venv"))
    };
    common::needs(
        test,
        have,
        &format!("bash tests/run creates target/tools/{venv} (pip {pins})"),
    )
}

/// Runs tests/transports/`script` with `py` and `args` in `dir`; its output.
fn run_client(dir: &Path, py: &Path, script: &str, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/transports")
        .join(script);
    let script = script.to_str().expect("path").to_string();
    output(
        dir,
        py.to_str().expect("path"),
        &[&[script.as_str()][..], args].concat(),
    )
}

#[test]
fn grpc_answers_over_tls_and_plain_http2_and_refuses_update_and_oversized() {
    let test = "grpc_answers_over_tls_and_plain_http2_and_refuses_update_and_oversized";
    if tools(test).is_none() {
        return;
    }
    let Some(py) = venv_python(test, "grpc", "grpcio==1.85.1 dnspython==2.7.0") else {
        return;
    };
    let dir = temp_dir("transports-grpc");
    certificates(&dir);
    let (tls, plain, capped) = (free_port(), free_port(), free_port());
    let limits = "grpc_server {\n        max_streams 8\n        max_connections 1\n    }";
    let more = [
        block("grpc", tls, "tls srv.pem srv.key"),
        block("grpc", plain, ""),
        block("grpc", capped, limits),
    ];
    let server = Server::start(&dir, &corefile(&more.concat()));
    let client = |mode: &str, port: u16, ca: &str, arg: &str| {
        run_client(&dir, &py, "grpc_client.py", &[mode, &port.to_string(), ca, arg])
    };
    assert_eq!(client("query", tls, "ca.pem", NAME).trim(), WANT, "gRPC over TLS");
    assert_eq!(client("query", plain, "-", NAME).trim(), WANT, "gRPC over plain HTTP/2");
    // CVE-2026-86003: UPDATE is NOTIMP, never forwarded.
    assert_eq!(client("update", tls, "ca.pem", "cluster.local").trim(), "NOTIMP");
    // A message over 65,535 bytes: refused before it is decoded.
    assert_eq!(client("big", tls, "ca.pem", "100000").trim(), "RESOURCE_EXHAUSTED");
    assert_eq!(client("other", plain, "-", "Stream").trim(), "UNIMPLEMENTED");
    assert_eq!(client("query", tls, "ca.pem", NAME).trim(), WANT, "still serving");
    let metrics = server.metrics();
    for (port, n) in [(tls, 2.0), (plain, 1.0)] {
        let having = format!("server=\"grpc://127.0.0.1:{port}\",zone=\".\"");
        let got = common::sum_of(&metrics, "coredns_dns_requests_total", &having);
        assert!(got >= n, "grpc://127.0.0.1:{port}: {got} requests counted\n{metrics}");
    }
    assert!(server.metric("clusterdns_grpc_refused_total{reason=\"too_large\"}") >= 1.0);
    assert!(server.metric("clusterdns_grpc_refused_total{reason=\"path\"}") >= 1.0);
    // grpc_server { max_connections 1 }: TCP's cap rule, as DoH's (who is
    // refused: tests/fair_caps.rs): an idle holder gives way to the next.
    assert_eq!(client("query", capped, "-", NAME).trim(), WANT);
    let mut holder = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], capped))).expect("connect");
    let deadline = Instant::now() + REPLY;
    while server.metric("clusterdns_tcp_connections") < 1.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = server.metric("clusterdns_tcp_closed_total{reason=\"evicted\"}");
    let next = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], capped))).expect("connect");
    holder.set_read_timeout(Some(REPLY)).expect("timeout");
    assert!(
        matches!(holder.read(&mut [0u8; 64]), Ok(0) | Err(_)),
        "the idle holder gives way at max_connections"
    );
    let evicted = server.metric_at_least("clusterdns_tcp_closed_total{reason=\"evicted\"}", before + 1.0);
    assert!(evicted > before, "evictions counted: {evicted}");
    drop(next);
}

/// A DoQ query forwarded to an upstream (the test) that answers only
/// after SIGTERM is answered: the stopping listener closes a connection
/// once its queries are answered and their replies acknowledged, as TCP
/// drains (it closed them all at once, the reply lost).
#[test]
fn a_doq_query_in_flight_at_sigterm_is_answered() {
    let test = "a_doq_query_in_flight_at_sigterm_is_answered";
    let Some((py, dir)) = doq_setup(test, "transports-doq-stop") else {
        return;
    };
    let up = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind the upstream");
    let port = free_port();
    let quic = format!(
        "quic://.:{port} {{\n    bind 127.0.0.1\n    tls srv.pem srv.key\n    forward . {} {{\n        max_fails 0\n        prefer_udp\n    }}\n}}\n",
        up.local_addr().expect("addr")
    );
    let mut server = Server::start(&dir, &corefile(&quic));
    let client = doq_query(&py, &dir, port, "late.example.org.", "dns.test")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the DoQ client");
    let (req, from) = common::held::held(&up);
    let killed = Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    // The listener stopped (without the drain it closed the connection
    // right after saying so): only now is the query answered upstream.
    assert!(server.logged("stopped; open connections: 1"), "the listener stopped");
    up.send_to(&common::held::answer(&req), from).expect("answer");
    let printed = printed(&client.wait_with_output().expect("the DoQ client ends"));
    assert_eq!(
        printed.trim(),
        common::held::ADDRESS.to_string(),
        "answered while stopping"
    );
    assert!(server.wait_exit(REPLY).is_some(), "the server exits");
}

#[test]
fn doh3_answers_and_refuses_update_and_oversized_gets() {
    let test = "doh3_answers_and_refuses_update_and_oversized_gets";
    if tools(test).is_none() {
        return;
    }
    let Some(py) = venv_python(test, "doq", "aioquic==1.2.0 dnspython==2.7.0") else {
        return;
    };
    let dir = temp_dir("transports-doh3");
    certificates(&dir);
    let port = free_port();
    let limits = "tls srv.pem srv.key\n    https3 {\n        max_streams 8\n        max_connections 4\n    }";
    let server = Server::start(&dir, &corefile(&block("https3", port, limits)));
    let client =
        |mode: &str, arg: &str| run_client(&dir, &py, "doh3_client.py", &[mode, &port.to_string(), "ca.pem", arg]);
    assert_eq!(
        client("query", NAME).trim(),
        format!("{WANT}\n{WANT}"),
        "dnspython DoH3 POST and GET"
    );
    let query = wire_query(hickory_proto::op::OpCode::Query);
    let got = client("get", &format!("/dns-query?dns={}", base64url(&query)));
    assert!(
        got.starts_with("200 ") && got.trim().ends_with("0a600001"),
        "aioquic GET: {got}"
    );
    // CVE-2026-86003: UPDATE is NOTIMP, never forwarded.
    std::fs::write(dir.join("u.bin"), wire_query(hickory_proto::op::OpCode::Update)).expect("update file");
    let got = client("post", "u.bin");
    let body = got.trim().rsplit(' ').next().unwrap_or_default();
    assert!(
        got.starts_with("200 ") && body.get(6..8) == Some("04"),
        "UPDATE over DoH3: {got}"
    );
    // CVE-2026-32936: a `dns` parameter over 64 KiB (the head over what is
    // taken) or a body over a message's size: a 4xx each, and still serving.
    for n in ["70000", "100000", "300000"] {
        let got = client("huge", n);
        assert!(got.starts_with("431"), "a {n}-byte GET parameter: {got}");
    }
    // A 30 MB head: h3 would hold it whole before checking its size; the
    // stream is cut at its cap, so memory stays flat.
    let before = rss_kib(server.pid());
    let got = client("huge", "30000000");
    let grown = rss_kib(server.pid()).saturating_sub(before);
    assert!(
        !got.starts_with('2') && grown < 16 * 1024,
        "{got}: memory grew {grown} KiB"
    );
    std::fs::write(dir.join("big.bin"), vec![0u8; 70_000]).expect("big body");
    let got = client("post", "big.bin");
    assert!(got.starts_with("413"), "a POST over a message's size: {got}");
    assert!(client("get", "/other?dns=AAAA").starts_with("404"));
    assert_eq!(client("query", NAME).trim(), format!("{WANT}\n{WANT}"), "still serving");
    let labelled = format!("server=\"https3://127.0.0.1:{port}\",zone=\".\"");
    let n = common::sum_of(&server.metrics(), "coredns_dns_requests_total", &labelled);
    assert!(n >= 5.0, "{labelled}: {n}");
    assert!(server.metric("clusterdns_doh_refused_total{reason=\"too_large\"}") >= 1.0);
}

/// A 64 KB query made to cost memory when decoded (CVE-2026-82399): a
/// 255-byte question name, then as many CNAME records as fit whose owner
/// and target each point back at it (4,661 records, 2.4 MB of names).
fn compression_bomb() -> Vec<u8> {
    let mut m = vec![0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    for _ in 0..4 {
        m.push(62);
        m.extend_from_slice(&[b'a'; 62]);
    }
    m.extend_from_slice(&[0, 0, 1, 0, 1]); // root, A, IN
    let mut records = 0u16;
    while m.len() + 14 <= 65_535 {
        m.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 0, 0, 2, 0xc0, 12]);
        records += 1;
    }
    m[6..8].copy_from_slice(&records.to_be_bytes());
    m
}

/// VmHWM (the peak resident set) of process `pid` in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[test]
fn a_crafted_64k_message_allocates_little_over_grpc_and_doh3() {
    let test = "a_crafted_64k_message_allocates_little_over_grpc_and_doh3";
    if tools(test).is_none() {
        return;
    }
    let pins = "grpcio==1.85.1 dnspython==2.7.0";
    let (Some(grpc_py), Some(doq_py)) = (
        venv_python(test, "grpc", pins),
        venv_python(test, "doq", "aioquic==1.2.0 dnspython==2.7.0"),
    ) else {
        return;
    };
    let dir = temp_dir("transports-bomb");
    certificates(&dir);
    let (grpc, https3) = (free_port(), free_port());
    let more = [block("grpc", grpc, ""), block("https3", https3, "tls srv.pem srv.key")];
    let server = Server::start(&dir, &corefile(&more.concat()));
    let bomb = compression_bomb();
    assert!(bomb.len() <= 65_535 && bomb.len() > 65_000);
    std::fs::write(dir.join("bomb.bin"), &bomb).expect("bomb file");
    // warm both paths first, so the peak below is the bomb's alone
    let grpc_port = grpc.to_string();
    let ask_grpc = |what: &str| run_client(&dir, &grpc_py, "grpc_client.py", &["file", &grpc_port, "-", what]);
    let h3_port = https3.to_string();
    let ask_h3 = |what: &str| run_client(&dir, &doq_py, "doh3_client.py", &["post", &h3_port, "ca.pem", what]);
    std::fs::write(dir.join("q.bin"), wire_query(hickory_proto::op::OpCode::Query)).expect("query file");
    assert_eq!(ask_grpc("q.bin").trim(), "NOERROR");
    assert!(ask_h3("q.bin").starts_with("200 "));
    let before = peak_kib(server.pid());
    for _ in 0..3 {
        let got = ask_grpc("bomb.bin");
        assert!(!got.contains("Traceback"), "gRPC: {got}");
        let got = ask_h3("bomb.bin");
        assert!(got.starts_with(char::is_numeric), "DoH3: {got}");
    }
    let grown = peak_kib(server.pid()).saturating_sub(before);
    assert!(grown < 10 * 1024, "the peak RSS grew {grown} KiB");
    assert_eq!(ask_grpc("q.bin").trim(), "NOERROR", "still serving");
}
