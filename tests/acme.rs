//! `tls { acme }` against a real ACME server on loopback: Let's Encrypt's
//! `pebble` (Debian's package, installed by tests/run) started with
//! `-dnsserver` pointing at our plain DNS block, so it validates the DNS-01
//! challenge by asking clusterdns. Its HTTPS certificate is made by openssl
//! at test time and given to us as `ca_root`.
//!
//! Cases: `clusterdns check` prints the acme options with their defaults;
//! the ACME server's name (`acme.test`) known only to our DNS block,
//! reached through `resolver`;
//! the `tls://` listener serves once pebble's certificate arrives (kdig
//! +tls verifying it against pebble's root, openssl naming pebble's
//! intermediate as the issuer); pebble's `_acme-challenge` TXT query
//! reached our DNS block (its `log`); account and certificate stored 0600;
//! a restart serves the stored certificate without a new order; a corrupt
//! stored certificate is an error naming the file, and a new one is
//! obtained; one past its renewal point is renewed and the running
//! listener presents the new one.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{certs, free_port, temp_dir, Server};

/// pebble, killed on drop; its log in `log`.
struct Pebble {
    child: Child,
    port: u16,
    admin: u16,
    log: PathBuf,
}

impl Drop for Pebble {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Pebble {
    /// Starts pebble in `dir` with `pebble.pem`/`pebble.key`, validating
    /// DNS-01 by asking 127.0.0.1:`dns`.
    fn start(pebble: &Path, dir: &Path, dns: u16) -> Pebble {
        let (port, admin) = (free_port(), free_port());
        let config = format!(
            r#"{{"pebble": {{"listenAddress": "127.0.0.1:{port}", "managementListenAddress": "127.0.0.1:{admin}",
            "certificate": "pebble.pem", "privateKey": "pebble.key", "httpPort": {}, "tlsPort": {},
            "ocspResponderURL": "", "externalAccountBindingRequired": false}}}}"#,
            free_port(),
            free_port()
        );
        std::fs::write(dir.join("pebble.json"), config).expect("write pebble.json");
        let log = dir.join("pebble.log");
        let out = std::fs::File::create(&log).expect("pebble.log");
        let child = Command::new(pebble)
            .args(["-config", "pebble.json", "-dnsserver", &format!("127.0.0.1:{dns}")])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .current_dir(dir)
            .stdout(out.try_clone().expect("dup"))
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .expect("start pebble");
        let p = Pebble {
            child,
            port,
            admin,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).is_err() {
            assert!(Instant::now() < deadline, "pebble did not listen: {}", p.log());
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many orders pebble was sent.
    fn orders(&self) -> usize {
        self.log().matches("POST /order-plz").count()
    }
}

/// Our DNS block (which pebble asks, and which alone knows `acme.test`,
/// pebble's name) and the `tls://` block whose certificate pebble issues,
/// reaching pebble by that name through `resolver`.
fn corefile(dir: &Path, dns: u16, dot: u16, pebble: u16) -> String {
    format!(
        ".:{dns} {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    log\n    hosts {{\n        127.0.0.1 acme.test\n    }}\n}}\n\
         tls://.:{dot} {{\n    bind 127.0.0.1\n    tls {{\n        acme dns.example\n        email ops@example.org\n        \
         ca https://acme.test:{pebble}/dir\n        ca_root {}\n        resolver 127.0.0.1:{dns}\n    }}\n    whoami\n}}\n",
        dir.join("ca.pem").display()
    )
}

/// kdig's answer over DNS over TLS at `port`, verifying the certificate
/// for dns.example against `root`.
fn kdig_tls(port: u16, root: &Path) -> String {
    common::run(
        "kdig",
        &[
            "@127.0.0.1",
            "-p",
            &port.to_string(),
            "+tls",
            &format!("+tls-ca={}", root.display()),
            "+tls-hostname=dns.example",
            "+time=2",
            "+retry=0",
            "whoami.example",
            "A",
        ],
    )
}

