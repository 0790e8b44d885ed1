//! `prometheus { tls FILE }` end to end: `/metrics` over HTTPS with a web
//! configuration file as Prometheus's exporter toolkit writes it, read by
//! curl with the test CA (and promtool checks the page); a plain HTTP
//! client gets no page; client certificates as `client_auth_type` asks
//! (RequireAndVerifyClientCert, RequireAnyClientCert); `min_version`
//! held; the certificate read again when its file is replaced; `check`
//! printing the effective settings. Certificates made by openssl here.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::certs::{self, Usage};
use common::{http_get, temp_dir, Server};

/// curl and openssl, or why this machine cannot run these tests.
fn tools(test: &str) -> bool {
    let install = "apt-get install curl openssl (tests/run installs them)";
    ["curl", "openssl"]
        .iter()
        .all(|t| common::needs(test, common::installed(t), install).is_some())
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate it
/// signs, and a self-signed client from elsewhere.
fn make_certs(dir: &Path) {
    certs::ca(dir, "ca", "metrics test CA");
    certs::signed(dir, "server", "ca", "localhost", Usage::Server, false);
    certs::signed(dir, "client", "ca", "client", Usage::Client, false);
    certs::ca(dir, "stranger", "a client nobody signed");
}

/// Starts a server whose metrics listener reads `web` (the web
/// configuration's text, written to `dir/web.yml`); returns it and the
/// metrics address it logged as https.
fn start(dir: &Path, web: &str) -> (Server, SocketAddr) {
    std::fs::write(dir.join("web.yml"), web).expect("write web.yml");
    let text = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0 {\n        tls web.yml\n    }\n    hosts {\n        127.0.0.1 example.org\n    }\n}\n";
    let server = Server::start(dir, text);
    let marker = "listening on metrics https://";
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines = server.log.lock().map(|l| l.clone()).unwrap_or_default();
        if let Some(addr) = lines.iter().find_map(|l| l.split(marker).nth(1)) {
            return (server, addr.trim().parse().expect("metrics address"));
        }
        assert!(Instant::now() < deadline, "no '{marker}' line: {lines:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `curl -s --cacert CA ARGS https://ADDR/metrics`: the page, or curl's
/// exit code and message.
fn curl(dir: &Path, ca: &str, addr: SocketAddr, args: &[&str]) -> Result<String, String> {
    let out = Command::new("curl")
        .current_dir(dir)
        .args(["-sS", "--fail", "--max-time", "5", "--cacert", ca])
        .args(args)
        .arg(format!("https://{addr}/metrics"))
        .output()
        .expect("run curl");
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(format!(
            "{:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

#[test]
fn metrics_over_tls_for_curl_not_for_plain_http() {
    if !tools("metrics over tls") {
        return;
    }
    let dir = temp_dir("metrics-tls");
    make_certs(&dir);
    let web = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  min_version: TLS13\n";
    std::fs::write(dir.join("web.yml"), web).expect("write web.yml");
    std::fs::write(
        dir.join("check.Corefile"),
        ".:0 {\n    prometheus 127.0.0.1:0 {\n        tls web.yml\n    }\n}\n",
    )
    .expect("write Corefile");
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(dir.join("check.Corefile"))
        .output()
        .expect("check");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let effective = format!(
        "        tls {}\n        # https: cert_file {}, key_file {}, client_auth_type NoClientCert, min_version TLS13, max_version TLS13\n",
        dir.join("web.yml").display(),
        dir.join("server.pem").display(),
        dir.join("server.key").display()
    );
    assert!(printed.contains(&effective), "check lacks {effective:?}:\n{printed}");

    let (server, addr) = start(&dir, web);
    let page = curl(&dir, "ca.pem", addr, &[]).expect("curl over TLS");
    assert!(page.contains("coredns_build_info"), "{page}");
    if let Some(verdict) = common::promtool_check(&page, &dir.join("metrics.txt")) {
        assert_eq!(verdict, Ok(()), "promtool");
    }
    let plain = http_get(addr, "/metrics");
    assert!(!plain.starts_with("HTTP/"), "plain HTTP was answered: {plain:?}");
    let old = curl(&dir, "ca.pem", addr, &["--tls-max", "1.2"]);
    assert!(old.is_err(), "TLS 1.2 taken despite min_version TLS13");
    assert!(server.is_running());
}

#[test]
fn require_and_verify_client_cert_wants_a_certificate_the_ca_signed() {
    if !tools("metrics mtls") {
        return;
    }
    let dir = temp_dir("metrics-mtls");
    make_certs(&dir);
    let web = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  \
               client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n";
    let (_server, addr) = start(&dir, web);
    let without = curl(&dir, "ca.pem", addr, &[]);
    assert!(without.is_err(), "served without a client certificate");
    let stranger = curl(
        &dir,
        "ca.pem",
        addr,
        &["--cert", "stranger.pem", "--key", "stranger.key"],
    );
    assert!(stranger.is_err(), "served a client the CA did not sign");
    let page = curl(&dir, "ca.pem", addr, &["--cert", "client.pem", "--key", "client.key"])
        .expect("with a client certificate");
    assert!(page.contains("coredns_dns_requests_total"), "{page}");
}

#[test]
fn require_any_client_cert_takes_any_certificate_but_none() {
    if !tools("metrics any client cert") {
        return;
    }
    let dir = temp_dir("metrics-anycert");
    make_certs(&dir);
    let web = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  \
               client_auth_type: RequireAnyClientCert\n";
    let (_server, addr) = start(&dir, web);
    assert!(
        curl(&dir, "ca.pem", addr, &[]).is_err(),
        "served without a client certificate"
    );
    let page = curl(
        &dir,
        "ca.pem",
        addr,
        &["--cert", "stranger.pem", "--key", "stranger.key"],
    )
    .expect("any certificate");
    assert!(page.contains("coredns_build_info"), "{page}");
}

#[test]
fn a_replaced_certificate_is_served_without_a_restart() {
    if !tools("metrics certificate rotation") {
        return;
    }
    let dir = temp_dir("metrics-rotate");
    make_certs(&dir);
    let web = "tls_server_config:\n  cert_file: served.pem\n  key_file: served.key\n";
    std::fs::copy(dir.join("server.pem"), dir.join("served.pem")).expect("copy");
    std::fs::copy(dir.join("server.key"), dir.join("served.key")).expect("copy");
    let (_server, addr) = start(&dir, web);
    curl(&dir, "ca.pem", addr, &[]).expect("the first certificate");
    certs::ca(&dir, "ca2", "the next CA");
    certs::signed(&dir, "next", "ca2", "localhost", Usage::Server, false);
    // The key first, then the certificate (renamed over: a whole file).
    std::fs::copy(dir.join("next.key"), dir.join("served.key.new")).expect("copy");
    std::fs::copy(dir.join("next.pem"), dir.join("served.pem.new")).expect("copy");
    std::fs::rename(dir.join("served.key.new"), dir.join("served.key")).expect("rename");
    std::fs::rename(dir.join("served.pem.new"), dir.join("served.pem")).expect("rename");
    let deadline = Instant::now() + Duration::from_secs(20);
    while curl(&dir, "ca2.pem", addr, &[]).is_err() {
        assert!(
            Instant::now() < deadline,
            "the new certificate was not served within 20 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        curl(&dir, "ca.pem", addr, &[]).is_err(),
        "the old certificate is still served"
    );
}

#[test]
fn verify_if_given_checks_a_certificate_shown_and_request_checks_none() {
    if !tools("metrics optional client certs") {
        return;
    }
    let dir = temp_dir("metrics-optional");
    make_certs(&dir);
    let web = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  \
               client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.pem\n";
    let (verify, addr) = start(&dir, web);
    curl(&dir, "ca.pem", addr, &[]).expect("VerifyClientCertIfGiven without a certificate");
    curl(&dir, "ca.pem", addr, &["--cert", "client.pem", "--key", "client.key"]).expect("with the CA's client");
    let stranger = curl(
        &dir,
        "ca.pem",
        addr,
        &["--cert", "stranger.pem", "--key", "stranger.key"],
    );
    assert!(
        stranger.is_err(),
        "VerifyClientCertIfGiven served a client the CA did not sign"
    );
    drop(verify);
    let web = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  \
               client_auth_type: RequestClientCert\n";
    let (_request, addr) = start(&dir, web);
    curl(&dir, "ca.pem", addr, &[]).expect("RequestClientCert without a certificate");
    curl(
        &dir,
        "ca.pem",
        addr,
        &["--cert", "stranger.pem", "--key", "stranger.key"],
    )
    .expect("any certificate");
}

/// `check` on `corefile` (written into `dir`): its exit code and stderr.
fn check(dir: &Path, corefile: &str) -> (Option<i32>, String) {
    let conf = dir.join("refused.Corefile");
    std::fs::write(&conf, corefile).expect("write Corefile");
    let (status, stderr) = common::check(&conf);
    (status.code(), stderr)
}

#[test]
fn check_refuses_what_one_tls_metrics_listener_cannot_be() {
    if !tools("metrics tls check") {
        return;
    }
    let dir = temp_dir("metrics-tls-check");
    make_certs(&dir);
    let web = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n";
    std::fs::write(dir.join("web.yml"), web).expect("write web.yml");
    std::fs::write(dir.join("other.yml"), web).expect("write other.yml");
    let shared = ".:0 {\n    health 127.0.0.1:9553\n    prometheus 127.0.0.1:9553 {\n        tls web.yml\n    }\n}\n";
    let (code, stderr) = check(&dir, shared);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(
        stderr.contains("refused.Corefile:4:13: prometheus: tls: health listens on the metrics address"),
        "{stderr}"
    );
    let two = ".:0 {\n    prometheus 127.0.0.1:0 {\n        tls web.yml\n    }\n}\n.:0 {\n    prometheus 127.0.0.1:0 {\n        tls other.yml\n    }\n}\n";
    let (code, stderr) = check(&dir, two);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(stderr.contains("refused.Corefile:8:13: prometheus: tls "), "{stderr}");
    assert!(
        stderr.contains("the one metrics listener has one web configuration"),
        "{stderr}"
    );
    let apart = ".:0 {\n    health 127.0.0.1:0\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0 {\n        tls web.yml\n    }\n}\n";
    assert_eq!(check(&dir, apart).0, Some(0), "port 0 is a port of its own for each");
}
