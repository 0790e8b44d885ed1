//! `dnssec`: answers signed on the fly with keys made at test time by
//! `dnssec-keygen`, checked by a validator clusterdns did not write: BIND's
//! `delv` with the key as its only trust anchor. An unsigned `file` zone
//! (one ECDSA P-256 key signing everything), the cluster zone (an ED25519
//! KSK signing the DNSKEY set, an RSASHA256 ZSK the rest) and a forwarded
//! zone behind `cache` (an ECDSA P-384 key) validate a positive answer, a
//! wildcard, NXDOMAIN (a black lie: NOERROR with the name's NSEC) and
//! NODATA, asked twice (cached answers and signatures the second time);
//! DNSKEY is answered at the apex; dig sees RRSIGs only when it sets DO; a
//! trust anchor for another key fails validation; the signature cache
//! counts its hits.

mod common;

use std::path::Path;

use common::delv::{anchor, delv, expect, run_in, NEGATIVE, POSITIVE, ZONE};
use common::dig::dig_at;
use common::{demo_cluster, free_port, temp_dir, Server};

/// A key made by dnssec-keygen in `dir`: its base name.
fn keygen(dir: &Path, keygen: &Path, args: &[&str]) -> String {
    let base = [&["-q", "-K", ".", "-n", "ZONE"][..], args].concat();
    run_in(dir, keygen, &base).trim().to_string()
}

/// The Corefile: the zone file, the cluster zone and a forwarded zone
/// (cached) on one port, each signed; `up` serves the forwarded zone.
fn corefile(port: u16, up: u16, keys: &[String; 4]) -> String {
    let [csk, ksk, zsk, fwd] = keys;
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
fwd.test:{port} {{
    bind 127.0.0.1
    cache
    forward . 127.0.0.1:{up}
    dnssec fwd.test {{
        key file {fwd}
    }}
}}
",
        demo_cluster().display()
    )
}

/// The zones signed, each asked with its own key as delv's trust anchor.
const ZONES: [&str; 3] = ["example.test", "cluster.local", "fwd.test"];

/// Each question: the name and type, what delv must show; an answer
/// showing NXRRSET is a validated denial.
const CASES: [&str; 12] = [
    "www.example.test A 192.0.2.10",
    "alias.example.test A CNAME",
    "x.wild.example.test A 192.0.2.20",
    "example.test DNSKEY 256 3 13",
    "nx.example.test A NXRRSET",
    "www.example.test TXT NXRRSET",
    "kubernetes.default.svc.cluster.local A 10.96.0.1",
    "cluster.local DNSKEY 257 3 15",
    "nope.default.svc.cluster.local A NXRRSET",
    "kubernetes.default.svc.cluster.local TXT NXRRSET",
    "www.fwd.test A 192.0.2.10",
    "nx.fwd.test A NXRRSET",
];

#[test]
fn answers_signed_on_the_fly_validate_with_delv() {
    let test = "answers_signed_on_the_fly_validate_with_delv";
    let Some(tools) = common::delv::tools(test, &["dnssec-keygen", "delv"]) else {
        return;
    };
    let dir = temp_dir("dnssec");
    std::fs::write(dir.join("zone.db"), ZONE).expect("write zone");
    let gen = |dir: &Path, args: &[&str]| keygen(dir, &tools[0], args);
    let keys = [
        gen(&dir, &["-a", "ECDSAP256SHA256", "example.test"]),
        gen(&dir, &["-a", "ED25519", "-f", "KSK", "cluster.local"]),
        gen(&dir, &["-a", "RSASHA256", "-b", "2048", "cluster.local"]),
        gen(&dir, &["-a", "ECDSAP384SHA384", "fwd.test"]),
    ];
    for (key, zone) in [
        (&keys[0], "example.test"),
        (&keys[1], "cluster.local"),
        (&keys[3], "fwd.test"),
    ] {
        anchor(&dir, key, &format!("{zone}.anchor"));
    }
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).expect("dir");
    let other = gen(&other_dir, &["-a", "ECDSAP256SHA256", "example.test"]);
    anchor(&other_dir, &other, "other.anchor");
    // the forwarded zone's upstream: the same zone, unsigned, under fwd.test
    let up_dir = dir.join("upstream");
    std::fs::create_dir_all(&up_dir).expect("dir");
    std::fs::write(up_dir.join("zone.db"), ZONE.replace("example.test", "fwd.test")).expect("write zone");
    let up = Server::start(
        &up_dir,
        "fwd.test:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    file zone.db\n}\n",
    );
    let up_port: u16 = up.port().parse().expect("port");
    let port = free_port();
    let server = Server::start(&dir, &corefile(port, up_port, &keys));
    let ask = |anchor: &Path, root: &str, name: &str, qtype: &str| delv(&tools[1], anchor, root, port, name, qtype);
    let cases: Vec<(&str, &str, &str, &str)> = CASES
        .iter()
        .map(|case| {
            let [name, qtype, shows] = case.splitn(3, ' ').collect::<Vec<_>>()[..] else {
                panic!("{case}");
            };
            let verdict = if shows == "NXRRSET" { NEGATIVE } else { POSITIVE };
            (name, qtype, verdict, shows)
        })
        .collect();
    for _round in 0..2 {
        // the second round: cached forwarded answers and cached signatures
        expect(&cases, |name, qtype| {
            let root = ZONES.iter().find(|z| name.ends_with(*z)).expect("a signed zone");
            ask(&dir.join(format!("{root}.anchor")), root, name, qtype)
        });
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
    let lie = "NSEC \\000.nx.example.test.";
    assert!(nx.authority.iter().any(|r| r.contains(lie)), "{}", nx.text);
    let plain_nx = dig_at("127.0.0.1", port, &["nx.example.test", "A"]);
    assert_eq!(plain_nx.status, "NXDOMAIN", "{}", plain_nx.text);
    // A trust anchor for a key the server does not hold: nothing validates.
    let out = ask(&other_dir.join("other.anchor"), "example.test", "www.example.test", "A");
    assert!(!out.contains(POSITIVE), "another key must not validate: {out}");
    assert!(out.contains("resolution failed"), "{out}");
    let hits = server.metric_sum("coredns_dnssec_cache_hits_total", "server=");
    assert!(hits > 0.0, "{}", server.metrics());
    let entries = server.metric_sum("coredns_dnssec_cache_entries", "type=\"signature\"");
    assert!(entries > 0.0, "{}", server.metrics());
}
