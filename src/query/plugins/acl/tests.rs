//! The `acl` decision: the issue's Corefile judged name by name, and the
//! wire-bytes check (before a replay) agreeing with the decoded one.

use std::net::IpAddr;

use hickory_proto::rr::Name;

use super::judge;
use crate::query::plugins::acl::setup::{listed, AclAction, AclRule};
use crate::query::plugins::guard::{Asked, WireName};

fn rules(body: &str) -> Vec<AclRule> {
    listed(crate::config::tests::server_block(body).expect("valid").setup("acl"))
}

fn wire(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in name.trim_end_matches('.').split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

fn both(rules: &[AclRule], name: &str, qtype: u16, client: &str) -> AclAction {
    let client: IpAddr = client.parse().expect("address");
    let decoded = Name::from_ascii(name).expect("name");
    let by_name = judge(rules, &&decoded, qtype, client);
    let bytes = wire(name);
    assert_eq!(
        by_name,
        judge(rules, &WireName(&bytes), qtype, client),
        "{name} from {client}"
    );
    by_name
}

#[test]
fn the_issues_corefile_refuses_only_under_each_directives_zones() {
    let r = rules(
        "acl cluster.local example.com {\n    block net 10.1.2.3/32\n}\nacl secret.shop.svc.cluster.local {\n    block\n}",
    );
    use AclAction::{Allow, Block};
    let cases = [
        ("web.shop.svc.cluster.local.", "10.9.9.9", Allow),
        ("foo.example.com.", "10.9.9.9", Allow),
        ("foo.example.org.", "10.1.2.3", Allow),
        ("web.shop.svc.cluster.local.", "10.1.2.3", Block),
        ("FOO.Example.COM.", "10.1.2.3", Block),
        ("secret.shop.svc.cluster.local.", "10.9.9.9", Block),
        ("x.secret.shop.svc.cluster.local.", "fd00::1", Block),
        ("notsecret.shop.svc.cluster.local.", "10.9.9.9", Allow),
        ("cluster.local.", "10.1.2.3", Block),
        ("xcluster.local.", "10.1.2.3", Allow),
    ];
    for (name, client, want) in cases {
        assert_eq!(both(&r, name, 1, client), want, "{name} from {client}");
    }
}

#[test]
fn a_directive_with_no_matching_policy_passes_to_the_next_and_allow_ends_it() {
    let r = rules(
        "acl example.org {\n    block type A net 192.168.0.0/16\n}\nacl example.org {\n    allow net 10.0.0.0/8\n    filter type AAAA\n}\nacl {\n    drop net 10.0.0.0/8 192.168.0.0/16\n}",
    );
    use AclAction::{Allow, Block, Drop, Filter};
    assert_eq!(both(&r, "a.example.org.", 1, "192.168.1.1"), Block);
    assert_eq!(
        both(&r, "a.example.org.", 28, "192.168.1.1"),
        Filter,
        "first rule passes"
    );
    assert_eq!(
        both(&r, "a.example.org.", 28, "10.1.1.1"),
        Allow,
        "allow ends the search"
    );
    assert_eq!(
        both(&r, "a.example.net.", 1, "10.1.1.1"),
        Drop,
        "only the last rule's zone"
    );
    assert_eq!(both(&r, "a.example.org.", 1, "172.16.0.1"), Allow, "nothing matched");
}

#[test]
fn wire_names_sit_under_zones_only_at_label_boundaries() {
    let zone = |z: &str| Name::from_ascii(z).expect("zone");
    for (name, z, want) in [
        ("a.b.example.", "example.", true),
        ("a.b.example.", ".", true),
        ("example.", "example.", true),
        ("bexample.", "example.", false),
        ("x.ample.", "example.", false),
        ("a.B.EXAMPLE.", "b.example.", true),
        ("b.example.", "a.b.example.", false),
        ("x.bexample.", "example.", false),
        ("Svc.NS.svc.Cluster.Local.", "ns.cluster.local.", false),
        ("Svc.NS.SVC.Cluster.Local.", "ns.svc.cluster.local.", true),
        ("a.example.", "EXAMPLE.", true),
    ] {
        let (z, zw) = (zone(z), crate::corefile::args::lower_wire(&zone(z)));
        let decoded = Name::from_ascii(name).map(|n| (&n).under(&z, &zw));
        let bytes = wire(name);
        assert_eq!(WireName(&bytes).under(&z, &zw), want, "{name} under {z}");
        if let Ok(d) = decoded {
            assert_eq!(d, want, "{name} under {z} (decoded)");
        }
    }
}
