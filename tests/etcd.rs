//! `etcd` against a real etcd (Debian's `etcd-server`), started here on
//! 127.0.0.1 with ports of its own and a data directory in the test's
//! temp dir. Records are written with `etcdctl put` as external-dns
//! writes them (SkyDNS JSON under `/skydns`, the name reversed), and
//! asked with dig. Before etcd answers, clusterdns answers SERVFAIL
//! (never NXDOMAIN) and `/ready` lists `etcd`; then every type is served
//! as CoreDNS serves it, a put or delete is served as soon as the watch
//! brings it, and when etcd stops the last records are still answered,
//! also across a reload that keeps the directive, until etcd is back and
//! changes flow again. A key with a lease is answered with the lease's
//! time left as TTL, and goes when the lease is revoked. With `credentials`,
//! clusterdns authenticates (`etcdctl auth enable`); a wrong password is
//! never ready. Every wait polls with a bound; none sleeps a fixed time.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::certs;
use common::dig::{dig, Dig};
use common::{free_port, http_get, installed, needs, temp_dir, Server};

/// How long any awaited change may take (a hang, not a slow machine).
const HANG: Duration = Duration::from_secs(45);

/// A running etcd, killed on drop.
struct Etcd {
    child: Child,
    client: u16,
    peer: u16,
    dir: PathBuf,
    auth: Option<&'static str>,
    /// `https` with `ctl_tls` (etcdctl's certificate flags), or `http`.
    scheme: &'static str,
    ctl_tls: Vec<String>,
}

impl Etcd {
    /// etcd on `client` (and a peer port of its own), its data in `dir`.
    fn start(bin: &Path, dir: &Path, client: u16, peer: u16) -> Etcd {
        Etcd::start_with(bin, dir, (client, peer), None)
    }

    /// As [`Etcd::start`]; with `tls` (its directory holding `ca.pem`,
    /// `server.pem`/`.key` and `client.pem`/`.key`), clients must show a
    /// certificate the CA signed.
    fn start_with(bin: &Path, dir: &Path, (client, peer): (u16, u16), tls: Option<&Path>) -> Etcd {
        let log = std::fs::File::create(dir.join("etcd.log")).expect("etcd log");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let (c, p) = (
            format!("{scheme}://127.0.0.1:{client}"),
            format!("http://127.0.0.1:{peer}"),
        );
        let file = |name: &str| tls.map(|d| d.join(name).display().to_string()).unwrap_or_default();
        let server_tls: Vec<String> = match tls {
            Some(_) => vec![
                format!("--cert-file={}", file("server.pem")),
                format!("--key-file={}", file("server.key")),
                format!("--trusted-ca-file={}", file("ca.pem")),
                "--client-cert-auth".into(),
            ],
            None => Vec::new(),
        };
        let ctl_tls: Vec<String> = match tls {
            Some(_) => vec![
                format!("--cacert={}", file("ca.pem")),
                format!("--cert={}", file("client.pem")),
                format!("--key={}", file("client.key")),
            ],
            None => Vec::new(),
        };
        let child = Command::new(bin)
            .args(["--name", "t", "--data-dir"])
            .arg(dir.join("etcd.data"))
            .args(["--listen-client-urls", &c, "--advertise-client-urls", &c])
            .args(["--listen-peer-urls", &p, "--initial-advertise-peer-urls", &p])
            .args(["--initial-cluster", &format!("t={p}"), "--log-level", "warn"])
            .args(&server_tls)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        let etcd = Etcd {
            child,
            client,
            peer,
            dir: dir.to_path_buf(),
            auth: None,
            scheme,
            ctl_tls,
        };
        let started = Instant::now();
        while !etcd.ctl(&["endpoint", "health"]).0 {
            assert!(started.elapsed() < HANG, "etcd not healthy: {}", etcd.log());
            std::thread::sleep(Duration::from_millis(100));
        }
        etcd
    }

