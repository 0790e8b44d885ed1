//! `tsig` on every transport, end to end with real clients: BIND's `dig
//! -y` over UDP and TCP, `kdig -y` over UDP, TCP, TLS (`+tls`), HTTPS
//! (`+https`, POST and GET) and QUIC (`+quic`), with certificates made by
//! openssl at test time.
//!
//! CVE-2026-33190 and CVE-2026-35579 (CoreDNS verified TSIG only on plain
//! DNS): with `require all`, on each transport an unsigned query is
//! REFUSED, one signed with the wrong secret is NOTAUTH/BADSIG, one signed
//! by an unknown key is NOTAUTH/BADKEY, and one signed with the right
//! secret is answered with a reply the client verifies. Keys come from a
//! `secret` line and from a `secrets` file (BIND's `key { }` form), with
//! HMAC-SHA256 and HMAC-SHA512.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{certs, free_port, temp_dir, Server};

const NAME: &str = "kubernetes.default.svc.cluster.local";
const WANT: &str = "10.96.0.1";
const SECRET: &str = "NoTCJU+DMqFWywaPyxSijrDEA/eC3nK0xi3AMEZuPVk=";
const FILE_SECRET: &str = "X28hl0BOfAL5G0jsmJWSacrwn7YRm2f6U5brnzwWEus=";
const WRONG: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/// The tools these tests need, or `None` (SKIP; a failure under CI).
fn tools(test: &str) -> Option<()> {
    let install = "apt-get install knot-dnsutils bind9-dnsutils openssl (tests/run installs them)";
    for tool in ["kdig", "dig", "openssl"] {
        common::needs(test, common::installed(tool), install)?;
    }
    Some(())
}

/// A block of `scheme` on 127.0.0.1:`port` requiring TSIG for everything.
fn block(scheme: &str, port: u16, inner: &str) -> String {
    format!(
        "{scheme}://.:{port} {{
    bind 127.0.0.1
    {inner}
    tsig {{
        secret key.test. {SECRET}
        secrets keys.conf
        require all
    }}
    kubernetes cluster.local {{
        snapshot {}
    }}
}}
",
        common::demo_cluster().display()
    )
}

/// Runs `cmd` (dig or kdig) in `dir` asking `NAME` A; stdout and stderr.
fn ask(dir: &Path, cmd: &str, port: u16, args: &[&str]) -> String {
    ask_for(dir, cmd, port, NAME, args)
}

