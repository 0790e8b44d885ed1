//! A `file` zone signed by BIND's `dnssec-signzone` (keys made at test
//! time by `dnssec-keygen`), served by clusterdns and checked by a
//! validator it did not write: BIND's `delv`, with the zone's KSK as its
//! only trust anchor, fully validates a positive answer, a CNAME, a
//! wildcard answer, NXDOMAIN, NODATA, an empty non-terminal and a
//! wildcard's NODATA; a record changed after signing fails validation; dig
//! sees RRSIGs only when it sets DO.

mod common;

use std::path::Path;

use common::delv::{anchor, expect, run_in, NEGATIVE, POSITIVE, ZONE};
use common::dig::dig_at;
use common::{free_port, temp_dir, Server};

/// Signs [`ZONE`] in `dir` (a KSK and a ZSK, ECDSA P-256, NSEC) into
/// `signed.db`; the trust anchor of its KSK for delv into `anchor.conf`.
fn sign(dir: &Path, tools: &[std::path::PathBuf; 3]) {
    std::fs::write(dir.join("zone.db"), ZONE).expect("write zone");
    let keygen = ["-q", "-K", ".", "-a", "ECDSAP256SHA256", "-n", "ZONE"];
    let ksk = run_in(dir, &tools[0], &[&keygen[..], &["-f", "KSK", "example.test"]].concat());
    run_in(dir, &tools[0], &[&keygen[..], &["example.test"]].concat());
    let args = ["-S", "-K", ".", "-o", "example.test", "-f", "signed.db", "zone.db"];
    run_in(dir, &tools[1], &args);
    anchor(dir, ksk.trim(), "anchor.conf");
}

/// delv's verdict on `name` `qtype` asked of 127.0.0.1:`port`, trusting the KSK.
fn delv(delv: &Path, dir: &Path, port: u16, name: &str, qtype: &str) -> String {
    common::delv::delv(delv, &dir.join("anchor.conf"), "example.test", port, name, qtype)
}

#[test]
fn a_signed_zone_validates_with_delv() {
    let test = "a_signed_zone_validates_with_delv";
    let Some(tools) = common::delv::tools(test, &["dnssec-keygen", "dnssec-signzone", "delv"]) else {
        return;
    };
    let tools: [std::path::PathBuf; 3] = tools.try_into().expect("three tools");
    let dir = temp_dir("file-dnssec");
    sign(&dir, &tools);
    let signed = std::fs::read_to_string(dir.join("signed.db")).expect("signed zone");
    std::fs::write(dir.join("tampered.db"), signed.replace("192.0.2.10", "192.0.2.66")).expect("write");
    let (port, other) = (free_port(), free_port());
    let block = |port: u16, file: &str| {
        format!(
            "example.test:{port} {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file {}\n}}\n",
            dir.join(file).display()
        )
    };
    let corefile = block(port, "signed.db");
    let _server = Server::start(&dir, &corefile);
    let (positive, negative) = (POSITIVE, NEGATIVE);
    let cases = [
        ("www.example.test", "A", positive, "192.0.2.10"),
        ("alias.example.test", "A", positive, "CNAME"),
        ("x.wild.example.test", "A", positive, "192.0.2.20"),
        ("example.test", "DNSKEY", positive, "257 3 13"),
        ("nx.example.test", "A", negative, "NXDOMAIN"),
        ("www.example.test", "TXT", negative, "NXRRSET"),
        ("wild.example.test", "A", negative, "NXRRSET"),
        ("x.y.wild.example.test", "TXT", negative, "NXRRSET"),
    ];
    expect(&cases, |name, qtype| delv(&tools[2], &dir, port, name, qtype));
    let with = dig_at("127.0.0.1", port, &["+dnssec", "www.example.test", "A"]);
    assert!(
        with.answers.iter().any(|r| r.contains("RRSIG A 13 3 300")),
        "{}",
        with.text
    );
    let without = dig_at("127.0.0.1", port, &["www.example.test", "A"]);
    assert_eq!(without.answers.len(), 1, "{}", without.text);
    let nx = dig_at("127.0.0.1", port, &["+dnssec", "nx.example.test", "A"]);
    assert_eq!(nx.status, "NXDOMAIN");
    assert!(nx.authority.iter().any(|r| r.contains(" NSEC ")), "{}", nx.text);
    // The same zone with one address changed after signing: the signature no longer holds.
    let other_dir = dir.join("tampered");
    std::fs::create_dir_all(&other_dir).expect("dir");
    let _tampered = Server::start(&other_dir, &block(other, "tampered.db"));
    let out = delv(&tools[2], &dir, other, "www.example.test", "A");
    assert!(!out.contains(positive), "a changed record must not validate: {out}");
    assert!(out.contains("resolution failed"), "{out}");
    let unchanged = delv(&tools[2], &dir, other, "alias.example.test", "CNAME");
    assert!(
        unchanged.contains(positive),
        "the rest of that zone still validates: {unchanged}"
    );
}