    /// `etcdctl ARGS` (v3 API) against this etcd: success and output.
    fn ctl(&self, args: &[&str]) -> (bool, String) {
        let mut cmd = Command::new("etcdctl");
        cmd.env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}://127.0.0.1:{}", self.scheme, self.client))
            .args(&self.ctl_tls)
            .args(self.auth.map(|a| format!("--user={a}")))
            .args(args);
        let out = cmd
            .output()
            .expect("etcdctl must be installed (tests/run installs etcd-client)");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    fn put(&self, key: &str, value: &str) {
        let (ok, out) = self.ctl(&["put", key, value]);
        assert!(ok, "etcdctl put {key}: {out}");
    }

    fn del(&self, key: &str) {
        let (ok, out) = self.ctl(&["del", key]);
        assert!(ok, "etcdctl del {key}: {out}");
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }

    fn stop(mut self) -> (u16, u16) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.client, self.peer)
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn etcd_or_skip(test: &str) -> Option<PathBuf> {
    let bin = needs(
        test,
        installed("etcd"),
        "apt-get install etcd-server etcd-client (tests/run installs them)",
    )?;
    needs(
        test,
        installed("etcdctl"),
        "apt-get install etcd-client (tests/run installs it)",
    )?;
    Some(bin)
}

fn corefile(client: u16, options: &str) -> String {
    corefile_at(&format!("http://127.0.0.1:{client}"), options)
}

/// [`corefile`] with `reload` every 2 s and `hosts` answering
/// `marker.skydns.local` with 127.0.0.`marker` (the reload's landing seen).
fn reloadable(client: u16, marker: u8) -> String {
    let hosts = format!(
        "    reload 2s 0s\n    hosts {{\n        127.0.0.{marker} marker.skydns.local\n        fallthrough\n    }}\n"
    );
    corefile(client, "").replacen("    etcd ", &format!("{hosts}    etcd "), 1)
}

fn corefile_at(endpoint: &str, options: &str) -> String {
    format!(
        "skydns.local:0 0.0.10.in-addr.arpa:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    etcd skydns.local 10.0.0.0/24 {{\n        endpoint {endpoint}\n{options}    }}\n}}\nother.test:0 {{\n    bind 127.0.0.1\n    hosts {{\n        192.0.2.8 www.other.test\n    }}\n}}\n"
    )
}