/// Runs `cmd` (dig or kdig) in `dir` asking `name`; stdout and stderr.
fn ask_for(dir: &Path, cmd: &str, port: u16, name: &str, args: &[&str]) -> String {
    let p = port.to_string();
    let once = if cmd == "kdig" { "+retry=0" } else { "+tries=1" };
    let base = ["@127.0.0.1", "-p", p.as_str(), "+time=5", once, name];
    let out = Command::new(cmd)
        .args([&base[..], args].concat())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Whether the client says the reply's TSIG did not verify.
fn unverified(out: &str) -> bool {
    out.contains("Couldn't verify") || out.contains("failed to verify") || out.contains("WARNING -- Some TSIG")
}

/// The four cases on one client and transport (`how` names it).
fn four_cases(dir: &Path, cmd: &str, port: u16, transport: &[&str], how: &str) {
    let with = |key: Option<String>| {
        let key: Vec<String> = key.into_iter().flat_map(|k| ["-y".to_string(), k]).collect();
        let key: Vec<&str> = key.iter().map(String::as_str).collect();
        ask(dir, cmd, port, &[transport, &key[..]].concat())
    };
    let answered = |out: &str| out.lines().any(|l| l.starts_with(NAME) && l.contains(WANT));

    let out = with(None);
    assert!(
        out.contains("status: REFUSED") && !answered(&out),
        "{how}: unsigned\n{out}"
    );

    let out = with(Some(format!("hmac-sha256:key.test.:{WRONG}")));
    let refused = out.contains("status: NOTAUTH") || out.contains("status: BADSIG");
    assert!(
        refused && out.contains("BADSIG") && !answered(&out),
        "{how}: wrong secret\n{out}"
    );

    let out = with(Some(format!("hmac-sha256:nobody.test.:{SECRET}")));
    let refused = out.contains("status: NOTAUTH") || out.contains("status: BADKEY");
    assert!(
        refused && out.contains("BADKEY") && !answered(&out),
        "{how}: unknown key\n{out}"
    );

    for key in [
        format!("hmac-sha256:key.test.:{SECRET}"),
        format!("hmac-sha512:file.key.:{FILE_SECRET}"),
    ] {
        let out = with(Some(key.clone()));
        assert!(answered(&out), "{how}: {key}: no answer\n{out}");
        assert!(
            out.contains("TSIG") && !unverified(&out),
            "{how}: {key}: reply not verified\n{out}"
        );
    }
}

#[test]
fn tsig_is_required_and_verified_on_every_transport() {
    let test = "tsig_is_required_and_verified_on_every_transport";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("tsig-transports");
    certs::ca(&dir, "ca", "clusterdns test CA");
    certs::signed(&dir, "srv", "ca", "dns.test", certs::Usage::Server, false);
    let keys = format!(
        "# a BIND key file\nkey \"file.key.\" {{\n    algorithm hmac-sha512;\n    secret \"{FILE_SECRET}\";\n}};\n"
    );
    std::fs::write(dir.join("keys.conf"), keys).expect("keys.conf");
    let (tls, https, quic) = (free_port(), free_port(), free_port());
    let plain = block("dns", 0, "ready 127.0.0.1:0");
    let corefile = [
        plain,
        block("tls", tls, "tls srv.pem srv.key"),
        block("https", https, "tls srv.pem srv.key"),
        block("quic", quic, "tls srv.pem srv.key"),
    ]
    .concat();
    let server = Server::start(&dir, &corefile);
    let udp = server.dns.port();
    let verified = ["+tls-ca=ca.pem", "+tls-hostname=dns.test"];
    four_cases(&dir, "dig", udp, &[], "dig UDP");
    four_cases(&dir, "dig", udp, &["+tcp"], "dig TCP");
    four_cases(&dir, "kdig", udp, &[], "kdig UDP");
    four_cases(&dir, "kdig", udp, &["+tcp"], "kdig TCP");
    four_cases(&dir, "kdig", tls, &[&verified[..], &["+tls"]].concat(), "kdig DoT");
    four_cases(
        &dir,
        "kdig",
        https,
        &[&verified[..], &["+https"]].concat(),
        "kdig DoH POST",
    );
    let get = [&verified[..], &["+https", "+https-get"]].concat();
    four_cases(&dir, "kdig", https, &get, "kdig DoH GET");
    four_cases(&dir, "kdig", quic, &[&verified[..], &["+quic"]].concat(), "kdig DoQ");
}

#[test]
fn tsig_covers_only_its_zones_and_the_types_it_requires() {
    let test = "tsig_covers_only_its_zones_and_the_types_it_requires";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("tsig-require");
    let corefile = format!(
        ".:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    tsig svc.cluster.local {{
        secret key.test. {SECRET}
        require A
    }}
    kubernetes cluster.local {{
        snapshot {}
    }}
}}
",
        common::demo_cluster().display()
    );
    let server = Server::start(&dir, &corefile);
    let port = server.dns.port();
    // Under the zone, type A must be signed; AAAA need not be.
    let out = ask(&dir, "dig", port, &[]);
    assert!(out.contains("status: REFUSED"), "unsigned A\n{out}");
    let out = ask(&dir, "dig", port, &["AAAA"]);
    assert!(
        out.contains("status: NOERROR") && !out.contains("TSIG"),
        "unsigned AAAA\n{out}"
    );
    let out = ask(
        &dir,
        "dig",
        port,
        &["AAAA", "-y", &format!("hmac-sha256:key.test.:{SECRET}")],
    );
    assert!(
        out.contains("status: NOERROR") && out.contains("TSIG") && !unverified(&out),
        "signed AAAA\n{out}"
    );
    // Outside the zone the plugin does not look.
    let out = Command::new("dig")
        .args([
            "@127.0.0.1",
            "-p",
            &port.to_string(),
            "+tries=1",
            "+time=5",
            "cluster.local",
            "SOA",
        ])
        .output()
        .expect("dig");
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("status: NOERROR"), "outside the zone\n{out}");
}

/// `clusterdns check -conf CONF`: whether it passed, and its stdout then stderr.
fn check(conf: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(conf)
        .output()
        .expect("run clusterdns check");
    let text = [out.stdout, out.stderr].concat();
    (out.status.success(), String::from_utf8_lossy(&text).into_owned())
}

#[test]
fn check_prints_key_names_never_secrets_and_a_bad_key_file_is_located() {
    let dir = temp_dir("tsig-check");
    std::fs::write(
        dir.join("keys.conf"),
        format!("key \"file.key.\" {{\n    secret \"{FILE_SECRET}\";\n}};\n"),
    )
    .expect("keys");
    let conf = dir.join("Corefile");
    let text = format!(".:53 {{\n    tsig {{\n        secret key.test. {SECRET}\n        secrets keys.conf\n        require AXFR IXFR\n    }}\n    whoami\n}}\n");
    std::fs::write(&conf, text).expect("Corefile");
    let (ok, out) = check(&conf);
    assert!(ok, "{out}");
    assert!(
        out.contains("secret key.test. [hidden]") && out.contains("secrets keys.conf"),
        "{out}"
    );
    assert!(
        out.contains("require AXFR IXFR") && out.contains("require_opcode none"),
        "{out}"
    );
    assert!(
        !out.contains(SECRET) && !out.contains(FILE_SECRET),
        "a secret printed:\n{out}"
    );

    std::fs::write(
        dir.join("keys.conf"),
        "key \"file.key.\" {\n    secret \"not base64!\";\n};\n",
    )
    .expect("keys");
    let (ok, out) = check(&conf);
    assert!(!ok, "{out}");
    let at = format!(
        "{}:2:12: tsig: the secret of key 'file.key.' is not base64",
        dir.join("keys.conf").display()
    );
    assert!(out.contains(&at), "want {at}\n{out}");
}

