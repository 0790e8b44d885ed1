//! The cluster zone's own names (apex, `dns-version`, namespaces, names
//! outside it), pods by `pods` mode, reverse lookups with `fallthrough`,
//! `ignore empty_service` and an unsynced store: tables on the fixtures
//! of `cluster/tests.rs`.

use super::*;

#[test]
fn apex_version_namespaces_and_outside_names() {
    let r = router(config(PodMode::Disabled, true, false), true);
    table(
        &r,
        &[
            (
                "cluster.local.",
                SOA,
                OK,
                &["cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 42 7200 1800 86400 5"],
            ),
            (
                "cluster.local.",
                NS,
                OK,
                &["cluster.local. 5 IN NS ns.dns.cluster.local."],
            ),
            ("cluster.local.", A, OK, &[]),
            (
                "ns.dns.cluster.local.",
                A,
                OK,
                &["ns.dns.cluster.local. 5 IN A 10.96.0.10"],
            ),
            (
                "dns-version.cluster.local.",
                TXT,
                OK,
                &["dns-version.cluster.local. 28800 IN TXT 1.1.0"],
            ),
            ("dns-version.cluster.local.", A, OK, &[]),
            ("svc.cluster.local.", A, OK, &[]),
            ("shop.svc.cluster.local.", A, OK, &[]),
            ("quiet.svc.cluster.local.", AAAA, OK, &[]),
            ("nope.svc.cluster.local.", A, NX, &[]),
            ("example.com.", A, ResponseCode::Refused, &[]),
            ("cluster.localx.", A, ResponseCode::Refused, &[]),
        ],
    );
    let ns = ask(&r, "cluster.local.", NS);
    assert_eq!(text(&ns.additional), ["ns.dns.cluster.local. 5 IN A 10.96.0.10"]);
}

#[test]
fn pods_by_mode() {
    let insecure = router(config(PodMode::Insecure, true, false), true);
    table(
        &insecure,
        &[
            (
                "10-244-9-9.shop.pod.cluster.local.",
                A,
                OK,
                &["10-244-9-9.shop.pod.cluster.local. 5 IN A 10.244.9.9"],
            ),
            ("10-244-9-9.shop.pod.cluster.local.", AAAA, OK, &[]),
            (
                "fd00--9.shop.pod.cluster.local.",
                AAAA,
                OK,
                &["fd00--9.shop.pod.cluster.local. 5 IN AAAA fd00::9"],
            ),
            ("10-244-9-9.nope.pod.cluster.local.", A, NX, &[]),
            ("not-an-ip.shop.pod.cluster.local.", A, NX, &[]),
            ("shop.pod.cluster.local.", A, OK, &[]),
        ],
    );
    let verified = router(config(PodMode::Verified, true, false), true);
    table(
        &verified,
        &[
            (
                "10-244-1-10.shop.pod.cluster.local.",
                A,
                OK,
                &["10-244-1-10.shop.pod.cluster.local. 5 IN A 10.244.1.10"],
            ),
            ("10-244-1-10.db.pod.cluster.local.", A, NX, &[]),
            ("10-244-9-9.shop.pod.cluster.local.", A, NX, &[]),
        ],
    );
    let disabled = router(config(PodMode::Disabled, true, false), true);
    table(
        &disabled,
        &[
            ("10-244-1-10.shop.pod.cluster.local.", A, NX, &[]),
            ("shop.pod.cluster.local.", A, NX, &[]),
        ],
    );
}

#[test]
fn reverse_lookups_and_fallthrough() {
    let r = router(config(PodMode::Disabled, true, false), true);
    table(&r, &[
        ("1.0.96.10.in-addr.arpa.", PTR, OK, &["1.0.96.10.in-addr.arpa. 5 IN PTR kubernetes.default.svc.cluster.local."]),
        ("11.3.244.10.in-addr.arpa.", PTR, OK, &["11.3.244.10.in-addr.arpa. 5 IN PTR pg-1.pg.db.svc.cluster.local."]),
        ("10.3.244.10.in-addr.arpa.", PTR, OK, &["10.3.244.10.in-addr.arpa. 5 IN PTR pg-0.pg.db.svc.cluster.local."]),
        ("1.0.96.10.in-addr.arpa.", A, OK, &[]),
        (
            "4.3.2.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.",
            PTR,
            OK,
            &["4.3.2.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa. 5 IN PTR web.shop.svc.cluster.local."],
        ),
        // Not ours: falls through, and with no next plugin the chain runs
        // out: SERVFAIL, as CoreDNS's "no next plugin found".
        ("8.8.8.8.in-addr.arpa.", PTR, ResponseCode::ServFail, &[]),
    ]);
    let strict = router(config(PodMode::Disabled, false, false), true);
    table(
        &strict,
        &[
            ("8.8.8.8.in-addr.arpa.", PTR, NX, &[]),
            (
                "in-addr.arpa.",
                SOA,
                OK,
                &["in-addr.arpa. 5 IN SOA ns.dns.in-addr.arpa. hostmaster.in-addr.arpa. 42 7200 1800 86400 5"],
            ),
        ],
    );
}

#[test]
fn ignore_empty_service_and_unsynced() {
    let r = router(config(PodMode::Disabled, true, true), true);
    table(
        &r,
        &[
            ("lonely.db.svc.cluster.local.", A, NX, &[]),
            (
                "web.shop.svc.cluster.local.",
                A,
                OK,
                &["web.shop.svc.cluster.local. 5 IN A 10.96.12.34"],
            ),
        ],
    );
    let unsynced = router(config(PodMode::Disabled, true, false), false);
    for qname in [
        "kubernetes.default.svc.cluster.local.",
        "nope.svc.cluster.local.",
        "cluster.local.",
    ] {
        let got = ask(&unsynced, qname, A);
        assert_eq!(
            got.rcode,
            ResponseCode::ServFail,
            "{qname}: never NXDOMAIN before the first sync"
        );
        assert!(got.answers.is_empty() && got.authoritative);
        let soa: Vec<RecordType> = got.authority.iter().map(|r| r.record_type()).collect();
        assert_eq!(
            soa,
            [RecordType::SOA],
            "{qname}: the zone's SOA, as CoreDNS's BackendError"
        );
    }
}
