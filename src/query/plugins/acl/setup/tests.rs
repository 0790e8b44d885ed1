//! `acl` directives: zones, defaults, and every error they can report.
//! (CoreDNS's own setup rows are in tests/coredns/acl.table.)

use std::net::IpAddr;

use super::{listed, AclAction, AclPolicy};
use crate::config::tests::{assert_errors, server_block};

fn ip(s: &str) -> IpAddr {
    s.parse().expect("address")
}

#[test]
fn zones_scope_each_directive_and_default_to_the_blocks() {
    let s = server_block(
        "acl cluster.local Example.COM {\n    block net 10.1.2.3/32\n}\nacl secret.shop.svc.cluster.local {\n    block\n}\nacl {\n    allow net *\n}",
    )
    .expect("valid");
    let rules = listed(s.setup("acl"));
    let zones: Vec<Vec<String>> = rules
        .iter()
        .map(|r| r.zones.iter().map(ToString::to_string).collect())
        .collect();
    assert_eq!(
        zones,
        [
            vec!["cluster.local.", "example.com."],
            vec!["secret.shop.svc.cluster.local."],
            vec!["."]
        ]
    );
    let bare = &rules[1].policies[0];
    assert_eq!((bare.action, bare.types.clone()), (AclAction::Block, None));
    assert!(
        bare.matches(ip("10.9.9.9"), 1) && bare.matches(ip("fd00::1"), 28),
        "no net: everyone"
    );
    let one = &rules[0].policies[0];
    assert!(one.matches(ip("10.1.2.3"), 1) && one.matches(ip("::ffff:10.1.2.3"), 16));
    assert!(!one.matches(ip("10.1.2.4"), 1));
}

#[test]
fn types_nets_and_stars() {
    let s = server_block(
        "acl {\n    BLOCK TYPE A AAAA net 192.168.0.0/16 2001:db8::/32 type MX\n    filter type * A net 10.0.0.1\n    drop net * 1.2.3.4\n}",
    )
    .expect("valid");
    let rules = listed(s.setup("acl"));
    let p: &[AclPolicy] = &rules[0].policies;
    assert_eq!(p[0].action, AclAction::Block);
    assert_eq!(p[0].types.as_deref(), Some(&[1u16, 28, 15][..]));
    assert!(p[0].matches(ip("192.168.7.7"), 15) && p[0].matches(ip("2001:db8::9"), 28));
    assert!(!p[0].matches(ip("192.169.0.1"), 1) && !p[0].matches(ip("192.168.0.1"), 16));
    assert_eq!(p[1].types, None, "type * matches every type");
    assert!(p[1].matches(ip("10.0.0.1"), 65) && !p[1].matches(ip("10.0.0.2"), 1));
    assert!(
        p[2].matches(ip("::1"), 1) && p[2].matches(ip("8.8.8.8"), 1),
        "net *: everyone"
    );
}

#[test]
fn every_error_is_reported_at_its_word() {
    let errors = server_block(
        "acl {\n    permit net 10.0.0.0/8\n    block A\n    block type\n    block type a\n    block net 10.0.0/8\n    block net 10.0.0.0/33 type A\n    block net 2001::85a3::1\n}",
    )
    .expect_err("invalid");
    assert_errors(
        &errors,
        &[
            "/tmp/Corefile:3:5: acl: unknown action 'permit'",
            "/tmp/Corefile:4:11: acl: unexpected 'A': expected 'type' or 'net'",
            "/tmp/Corefile:5:11: acl: no value after 'type'",
            "/tmp/Corefile:6:16: acl: 'a' is not a query type",
            "/tmp/Corefile:7:15: acl: '10.0.0/8' is not an address or CIDR",
            "/tmp/Corefile:8:15: acl: '10.0.0.0/33' is not an address or CIDR",
            "/tmp/Corefile:9:15: acl: '2001::85a3::1' is not an address or CIDR",
        ],
    );
}
