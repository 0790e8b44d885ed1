//! `sign`: a zone file signed by clusterdns with a key made at test time by
//! `dnssec-keygen`, written to `db.<zone>.signed` and served by `file`;
//! checked by validators clusterdns did not write: BIND's `dnssec-verify`
//! finds the written zone fully signed (and a record changed after signing
//! not), and `delv`, trusting the key, validates answers from it: a name,
//! a wildcard, a TXT record, NXDOMAIN and NODATA.

mod common;

use std::path::Path;
use std::process::Command;

use common::delv::{anchor, delv, expect, run_in, NEGATIVE, POSITIVE, ZONE};
use common::netns::eventually;
use common::{free_port, temp_dir, Server};

/// `dnssec-verify`'s output on `file` (every set signed by the KSK alone is enough).
fn verify(tool: &Path, dir: &Path, file: &str) -> (bool, String) {
    let out = Command::new(tool)
        .current_dir(dir)
        .args(["-z", "-o", "example.test", file])
        .output()
        .expect("run dnssec-verify");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn a_zone_signed_by_sign_verifies_and_validates() {
    let test = "a_zone_signed_by_sign_verifies_and_validates";
    let Some(tools) = common::delv::tools(test, &["dnssec-keygen", "dnssec-verify", "delv"]) else {
        return;
    };
    let dir = temp_dir("sign");
    let zone = format!("{ZONE}txt IN TXT \"hello world\" \"two\"\n");
    std::fs::write(dir.join("db.example.test"), zone).expect("write zone");
    let keygen = [
        "-q",
        "-K",
        ".",
        "-a",
        "ECDSAP256SHA256",
        "-f",
        "KSK",
        "-n",
        "ZONE",
        "example.test",
    ];
    let key = run_in(&dir, &tools[0], &keygen).trim().to_string();
    anchor(&dir, &key, "anchor.conf");
    let port = free_port();
    let corefile = format!(
        "example.test:{port} {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    file db.example.test.signed {{
        reload 1s
    }}
    sign db.example.test {{
        key file {key}
        directory .
    }}
}}
"
    );
    let _server = Server::start(&dir, &corefile);
    let signed = dir.join("db.example.test.signed");
    assert!(eventually(|| signed.exists()), "sign writes the signed zone");
    let (ok, out) = verify(&tools[1], &dir, "db.example.test.signed");
    assert!(ok && out.contains("Zone fully signed"), "{out}");
    // `file` picks the written zone up within its reload period
    let anchor = dir.join("anchor.conf");
    let ask = |name: &str, qtype: &str| delv(&tools[2], &anchor, "example.test", port, name, qtype);
    assert!(eventually(|| ask("www.example.test", "A").contains(POSITIVE)));
    let cases = [
        ("www.example.test", "A", POSITIVE, "192.0.2.10"),
        ("x.wild.example.test", "A", POSITIVE, "192.0.2.20"),
        ("txt.example.test", "TXT", POSITIVE, "\"hello world\" \"two\""),
        ("example.test", "DNSKEY", POSITIVE, "257 3 13"),
        ("nx.example.test", "A", NEGATIVE, "NXDOMAIN"),
        ("www.example.test", "TXT", NEGATIVE, "NXRRSET"),
    ];
    expect(&cases, ask);
    // A record changed after signing: dnssec-verify finds its signature broken.
    let text = std::fs::read_to_string(&signed).expect("signed zone");
    assert!(text.contains("192.0.2.10"), "the record to change is there");
    std::fs::write(dir.join("tampered.db"), text.replace("192.0.2.10", "192.0.2.66")).expect("write");
    let (ok, out) = verify(&tools[1], &dir, "tampered.db");
    assert!(!ok, "a changed record must not verify: {out}");
}
