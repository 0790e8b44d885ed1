//! `tls { acme ... }` read as CoreDNS's `plugin/tls` reads it: its error
//! cases (the table of `acme_test.go`'s `TestParseACMETLSErrors`, as data),
//! the defaults, and what `check` prints.

use std::path::Path;

use crate::config::{load_str, ConfigErrors};

/// The `tls://` block `tls { BODY }` of a Corefile at /tmp/acme-test/Corefile.
fn load(body: &str) -> Result<crate::config::Config, Vec<String>> {
    let text = format!("tls://.:8853 {{\n    tls {{\n{body}\n    }}\n    whoami\n}}\n.:8053 {{\n    whoami\n}}\n");
    load_str(Path::new("/tmp/acme-test/Corefile"), &text, 53)
        .map_err(|ConfigErrors(e)| e.iter().map(ToString::to_string).collect())
}

#[test]
fn errors_as_coredns_reports_them() {
    // (case, body, part of the message) from CoreDNS plugin/tls/acme_test.go
    let cases = [
        ("missing domain", "email a@example.org", "at least one domain"),
        ("no options at all", "", "at least one domain"),
        ("missing acme arguments", "acme", "takes at least 1 argument"),
        ("IP identifier", "acme 192.0.2.1", "invalid ACME domain"),
        (
            "invalid CA",
            "acme dns.example\nca ftp://ca.example",
            "invalid ACME CA URL",
        ),
        (
            "invalid resolver",
            "acme dns.example\nresolver 1.1.1.1",
            "invalid ACME resolver",
        ),
        (
            "invalid resolver port",
            "acme dns.example\nresolver 1.1.1.1:dns",
            "invalid ACME resolver",
        ),
        ("invalid wildcard", "acme *.*.example", "invalid ACME domain"),
        (
            "missing CA root",
            "acme dns.example\nca_root missing.pem",
            "reading ACME CA root",
        ),
        (
            "duplicate option",
            "acme dns.example\nacme other.example",
            "only be specified once",
        ),
        (
            "unknown option",
            "acme dns.example\nprovider example",
            "unknown option 'provider'",
        ),
    ];
    for (case, body, want) in cases {
        let errors = load(body).err().unwrap_or_default();
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "{case}: {errors:?} lacks {want:?}"
        );
    }
}

#[test]
fn defaults_and_every_block_answering_challenges() {
    let config = load("acme DNS.Example. dns.example *.Wild.example").expect("loads");
    let tls = config.servers[0].listen.tls.as_ref().expect("tls");
    let acme = tls.acme.as_ref().expect("acme");
    assert_eq!(acme.domains, ["dns.example", "*.wild.example"]);
    assert_eq!(acme.ca, super::LETS_ENCRYPT);
    assert_eq!(acme.storage, Path::new("/tmp/acme-test/.coredns/acme"));
    assert_eq!(
        tls.cert,
        Path::new("/tmp/acme-test/.coredns/acme/acme-v02.api.letsencrypt.org-directory/dns.example.pem")
    );
    assert!(
        config.servers.iter().all(|s| s.has("tls")),
        "both blocks answer challenges"
    );
    let printed = config.to_string();
    assert!(
        printed.contains("    tls {\n        acme dns.example *.wild.example\n        ca https://acme-v02"),
        "{printed}"
    );
}

#[test]
fn options_resolve_against_root_and_print() {
    let text = "tls://.:8853 {\n root /srv/dns\n tls {\n  acme dns.example\n  email ops@example.org\n  ca https://127.0.0.1:14000/dir\n  storage certs\n  resolver 127.0.0.1:5353\n }\n}\n";
    let config = load_str(Path::new("/tmp/acme-test/Corefile"), text, 53).expect("loads");
    let acme = config.servers[0]
        .listen
        .tls
        .as_ref()
        .and_then(|t| t.acme.clone())
        .expect("acme");
    assert_eq!(acme.storage, Path::new("/srv/dns/certs"));
    assert_eq!(acme.ca_dir(), Path::new("/srv/dns/certs/127.0.0.1-14000-dir"));
    let printed = config.to_string();
    for line in [
        "email ops@example.org",
        "ca https://127.0.0.1:14000/dir",
        "storage /srv/dns/certs",
        "resolver 127.0.0.1:5353",
    ] {
        assert!(printed.contains(line), "{line} not in {printed}");
    }
}

#[test]
fn no_acme_no_challenge_plugin() {
    let text = ".:8053 {\n    whoami\n}\n";
    let config = load_str(Path::new("/tmp/acme-test/Corefile"), text, 53).expect("loads");
    assert!(!config.servers[0].has("tls"));
}

#[test]
fn one_domain_two_configurations_is_an_error() {
    let text = "tls://.:8853 {\n tls {\n  acme dns.example\n }\n}\n\
                https://.:8443 {\n tls {\n  acme dns.example\n }\n}\n\
                grpc://.:8444 {\n tls {\n  acme dns.example\n  email other@example.org\n }\n}\n";
    let errors = load_str(Path::new("/tmp/acme-test/Corefile"), text, 53)
        .err()
        .map(|ConfigErrors(e)| e.iter().map(ToString::to_string).collect::<Vec<_>>())
        .unwrap_or_default();
    assert_eq!(
        errors,
        ["/tmp/acme-test/Corefile:11:15: tls: ACME domain 'dns.example' is configured with conflicting options in an earlier block"]
    );
}
