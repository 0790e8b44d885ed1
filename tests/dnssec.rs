//! `dnssec`: answers signed on the fly with keys made at test time by
//! `dnssec-keygen`, checked by a validator clusterdns did not write: BIND's
//! `delv` with the key as its only trust anchor. An unsigned `file` zone
//! (one ECDSA P-256 key signing everything) and the cluster zone (an
//! ED25519 KSK signing the DNSKEY set, an RSASHA256 ZSK the rest) both
//! validate a positive answer, NXDOMAIN (a black lie: NOERROR with the
//! name's NSEC) and NODATA; DNSKEY is answered at the apex; dig sees RRSIGs
//! only when it sets DO; a trust anchor for another key fails validation;
//! the signature cache counts its hits.

mod common;

use std::path::{Path, PathBuf};

use common::delv::{anchor, delv, run_in, NEGATIVE, POSITIVE, ZONE};
use common::dig::dig_at;
use common::{demo_cluster, free_port, temp_dir, Server};

/// A key made by dnssec-keygen in `dir`: its base name.
fn keygen(dir: &Path, keygen: &Path, args: &[&str]) -> String {
    let base = [&["-q", "-K", ".", "-n", "ZONE"][..], args].concat();
    run_in(dir, keygen, &base).trim().to_string()
}

/// The Corefile: the zone file and the cluster zone on one port, each signed.
fn corefile(port: u16, csk: &str, ksk: &str, zsk: &str) -> String {
    format!(
        "example.test:{port} {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    file zone.db
    dnssec {{
        key file {csk}
    }}
}}
cluster.local:{port} {{
    bind 127.0.0.1
    kubernetes cluster.local {{
        snapshot {}
    }}
    dnssec {{
        key file {ksk}.key {zsk}.private
    }}
}}
",
        demo_cluster().display()
    )
}

#[test]
fn answers_signed_on_the_fly_validate_with_delv() {
    let test = "answers_signed_on_the_fly_validate_with_delv";
    let Some(tools) = common::delv::tools(test, &["dnssec-keygen", "delv"]) else {
        return;
    };
    let dir = temp_dir("dnssec");
    std::fs::write(dir.join("zone.db"), ZONE).expect("write zone");
    let csk = keygen(&dir, &tools[0], &["-a", "ECDSAP256SHA256", "example.test"]);
    let ksk = keygen(&dir, &tools[0], &["-a", "ED25519", "-f", "KSK", "cluster.local"]);
    let zsk = keygen(&dir, &tools[0], &["-a", "RSASHA256", "-b", "2048", "cluster.local"]);
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).expect("dir");
    let other = keygen(&other_dir, &tools[0], &["-a", "ECDSAP256SHA256", "example.test"]);
    anchor(&dir, &csk, "zone.anchor");
    anchor(&dir, &ksk, "cluster.anchor");
    anchor(&other_dir, &other, "other.anchor");
    let port = free_port();
    let server = Server::start(&dir, &corefile(port, &csk, &ksk, &zsk));
    let ask = |anchor: &str, root: &str, name: &str, qtype: &str| {
        let anchor: PathBuf = dir.join(anchor);
        delv(&tools[1], &anchor, root, port, name, qtype)
    };
    let cases = [
        (
            "zone.anchor",
            "example.test",
            "www.example.test",
            "A",
            POSITIVE,
            "192.0.2.10",
        ),
        (
            "zone.anchor",
            "example.test",
            "alias.example.test",
            "A",
            POSITIVE,
            "CNAME",
        ),
        (
            "zone.anchor",
            "example.test",
            "example.test",
            "DNSKEY",
            POSITIVE,
            "256 3 13",
        ),
        (
            "zone.anchor",
            "example.test",
            "nx.example.test",
            "A",
            NEGATIVE,
            "NXRRSET",
        ),
        (
            "zone.anchor",
            "example.test",
            "www.example.test",
            "TXT",
            NEGATIVE,
            "NXRRSET",
        ),
        (
            "cluster.anchor",
            "cluster.local",
            "kubernetes.default.svc.cluster.local",
            "A",
            POSITIVE,
            "10.96.0.1",
        ),
        (
            "cluster.anchor",
            "cluster.local",
            "cluster.local",
            "DNSKEY",
            POSITIVE,
            "257 3 15",
        ),
        (
            "cluster.anchor",
            "cluster.local",
            "nope.default.svc.cluster.local",
            "A",
            NEGATIVE,
            "NXRRSET",
        ),
        (
            "cluster.anchor",
            "cluster.local",
            "kubernetes.default.svc.cluster.local",
            "TXT",
            NEGATIVE,
            "NXRRSET",
        ),
    ];
    for (anchor, root, name, qtype, verdict, shows) in cases {
        let out = ask(anchor, root, name, qtype);
        assert!(out.contains(verdict), "{name} {qtype}: {out}");
        assert!(out.contains(shows), "{name} {qtype}: {out}");
    }
    // RRSIGs only for DO; the ZSK (RSASHA256, 8) signs the cluster's address, with CoreDNS's 3600
    let with = dig_at(
        "127.0.0.1",
        port,
        &["+dnssec", "kubernetes.default.svc.cluster.local", "A"],
    );
    assert!(
        with.answers.iter().any(|r| r.contains("RRSIG A 8 5 3600")),
        "{}",
        with.text
    );
    let without = dig_at("127.0.0.1", port, &["kubernetes.default.svc.cluster.local", "A"]);
    assert_eq!(without.answers.len(), 1, "{}", without.text);
    let nx = dig_at("127.0.0.1", port, &["+dnssec", "nx.example.test", "A"]);
    assert_eq!(nx.status, "NOERROR", "a black lie: {}", nx.text);
    assert!(
        nx.authority.iter().any(|r| r.contains("NSEC \\000.nx.example.test.")),
        "{}",
        nx.text
    );
    let plain_nx = dig_at("127.0.0.1", port, &["nx.example.test", "A"]);
    assert_eq!(plain_nx.status, "NXDOMAIN", "{}", plain_nx.text);
    // A trust anchor for a key the server does not hold: nothing validates.
    let out = ask("other/other.anchor", "example.test", "www.example.test", "A");
    assert!(!out.contains(POSITIVE), "another key must not validate: {out}");
    assert!(out.contains("resolution failed"), "{out}");
    let hits = server.metric_sum("coredns_dnssec_cache_hits_total", "server=");
    assert!(hits > 0.0, "{}", server.metrics());
    let entries = server.metric_sum("coredns_dnssec_cache_entries", "type=\"signature\"");
    assert!(entries > 0.0, "{}", server.metrics());
}
