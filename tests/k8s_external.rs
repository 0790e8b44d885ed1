//! `k8s_external` end to end with dig: Services' external IPs and
//! load-balancer ingress under an outside zone, from `zones/external.yaml`.

mod common;

use common::dig::{dig_at as dig, Dig as Reply};
use common::stub::Stub;
use common::{temp_dir, Server};

/// The server (and the upstream it forwards other names to).
fn start(tag: &str) -> (Server, Stub) {
    let stub = Stub::start();
    let dump = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("zones/external.yaml");
    let text = format!(
        "\
.:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    hosts {{
        192.0.2.80 lb-1234.elb.ext.test
        fallthrough
    }}
    k8s_external example.org in-addr.arpa ip6.arpa {{
        fallthrough in-addr.arpa ip6.arpa
    }}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        snapshot {dump}
    }}
    forward . {upstream}
}}
other.test:0 {{
    bind 127.0.0.1
    k8s_external {{
        apex ns.ext
        ttl 60
        headless
        fallthrough
    }}
    kubernetes cluster.local {{
        snapshot {dump}
    }}
    forward . {upstream}
}}
",
        dump = dump.display(),
        upstream = stub.addr
    );
    (Server::start(&temp_dir(tag), &text), stub)
}

fn ask(server: &Server, args: &[&str]) -> Reply {
    dig("127.0.0.1", server.dns.port(), args)
}

#[test]
fn external_ips_and_ingress_answer_under_the_zone() {
    let (server, _upstream) = start("k8s-external");
    let web = ask(&server, &["web.shop.example.org", "A"]);
    assert_eq!((web.status.as_str(), web.aa()), ("NOERROR", true), "{web:?}");
    assert_eq!(web.answers, ["web.shop.example.org. 5 IN A 203.0.113.10"]);
    assert_eq!(ask(&server, &["web.shop.example.org", "AAAA"]).data(), ["2001:db8::10"]);
    assert_eq!(
        ask(&server, &["legacy.shop.example.org", "A"]).data(),
        ["198.51.100.5", "198.51.100.6"],
        "spec.externalIPs"
    );
    let elb = ask(&server, &["elb.shop.example.org", "A"]);
    assert_eq!(
        elb.answers,
        [
            "elb.shop.example.org. 5 IN CNAME lb-1234.elb.ext.test.",
            "lb-1234.elb.ext.test. 3600 IN A 192.0.2.80"
        ],
        "an ingress hostname is a CNAME, followed here when the block knows the target: {}",
        elb.text
    );
    let alb = ask(&server, &["alb.shop.example.org", "A"]);
    assert_eq!(
        (alb.status.as_str(), alb.aa(), alb.answers.clone()),
        (
            "NOERROR",
            true,
            vec![
                "alb.shop.example.org. 5 IN CNAME alb-5678.elb.upstream.test.".to_string(),
                "alb-5678.elb.upstream.test. 60 IN A 192.0.2.1".to_string()
            ]
        ),
        "else the target is forwarded and answered under the CNAME"
    );
    let gone = ask(&server, &["gone.shop.example.org", "A"]);
    assert_eq!(
        (gone.status.as_str(), gone.answers.clone()),
        (
            "NOERROR",
            vec!["gone.shop.example.org. 5 IN CNAME nx.elb.upstream.test.".to_string()]
        ),
        "a target that does not exist leaves the CNAME"
    );
    // the cluster zone itself is unchanged
    assert_eq!(
        ask(&server, &["web.shop.svc.cluster.local", "A"]).data(),
        ["10.96.1.10"]
    );
}

#[test]
fn negative_answers_carry_the_zones_soa() {
    let (server, _upstream) = start("k8s-external-negative");
    let soa = "example.org. 5 IN SOA ns1.dns.example.org. hostmaster.dns.example.org.";
    for (name, qtype, status) in [
        ("internal.shop.example.org", "A", "NXDOMAIN"), // no outside address
        ("nosuch.shop.example.org", "A", "NXDOMAIN"),
        ("pg.db.example.org", "A", "NXDOMAIN"), // headless, without `headless`
        ("x.web.shop.example.org", "A", "NXDOMAIN"),
        ("nosuch.example.org", "A", "NXDOMAIN"),
        ("shop.example.org", "A", "NOERROR"), // a namespace
        ("web.shop.example.org", "TXT", "NOERROR"),
        ("legacy.shop.example.org", "AAAA", "NOERROR"),
        ("_ftp._tcp.web.shop.example.org", "SRV", "NXDOMAIN"),
    ] {
        let r = ask(&server, &[name, qtype]);
        assert_eq!(
            (r.status.as_str(), r.answers.len()),
            (status, 0),
            "{name} {qtype}: {r:?}"
        );
        assert!(
            r.authority.len() == 1 && r.authority[0].starts_with(soa),
            "{name}: {r:?}"
        );
        assert!(r.aa(), "{name}: authoritative");
    }
}