/// Waits until kdig gets an answer over a verified session.
fn served(port: u16, root: &Path, server: &Server) -> String {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = kdig_tls(port, root);
        if out.contains("status: NOERROR") {
            return out;
        }
        let log = server.log.lock().map(|l| l.join("\n")).unwrap_or_default();
        assert!(
            Instant::now() < deadline,
            "no certificate served in 90 s:\n{out}\n{log}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The issuer of the certificate the listener at `port` presents.
fn issuer(port: u16) -> String {
    let mut s_client = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-servername",
            "dns.example",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_client");
    let pem = s_client.stdout.take().expect("stdout");
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-issuer", "-subject"])
        .stdin(pem)
        .output()
        .expect("openssl x509");
    let _ = s_client.wait();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn acme_certificate_from_pebble_over_dns01() {
    let install = "apt-get install pebble knot-dnsutils openssl curl (tests/run installs them)";
    let Some(pebble) = common::needs("acme", common::installed("pebble"), install) else {
        return;
    };
    for tool in ["kdig", "openssl", "curl"] {
        if common::needs("acme", common::installed(tool), install).is_none() {
            return;
        }
    }
    let dir = temp_dir("acme");
    certs::ca(&dir, "ca", "clusterdns test ACME CA");
    certs::signed(&dir, "pebble", "ca", "acme.test", certs::Usage::Server, false);
    let (dns, dot) = (free_port(), free_port());
    let pebble = Pebble::start(&pebble, &dir, dns);
    let text = corefile(&dir, dns, dot, pebble.port);
    std::fs::write(dir.join("Corefile"), &text).expect("write Corefile");

    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(dir.join("Corefile"))
        .output()
        .expect("check");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let storage = dir.join(".coredns/acme");
    for line in [
        "    tls {".to_string(),
        "        acme dns.example".into(),
        "        email ops@example.org".into(),
        format!("        ca https://acme.test:{}/dir", pebble.port),
        format!("        storage {}", storage.display()),
        format!("        ca_root {}", dir.join("ca.pem").display()),
        format!("        resolver 127.0.0.1:{dns}"),
    ] {
        assert!(
            printed.contains(&format!("{line}\n")),
            "check lacks {line:?}:\n{printed}"
        );
    }

    let server = Server::start(&dir, &text);
    let root = dir.join("pebble-root.pem");
    let roots = format!("https://127.0.0.1:{}/roots/0", pebble.admin);
    let ca = dir.join("ca.pem");
    let pem = common::run("curl", &["-sf", "--cacert", &ca.display().to_string(), &roots]);
    assert!(pem.contains("BEGIN CERTIFICATE"), "pebble's root: {pem}");
    std::fs::write(&root, pem).expect("write pebble's root");
    let answer = served(dot, &root, &server);
    assert!(answer.contains("TLS session"), "{answer}");
    let names = issuer(dot);
    assert!(names.contains("Pebble Intermediate CA"), "issuer: {names}");
    assert!(
        names.contains("CN = dns.example") || names.contains("CN=dns.example"),
        "{names}"
    );
    assert!(
        server.log_contains("TXT IN _acme-challenge.dns.example."),
        "pebble's challenge query was not logged by our DNS block"
    );
    assert!(
        server.log_contains("A IN acme.test."),
        "pebble's name was not looked up at `resolver`"
    );
    stored_privately(&storage);
    assert_eq!(pebble.orders(), 1);
    drop(server);

    // A restart serves the stored certificate: no second order.
    let server = Server::start(&dir, &text);
    served(dot, &root, &server);
    assert_eq!(pebble.orders(), 1, "the stored certificate was ordered again");
    drop(server);

    // A corrupt stored certificate: an error naming it, then a new one.
    let file = storage.join(format!("acme.test-{}-dir/dns.example.pem", pebble.port));
    std::fs::write(&file, "not a certificate\n").expect("corrupt it");
    let server = Server::start(&dir, &text);
    served(dot, &root, &server);
    let named = format!("{}: no PEM certificate in it", file.display());
    assert!(server.log_contains(&named), "no error naming {}", file.display());
    assert_eq!(pebble.orders(), 2);
    drop(server);

    // A stored certificate past its renewal point (here: expired, from our
    // own CA) is served until the renewed one arrives, which the running
    // listener then presents.
    certs::signed(&dir, "old", "ca", "dns.example", certs::Usage::Server, true);
    let old = [dir.join("old.pem"), dir.join("old.key")].map(|f| std::fs::read_to_string(f).expect("old"));
    std::fs::write(&file, old.concat()).expect("store the old certificate");
    let server = Server::start(&dir, &text);
    served(dot, &root, &server);
    assert!(server.log_contains("acme: renewing"), "no renewal logged");
    assert!(
        server.log_contains("certificate read again"),
        "the listener did not re-read it"
    );
    assert_eq!(pebble.orders(), 3);
}

/// The account and certificate files under `storage` are 0600.
fn stored_privately(storage: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let ca_dirs: Vec<PathBuf> = std::fs::read_dir(storage)
        .expect("storage")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(ca_dirs.len(), 1, "{ca_dirs:?}");
    let mut files: Vec<String> = std::fs::read_dir(&ca_dirs[0])
        .expect("ca dir")
        .map(|e| e.expect("entry"))
        .map(|e| {
            let mode = e.metadata().expect("stat").permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", e.path().display());
            e.file_name().to_string_lossy().into_owned()
        })
        .collect();
    files.sort();
    assert_eq!(files, ["account.json", "dns.example.pem"]);
}