/// Asks `args` until `done` holds for the reply or [`HANG`] passes; the last reply.
fn until(server: &Server, args: &[&str], done: impl Fn(&Dig) -> bool) -> Dig {
    let started = Instant::now();
    loop {
        let got = dig(server, args);
        if done(&got) || started.elapsed() > HANG {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The records external-dns would write for the README's examples.
fn seed(etcd: &Etcd) {
    etcd.put("/skydns/local/skydns/x1", r#"{"host":"10.0.0.1","ttl":60}"#);
    etcd.put("/skydns/local/skydns/x2", r#"{"host":"2001:db8::2","ttl":60}"#);
    etcd.put("/skydns/local/skydns/dns/apex/a1", r#"{"host":"1.1.1.1","ttl":60}"#);
    etcd.put(
        "/skydns/local/skydns/svc/web",
        r#"{"host":"10.0.0.7","port":8080,"priority":10,"ttl":30}"#,
    );
    etcd.put("/skydns/local/skydns/txt/t", r#"{"text":"hello world","ttl":60}"#);
    etcd.put("/skydns/local/skydns/alias", r#"{"host":"x1.skydns.local","ttl":60}"#);
    etcd.put("/skydns/local/skydns/outside", r#"{"host":"www.other.test","ttl":60}"#);
    etcd.put(
        "/skydns/local/skydns/mail/m",
        r#"{"host":"x1.skydns.local","mail":true,"priority":5}"#,
    );
    etcd.put("/skydns/local/skydns/dns/ns/ns1", r#"{"host":"10.0.0.53"}"#);
    etcd.put("/skydns/arpa/in-addr/10/0/0/127", r#"{"host":"reverse.skydns.local."}"#);
}

/// The answers of every type, as CoreDNS writes them.
fn assert_types(server: &Server) {
    let a = dig(server, &["x1.skydns.local", "A"]);
    assert_eq!(
        (a.status.as_str(), a.data()),
        ("NOERROR", vec!["10.0.0.1".to_string()]),
        "{}",
        a.text
    );
    assert!(a.aa(), "authoritative: {}", a.text);
    assert!(a.answers[0].contains(" 60 IN A "), "its ttl: {:?}", a.answers);
    assert_eq!(dig(server, &["x2.skydns.local", "AAAA"]).data(), ["2001:db8::2"]);
    assert_eq!(
        dig(server, &["skydns.local", "A"]).data(),
        ["1.1.1.1"],
        "the apex from dns/apex"
    );
    let srv = dig(server, &["svc.skydns.local", "SRV"]);
    assert_eq!(srv.data(), ["10 100 8080 web.svc.skydns.local."], "{}", srv.text);
    assert!(
        srv.additional.iter().any(|l| l.ends_with("IN A 10.0.0.7")),
        "{}",
        srv.text
    );
    assert_eq!(dig(server, &["txt.skydns.local", "TXT"]).data(), ["\"hello world\""]);
    let alias = dig(server, &["alias.skydns.local", "A"]);
    assert_eq!(
        alias.data(),
        ["10.0.0.1", "x1.skydns.local."],
        "chased in the zone: {}",
        alias.text
    );
    assert_eq!(
        dig(server, &["alias.skydns.local", "CNAME"]).data(),
        ["x1.skydns.local."]
    );
    let mx = dig(server, &["mail.skydns.local", "MX"]);
    assert_eq!(mx.data(), ["5 x1.skydns.local."], "{}", mx.text);
    let ns = dig(server, &["skydns.local", "NS"]);
    assert_eq!(ns.data(), ["ns1.ns.dns.skydns.local."], "{}", ns.text);
    let soa = dig(server, &["skydns.local", "SOA"]);
    assert!(
        soa.data()[0].starts_with("ns.dns.skydns.local. hostmaster.skydns.local. "),
        "{}",
        soa.text
    );
    let ptr = dig(server, &["-x", "10.0.0.127"]);
    assert_eq!(ptr.data(), ["reverse.skydns.local."], "{}", ptr.text);
    let none = dig(server, &["nope.skydns.local", "A"]);
    assert_eq!(none.status, "NXDOMAIN", "{}", none.text);
    assert!(none.authority[0].contains("SOA ns.dns.skydns.local."), "{}", none.text);
    let nodata = dig(server, &["x1.skydns.local", "TXT"]);
    assert_eq!(
        (nodata.status.as_str(), nodata.answers.len()),
        ("NOERROR", 0),
        "{}",
        nodata.text
    );
}

#[test]
fn records_are_served_followed_and_kept_while_etcd_is_down() {
    let Some(bin) = etcd_or_skip("etcd mirror") else { return };
    let dir = temp_dir("etcd-mirror");
    let (client, peer) = (free_port(), free_port());
    let server = Server::spawn(&dir, &reloadable(client, 1));
    // No etcd yet: SERVFAIL for any name, and /ready names etcd.
    assert_eq!(dig(&server, &["x1.skydns.local", "A"]).status, "SERVFAIL");
    assert_eq!(dig(&server, &["nope.skydns.local", "A"]).status, "SERVFAIL");
    let ready = http_get(server.ready, "/ready");
    assert!(!ready.starts_with("HTTP/1.1 200") && ready.contains("etcd"), "{ready}");

    let etcd = Etcd::start(&bin, &dir, client, peer);
    seed(&etcd);
    server.wait_ready(HANG);
    let got = until(&server, &["-x", "10.0.0.127"], |d| d.status == "NOERROR");
    assert_eq!(got.status, "NOERROR", "{}\netcd: {}", got.text, etcd.log());
    assert_types(&server);

    // A put and a delete are served once the watch brings them.
    etcd.put("/skydns/local/skydns/new", r#"{"host":"10.0.0.9"}"#);
    let new = until(&server, &["new.skydns.local", "A"], |d| d.data() == ["10.0.0.9"]);
    assert_eq!(new.data(), ["10.0.0.9"], "{}", new.text);
    etcd.del("/skydns/local/skydns/x2");
    let gone = until(&server, &["x2.skydns.local", "AAAA"], |d| d.status == "NXDOMAIN");
    assert_eq!(gone.status, "NXDOMAIN", "{}", gone.text);

    leases(&etcd, &server);

    // etcd stops: the mirror answers on.
    let (client, peer) = etcd.stop();
    assert_eq!(dig(&server, &["new.skydns.local", "A"]).data(), ["10.0.0.9"]);
    assert_types_after_delete(&server);
    assert!(http_get(server.ready, "/ready").starts_with("HTTP/1.1 200"));

    // A reload keeping the directive keeps its mirror: still answered
    // with etcd down (a new mirror would be SERVFAIL until etcd is back).
    std::fs::write(dir.join("Corefile"), reloadable(client, 2)).expect("rewrite the Corefile");
    let marker = until(&server, &["marker.skydns.local", "A"], |d| d.data() == ["127.0.0.2"]);
    assert_eq!(marker.data(), ["127.0.0.2"], "reloaded: {}", marker.text);
    assert_types_after_delete(&server);

    // etcd is back (same data): clusterdns reconnects and follows again.
    let etcd = Etcd::start(&bin, &dir, client, peer);
    etcd.put("/skydns/local/skydns/new", r#"{"host":"10.0.0.10"}"#);
    let back = until(&server, &["new.skydns.local", "A"], |d| d.data() == ["10.0.0.10"]);
    assert_eq!(back.data(), ["10.0.0.10"], "{}", back.text);
    let served = server.metric_sum("coredns_dns_responses_total", "plugin=\"etcd\"");
    assert!(served >= 10.0, "answers counted under plugin=\"etcd\": {served}");
}

/// A key with a lease: its records' TTL is the lease's time left (or
/// their own `ttl` when smaller); revoking the lease deletes the keys.
fn leases(etcd: &Etcd, server: &Server) {
    let (ok, out) = etcd.ctl(&["lease", "grant", "3600"]);
    assert!(ok, "lease grant: {out}");
    let id = out.split_whitespace().nth(1).expect("lease ID").to_string();
    for (key, value) in [
        ("leased", r#"{"host":"10.0.0.11"}"#),
        ("leased60", r#"{"host":"10.0.0.12","ttl":60}"#),
    ] {
        let (ok, out) = etcd.ctl(&[
            "put",
            &format!("--lease={id}"),
            &format!("/skydns/local/skydns/{key}"),
            value,
        ]);
        assert!(ok, "put --lease: {out}");
    }
    let ttl = |d: &Dig| d.answers.first().and_then(|a| a.split(' ').nth(1)?.parse::<u32>().ok());
    let leased = until(server, &["leased.skydns.local", "A"], |d| {
        ttl(d).is_some_and(|t| t != 300)
    });
    let t = ttl(&leased).expect("an answer");
    assert!((3000..=3600).contains(&t), "the lease's time left: {}", leased.text);
    let own = until(server, &["leased60.skydns.local", "A"], |d| d.data() == ["10.0.0.12"]);
    assert_eq!(ttl(&own), Some(60), "its own ttl, smaller: {}", own.text);
    let (ok, out) = etcd.ctl(&["lease", "revoke", &id]);
    assert!(ok, "lease revoke: {out}");
    let gone = until(server, &["leased.skydns.local", "A"], |d| d.status == "NXDOMAIN");
    assert_eq!(gone.status, "NXDOMAIN", "{}", gone.text);
}

/// What is still served from the mirror with etcd down.
fn assert_types_after_delete(server: &Server) {
    assert_eq!(dig(server, &["x1.skydns.local", "A"]).data(), ["10.0.0.1"]);
    assert_eq!(dig(server, &["x2.skydns.local", "AAAA"]).status, "NXDOMAIN");
    assert_eq!(
        dig(server, &["svc.skydns.local", "SRV"]).data(),
        ["10 100 8080 web.svc.skydns.local."]
    );
}

#[test]
fn credentials_authenticate_and_a_wrong_password_is_never_ready() {
    let Some(bin) = etcd_or_skip("etcd credentials") else {
        return;
    };
    let dir = temp_dir("etcd-auth");
    let (client, peer) = (free_port(), free_port());
    let mut etcd = Etcd::start(&bin, &dir, client, peer);
    for args in [&["user", "add", "root:s3cret"][..], &["auth", "enable"]] {
        let (ok, out) = etcd.ctl(args);
        assert!(ok, "etcdctl {args:?}: {out}");
    }
    etcd.auth = Some("root:s3cret");
    seed(&etcd);
    let good = Server::start(&dir, &corefile(client, "        credentials root s3cret\n"));
    assert_types(&good);
    etcd.put("/skydns/local/skydns/new", r#"{"host":"10.0.0.9"}"#);
    let new = until(&good, &["new.skydns.local", "A"], |d| d.data() == ["10.0.0.9"]);
    assert_eq!(new.data(), ["10.0.0.9"], "a watch with the token: {}", new.text);

    let other = temp_dir("etcd-auth-wrong");
    let bad = Server::spawn(&other, &corefile(client, "        credentials root wrong\n"));
    let started = Instant::now();
    while !bad.log_contains("authentication failed") && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        bad.log_contains("authentication failed"),
        "{:?}",
        bad.log.lock().map(|l| l.clone())
    );
    assert_eq!(dig(&bad, &["x1.skydns.local", "A"]).status, "SERVFAIL");
    assert!(!http_get(bad.ready, "/ready").starts_with("HTTP/1.1 200"));
}

#[test]
fn tls_with_a_client_certificate() {
    let Some(bin) = etcd_or_skip("etcd tls") else { return };
    let dir = temp_dir("etcd-tls");
    certs::ca(&dir, "ca", "etcd test CA");
    certs::signed(&dir, "server", "ca", "localhost", certs::Usage::Server, false);
    certs::signed(&dir, "client", "ca", "clusterdns", certs::Usage::Client, false);
    let client = free_port();
    let etcd = Etcd::start_with(&bin, &dir, (client, free_port()), Some(&dir));
    seed(&etcd);
    let endpoint = format!("https://127.0.0.1:{client}");
    let server = Server::start(
        &dir,
        &corefile_at(&endpoint, "        tls client.pem client.key ca.pem\n"),
    );
    assert_types(&server);
    // Without a client certificate etcd refuses the handshake: never ready.
    let other = temp_dir("etcd-tls-nocert");
    std::fs::copy(dir.join("ca.pem"), other.join("ca.pem")).expect("copy the CA");
    let bare = Server::spawn(&other, &corefile_at(&endpoint, "        tls ca.pem\n"));
    assert_eq!(dig(&bare, &["x1.skydns.local", "A"]).status, "SERVFAIL");
    assert!(!http_get(bare.ready, "/ready").starts_with("HTTP/1.1 200"));
}

#[test]
fn check_prints_the_directive_with_its_defaults() {
    let dir = temp_dir("etcd-check");
    let conf = dir.join("Corefile");
    let check = |text: &str| {
        std::fs::write(&conf, text).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
            .args(["check", "-conf"])
            .arg(&conf)
            .output()
            .expect("check");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        (out.status.success(), stdout.into_owned(), stderr.into_owned())
    };
    let (ok, printed, errors) =
        check("skydns.local {\n    etcd {\n        fallthrough\n        credentials u p\n    }\n}\n");
    assert!(ok, "{errors}");
    let want = "    etcd skydns.local. {\n        path /skydns\n        endpoint http://localhost:2379\n        min-lease-ttl 30\n        max-lease-ttl 86400\n        fallthrough\n        credentials u [hidden]\n    }\n";
    assert!(printed.contains(want), "{printed}");
    let (ok, printed, errors) =
        check("skydns.local {\n    etcd {\n        min-lease-ttl 1m\n        max-lease-ttl 2h30m\n    }\n}\n");
    assert!(ok, "{errors}");
    assert!(
        printed.contains("        min-lease-ttl 60\n        max-lease-ttl 9000\n"),
        "{printed}"
    );
    let (ok, _, errors) =
        check("skydns.local {\n    etcd {\n        min-lease-ttl soon\n        endpoint localhost\n    }\n}\n");
    assert!(!ok);
    assert!(
        errors.contains("Corefile:3:9: etcd: invalid min-lease-ttl value 'soon'"),
        "{errors}"
    );
    assert!(
        errors.contains("Corefile:4:9: etcd: endpoint 'localhost' is not http://HOST:PORT"),
        "{errors}"
    );
}