#[test]
fn srv_per_port_with_glue() {
    let (server, _upstream) = start("k8s-external-srv");
    let srv = ask(&server, &["web.shop.example.org", "SRV"]);
    let mut answer = srv.answers.clone();
    answer.sort();
    assert_eq!(
        answer,
        [
            "web.shop.example.org. 5 IN SRV 0 50 443 web.shop.example.org.",
            "web.shop.example.org. 5 IN SRV 0 50 80 web.shop.example.org."
        ]
    );
    let mut glue = srv.additional.clone();
    glue.sort();
    assert_eq!(
        glue,
        [
            "web.shop.example.org. 5 IN A 203.0.113.10",
            "web.shop.example.org. 5 IN AAAA 2001:db8::10"
        ]
    );
    let named = ask(&server, &["_https._tcp.web.shop.example.org", "SRV"]);
    assert_eq!(named.data(), ["0 100 443 web.shop.example.org."]);
    // kdig agrees over TCP
    let port = server.port();
    let kdig = common::run(
        "kdig",
        &[
            "@127.0.0.1",
            "-p",
            &port,
            "+tcp",
            "+short",
            "_https._tcp.web.shop.example.org",
            "SRV",
        ],
    );
    assert_eq!(kdig.trim(), "0 100 443 web.shop.example.org.");
}

#[test]
fn apex_soa_ns_and_the_name_server_host() {
    let (server, _upstream) = start("k8s-external-apex");
    let soa = ask(&server, &["example.org", "SOA"]);
    assert_eq!(soa.answers.len(), 1, "{soa:?}");
    assert!(soa.answers[0].starts_with("example.org. 5 IN SOA ns1.dns.example.org. hostmaster.dns.example.org. "));
    let ns = ask(&server, &["example.org", "NS"]);
    assert_eq!(ns.answers, ["example.org. 5 IN NS ns1.dns.example.org."]);
    assert_eq!(
        ns.additional,
        ["ns1.dns.example.org. 5 IN A 192.0.2.53"],
        "kube-dns's external address"
    );
    assert_eq!(ask(&server, &["ns1.dns.example.org", "A"]).data(), ["192.0.2.53"]);
    let ent = ask(&server, &["dns.example.org", "A"]);
    assert_eq!((ent.status.as_str(), ent.answers.len()), ("NOERROR", 0));
    assert_eq!(ask(&server, &["ns2.dns.example.org", "A"]).status, "NXDOMAIN");
}

#[test]
fn ptr_for_external_ips_and_fallthrough_to_the_cluster() {
    let (server, _upstream) = start("k8s-external-ptr");
    let v4 = ask(&server, &["-x", "203.0.113.10"]);
    assert_eq!(v4.data(), ["web.shop.example.org."], "{v4:?}");
    assert_eq!(ask(&server, &["-x", "2001:db8::10"]).data(), ["web.shop.example.org."]);
    assert_eq!(
        ask(&server, &["-x", "198.51.100.6"]).data(),
        ["legacy.shop.example.org."]
    );
    // not an external IP: NXDOMAIN here falls through to the kubernetes plugin
    assert_eq!(
        ask(&server, &["-x", "10.96.1.10"]).data(),
        ["web.shop.svc.cluster.local."]
    );
    assert_eq!(ask(&server, &["-x", "192.0.2.99"]).status, "NXDOMAIN");
}

#[test]
fn apex_ttl_and_headless_options() {
    let (server, _upstream) = start("k8s-external-options");
    let web = ask(&server, &["web.shop.other.test", "A"]);
    assert_eq!(web.answers, ["web.shop.other.test. 60 IN A 203.0.113.10"], "ttl 60");
    let ns = ask(&server, &["other.test", "NS"]);
    assert_eq!(
        ns.answers,
        ["other.test. 60 IN NS ns1.ns.ext.other.test."],
        "apex ns.ext"
    );
    assert_eq!(ask(&server, &["ns1.ns.ext.other.test", "A"]).data(), ["192.0.2.53"]);
    let soa = ask(&server, &["web.shop.other.test", "TXT"]);
    assert!(
        soa.authority[0].starts_with("other.test. 60 IN SOA ns1.ns.ext.other.test. hostmaster.ns.ext.other.test."),
        "{soa:?}"
    );
    // fallthrough: an NXDOMAIN goes on to the next plugin (here forward); NODATA does not
    let passed = ask(&server, &["nosuch.shop.other.test", "A"]);
    assert_eq!(
        (passed.aa(), passed.data()),
        (false, vec!["192.0.2.1".to_string()]),
        "{passed:?}"
    );
    // headless: a headless Service's ready endpoints, each by its name too
    assert_eq!(
        ask(&server, &["pg.db.other.test", "A"]).data(),
        ["10.244.2.10", "10.244.2.11"]
    );
    assert_eq!(ask(&server, &["pg-1.pg.db.other.test", "A"]).data(), ["10.244.2.11"]);
    let unknown = ask(&server, &["pg-9.pg.db.other.test", "A"]);
    assert!(
        !unknown.aa(),
        "no such endpoint: NXDOMAIN here, so the upstream answered: {unknown:?}"
    );
    let srv = ask(&server, &["_postgres._tcp.pg.db.other.test", "SRV"]);
    assert_eq!(
        srv.data(),
        ["0 50 5432 pg-0.pg.db.other.test.", "0 50 5432 pg-1.pg.db.other.test."]
    );
    assert_eq!(srv.additional.len(), 2, "glue for each endpoint: {srv:?}");
    // a Service with external IPs still answers them, headless or not
    assert_eq!(
        ask(&server, &["legacy.shop.other.test", "A"]).data(),
        ["198.51.100.5", "198.51.100.6"]
    );
}