#[test]
fn forwarded_answers_and_cache_hits_are_signed_too() {
    let test = "forwarded_answers_and_cache_hits_are_signed_too";
    if tools(test).is_none() {
        return;
    }
    let stub = common::stub::Stub::start();
    let dir = temp_dir("tsig-forward");
    certs::ca(&dir, "ca", "clusterdns test CA");
    certs::signed(&dir, "srv", "ca", "dns.test", certs::Usage::Server, false);
    let tls = free_port();
    let block = |scheme: &str, port: u16, inner: &str| {
        format!(
            "{scheme}://.:{port} {{\n    bind 127.0.0.1\n    {inner}\n    tsig {{\n        secret key.test. {SECRET}\n        require all\n    }}\n    cache 30\n    forward . {}\n}}\n",
            stub.addr
        )
    };
    let corefile = block("dns", 0, "ready 127.0.0.1:0") + &block("tls", tls, "tls srv.pem srv.key");
    let server = Server::start(&dir, &corefile);
    let key = format!("hmac-sha256:key.test.:{SECRET}");
    let udp = server.dns.port();
    let dot = ["+tls", "+tls-ca=ca.pem", "+tls-hostname=dns.test"];
    let cases: [(&str, u16, &[&str]); 3] = [("dig", udp, &[]), ("dig", udp, &["+tcp"]), ("kdig", tls, &dot)];
    for (i, (cmd, port, transport)) in cases.iter().enumerate() {
        // A name of its own: the first ask is forwarded (the task signs), the second a cache hit.
        let name = format!("www{i}.example.org");
        for turn in ["forwarded", "cache hit"] {
            let args = [&transport[..], &["-y", &key]].concat();
            let out = ask_for(&dir, cmd, *port, &name, &args);
            assert!(
                out.contains("192.0.2.1"),
                "{cmd} {transport:?} {turn}: no answer\n{out}"
            );
            assert!(
                out.contains("TSIG") && !unverified(&out),
                "{cmd} {transport:?} {turn}: not verified\n{out}"
            );
        }
    }
    assert!(stub.count() >= 3, "the names were forwarded: {}", stub.count());
}

/// A zone of `n` address records under example.org, enough for several
/// transfer messages.
fn big_zone(n: usize) -> String {
    let mut zone = String::from(
        "$ORIGIN example.org.\n$TTL 60\n@ IN SOA ns admin 7 7200 3600 1209600 60\n@ IN NS ns\nns IN A 127.0.0.1\n",
    );
    for i in 0..n {
        zone += &format!("host{i} IN A 192.0.{}.{}\n", i / 250, i % 250 + 1);
    }
    zone
}

#[test]
fn zone_transfers_are_signed_message_by_message() {
    let test = "zone_transfers_are_signed_message_by_message";
    if tools(test).is_none() {
        return;
    }
    let dir = temp_dir("tsig-axfr");
    let hosts = 4_000;
    std::fs::write(dir.join("example.org.db"), big_zone(hosts)).expect("zone file");
    let corefile = format!(
        "example.org:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    tsig {{
        secret key.test. {SECRET}
        require AXFR IXFR
    }}
    file example.org.db
    transfer {{
        to *
    }}
}}
"
    );
    let server = Server::start(&dir, &corefile);
    let port = server.dns.port();
    let key = format!("hmac-sha256:key.test.:{SECRET}");
    let records = |out: &str| out.lines().filter(|l| l.starts_with("host")).count();

    // dig checks every message's TSIG in the chain of MACs (RFC 8945 §5.3.1).
    let out = ask_for(&dir, "dig", port, "example.org", &["AXFR", "-y", &key]);
    let messages = out
        .lines()
        .find_map(|l| l.split("(messages ").nth(1))
        .and_then(|m| m.split(',').next())
        .and_then(|m| m.trim().parse::<u32>().ok());
    assert_eq!(records(&out), hosts, "dig: every record\n{}", tail(&out));
    assert!(messages.is_some_and(|m| m > 1), "several messages\n{}", tail(&out));
    assert!(
        !unverified(&out) && !out.contains("failed") && !out.contains("tsig verify"),
        "dig verifies each message\n{}",
        tail(&out)
    );
    // kdig too: it refuses a transfer whose TSIG does not verify.
    let out = ask_for(&dir, "kdig", port, "example.org", &["AXFR", "-y", &key]);
    assert_eq!(records(&out), hosts, "kdig: every record\n{}", tail(&out));
    assert!(!out.contains("failed"), "kdig verifies\n{}", tail(&out));

    // Unsigned, or signed with the wrong secret: no record leaves.
    let out = ask_for(&dir, "dig", port, "example.org", &["AXFR"]);
    assert_eq!(records(&out), 0, "unsigned\n{}", tail(&out));
    let wrong = format!("hmac-sha256:key.test.:{WRONG}");
    let out = ask_for(&dir, "dig", port, "example.org", &["AXFR", "-y", &wrong]);
    assert_eq!(records(&out), 0, "wrong secret\n{}", tail(&out));
}

/// The last lines of a transfer's output, for a failure message.
fn tail(out: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}
