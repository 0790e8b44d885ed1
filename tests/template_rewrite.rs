//! `template` and `rewrite` end to end with dig and kdig: every option,
//! AKS's default templates, the IPv4-only cluster's AAAA template, and
//! rewritten names answered by hosts, the cluster zone and an upstream.

mod common;

use common::dig::{dig, dig_with};
use common::stub::Stub;
use common::{temp_dir, Server};

fn template_corefile(stub: &Stub) -> String {
    format!(
        r#".:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    template ANY ANY internal.cloudapp.net {{
      match "^(?:[^.]+\.){{4,}}internal\.cloudapp\.net\.$"
      rcode NXDOMAIN
      fallthrough
    }}
    template ANY ANY reddog.microsoft.com {{
      rcode NXDOMAIN
    }}
    template IN A example {{
      match (^|[.])ip-(?P<a>[0-9]*)-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]example[.]$
      match "^(?P<a>[0-9]*)[.](?P<b>[0-9]*)[.](?P<c>[0-9]*)[.](?P<d>[0-9]*)[.]ext[.]example[.]$"
      answer "{{{{ .Name }}}} 60 IN A {{{{ .Group.a }}}}.{{{{ .Group.b }}}}.{{{{ .Group.c }}}}.{{{{ .Group.d }}}}"
      fallthrough
    }}
    template IN A hex.example {{
      match "^ip0a(?P<b>[a-f0-9]{{2}})(?P<c>[a-f0-9]{{2}})(?P<d>[a-f0-9]{{2}})[.]hex[.]example[.]$"
      answer "{{{{ .Name }}}} 60 IN A 10.{{{{ parseInt .Group.b 16 8 }}}}.{{{{ parseInt .Group.c 16 8 }}}}.{{{{ parseInt .Group.d 16 8 }}}}"
    }}
    template IN PTR in-addr.arpa {{
      match ^(?P<d>[0-9]*)[.](?P<c>[0-9]*)[.](?P<b>[0-9]*)[.](?P<a>[0-9]*)[.]in-addr[.]arpa[.]$
      answer "{{{{ .Name }}}} 60 IN PTR ip-{{{{ .Group.a }}}}-{{{{ .Group.b }}}}-{{{{ .Group.c }}}}-{{{{ .Group.d }}}}.example."
    }}
    template IN MX mx.test {{
      answer "{{{{ .Name }}}} 60 IN MX 10 mail.{{{{ .Zone }}}}"
      additional "mail.{{{{ .Zone }}}} 60 IN A 192.0.2.25"
      authority "{{{{ .Zone }}}} 60 IN NS ns.{{{{ .Zone }}}}"
    }}
    template IN TXT whoami.test {{
      answer "{{{{ .Name }}}} 0 IN TXT \"{{{{ .Remote }}}} {{{{ .Type }}}} {{{{ .Class }}}} {{{{ index .Match 0 }}}}\""
    }}
    template ANY ANY invalid {{
      rcode NXDOMAIN
      authority "invalid. 60 {{{{ .Class }}}} SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)"
      ederror 21 "Blocked according to RFC2606"
    }}
    template IN A fail.test {{
      match ^exec[.]
      answer "{{{{ index .Match 3 }}}} 60 IN A 192.0.2.1"
      fallthrough
    }}
    template IN A fail.test {{
      match ^rr[.]
      answer "{{{{ .Name }}}} 60 IN A not-an-address"
      fallthrough
    }}
    template IN A fail.test {{
      match ^servfail[.]
      rcode SERVFAIL
    }}
    template IN ANY foogle.test {{
      match "^foogle\.test\.$"
      answer "foogle.test 60 IN CNAME ip-10-9-9-9.example"
    }}
    template IN ANY cdn.fwd.test {{
      answer "cdn.fwd.test 60 IN CNAME out.upstream.test"
      upstream
    }}
    hosts {{
      192.0.2.10 vm.internal.cloudapp.net
      fallthrough
    }}
    forward . {}
}}
"#,
        stub.addr
    )
}

#[test]
fn templates_answer_every_option_and_akss_defaults() {
    let stub = Stub::start();
    let server = Server::start(&temp_dir("template"), &template_corefile(&stub));
    // AKS: names with four or more labels under internal.cloudapp.net are NXDOMAIN ...
    let aks = dig(&server, &["a.b.c.d.internal.cloudapp.net"]);
    assert_eq!(
        (aks.status.as_str(), aks.answers.len()),
        ("NXDOMAIN", 0),
        "{}",
        aks.text
    );
    assert!(aks.flags.contains("aa"), "{}", aks.flags);
    // ... others fall through to the next plugin; reddog.microsoft.com is NXDOMAIN whole
    assert_eq!(
        dig(&server, &["vm.internal.cloudapp.net"]).answers,
        ["vm.internal.cloudapp.net. 3600 IN A 192.0.2.10"]
    );
    assert_eq!(dig(&server, &["AAAA", "x.reddog.microsoft.com"]).status, "NXDOMAIN");
    // named groups, several patterns, parseInt, PTR
    assert_eq!(
        dig(&server, &["ip-10-1-2-3.example"]).answers,
        ["ip-10-1-2-3.example. 60 IN A 10.1.2.3"]
    );
    assert_eq!(
        dig(&server, &["www.ip-10-1-2-4.example"]).answers,
        ["www.ip-10-1-2-4.example. 60 IN A 10.1.2.4"]
    );
    assert_eq!(
        dig(&server, &["10.0.0.5.ext.example"]).answers,
        ["10.0.0.5.ext.example. 60 IN A 10.0.0.5"]
    );
    assert_eq!(
        dig(&server, &["ip0a0b0c0d.hex.example"]).answers,
        ["ip0a0b0c0d.hex.example. 60 IN A 10.11.12.13"]
    );
    assert_eq!(
        dig(&server, &["-x", "10.1.2.3"]).answers,
        ["3.2.1.10.in-addr.arpa. 60 IN PTR ip-10-1-2-3.example."]
    );
    // answer, additional and authority sections, and the template data
    let mx = dig(&server, &["MX", "a.mx.test"]);
    assert_eq!(mx.answers, ["a.mx.test. 60 IN MX 10 mail.mx.test."]);
    assert_eq!(mx.additional, ["mail.mx.test. 60 IN A 192.0.2.25"]);
    assert_eq!(mx.authority, ["mx.test. 60 IN NS ns.mx.test."]);
    assert_eq!(
        dig(&server, &["TXT", "WhoAmI.test"]).answers,
        ["whoami.test. 0 IN TXT \"127.0.0.1 TXT IN whoami.test.\""]
    );
    // rcode, a negative answer's SOA and an extended DNS error
    let invalid = dig(&server, &["x.invalid"]);
    assert_eq!(invalid.status, "NXDOMAIN");
    assert_eq!(
        invalid.authority,
        ["invalid. 60 IN SOA ns.invalid. hostmaster.invalid. 1 60 60 60 60"]
    );
    assert!(
        invalid.text.contains("EDE: 21") && invalid.text.contains("Blocked according to RFC2606"),
        "{}",
        invalid.text
    );
    // failures: SERVFAIL, counted
    for name in [
        "exec.fail.test",
        "rr.fail.test",
        "servfail.fail.test",
        "nothing.fail.test",
    ] {
        assert_eq!(dig(&server, &[name]).status, "SERVFAIL", "{name}");
    }
    // a CNAME answer is followed: locally, and upstream
    assert_eq!(
        dig(&server, &["foogle.test"]).answers,
        [
            "foogle.test. 60 IN CNAME ip-10-9-9-9.example.",
            "ip-10-9-9-9.example. 60 IN A 10.9.9.9"
        ]
    );
    let chased = dig(&server, &["cdn.fwd.test"]);
    assert_eq!(
        chased.answers,
        [
            "cdn.fwd.test. 60 IN CNAME out.upstream.test.",
            "out.upstream.test. 60 IN A 192.0.2.1"
        ]
    );
    assert_eq!(chased.question, ";cdn.fwd.test. IN A");
    let metrics = server.metrics();
    if let Some(verdict) = common::promtool_check(&metrics, &temp_dir("template-metrics").join("metrics.txt")) {
        assert_eq!(verdict, Ok(()), "promtool");
    }
    let matches = r#"zone="example.",view="",class="IN",type="A""#;
    assert_eq!(
        common::sum_of(&metrics, "coredns_template_matches_total", matches),
        4.0,
        "{metrics}"
    ); // the CNAME chase matched too
    assert_eq!(
        common::sum_of(
            &metrics,
            "coredns_template_template_failures_total",
            "section=\"answer\""
        ),
        1.0
    );
    assert_eq!(
        common::sum_of(
            &metrics,
            "coredns_template_rr_failures_total",
            "template=\"{{ .Name }} 60 IN A not-an-address\""
        ),
        1.0
    );
    assert!(common::sum_of(&metrics, "coredns_dns_responses_total", "plugin=\"template\"") >= 15.0);
}

#[test]
fn an_ipv4_only_cluster_answers_aaaa_with_nodata() {
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    template IN AAAA .\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
        common::demo_cluster().display()
    );
    let server = Server::start(&temp_dir("template-v4"), &text);
    let aaaa = dig_with("kdig", &server, &["AAAA", "web.shop.svc.cluster.local"]);
    assert_eq!(
        (aaaa.status.as_str(), aaaa.answers.len()),
        ("NOERROR", 0),
        "{}",
        aaaa.text
    );
    let a = dig(&server, &["+short", "web.shop.svc.cluster.local"]);
    assert!(
        a.text.trim().starts_with("10."),
        "A still answered by the cluster: {}",
        a.text
    );
}

fn rewrite_corefile(stub: &Stub) -> String {
    format!(
        r".:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    log
    rewrite name exact db.corp.example kubernetes.default.svc.cluster.local
    rewrite name suffix .hosts.example .svc.internal answer auto
    rewrite name prefix old new answer auto
    rewrite name substring .legacy. .current. answer auto
    rewrite name substring bad. bad..x.
    rewrite name suffix .zone.example .example.test answer auto
    rewrite stop {{
        name regex (.*)-east\.fwd\.test {{1}}.upstream.test
        answer name (.*)\.upstream\.test {{1}}-east.fwd.test
    }}
    rewrite name regex ^alias-(.*)\.fwd\.test\.$ alias.{{1}}.upstream.test answer auto answer value ^real\.cdn\.example\.$ real.cdn.fwd.test
    hosts {{
        192.0.2.20 db.svc.internal
        192.0.2.21 new.pfx.test
        192.0.2.22 a.current.sub.test
        fallthrough
    }}
    file {} example.test
    kubernetes cluster.local {{
        snapshot {}
    }}
    forward . {}
    cache 30
}}
",
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("zones/example.db")
            .display(),
        common::demo_cluster().display(),
        stub.addr
    )
}

#[test]
fn rewritten_names_are_answered_by_every_plugin_under_the_asked_name() {
    let stub = Stub::start();
    let server = Server::start(&temp_dir("rewrite-name"), &rewrite_corefile(&stub));
    // exact: the cluster zone answers, the answer comes back under the asked name
    let exact = dig(&server, &["db.corp.example"]);
    assert_eq!(exact.answers, ["db.corp.example. 5 IN A 10.96.0.1"], "{}", exact.text);
    assert_eq!(exact.question, ";db.corp.example. IN A");
    // suffix, prefix, substring with answer auto: hosts answers
    assert_eq!(
        dig(&server, &["db.hosts.example"]).answers,
        ["db.hosts.example. 3600 IN A 192.0.2.20"]
    );
    assert_eq!(
        dig(&server, &["old.pfx.test"]).answers,
        ["old.pfx.test. 3600 IN A 192.0.2.21"]
    );
    assert_eq!(
        dig(&server, &["a.legacy.sub.test"]).answers,
        ["a.legacy.sub.test. 3600 IN A 192.0.2.22"]
    );
    // a zone file answers, CNAME target mapped back too
    let file = dig(&server, &["web.zone.example"]);
    assert_eq!(
        file.answers,
        [
            "web.zone.example. 300 IN CNAME www.zone.example.",
            "www.zone.example. 300 IN A 192.0.2.80"
        ],
        "{}",
        file.text
    );
    assert!(file.flags.contains("aa"), "{}", file.flags);
    // an invalid name after the rewrite: SERVFAIL, as in CoreDNS
    assert_eq!(dig(&server, &["a.bad.test"]).status, "SERVFAIL");
    // regex + answer name: the upstream gets the new name, the client the old one
    for _ in 0..2 {
        let fwd = dig(&server, &["web-east.fwd.test"]);
        assert_eq!(fwd.answers, ["web-east.fwd.test. 30 IN A 192.0.2.1"], "{}", fwd.text);
        assert_eq!(fwd.question, ";web-east.fwd.test. IN A");
    }
    assert_eq!(stub.count(), 1, "the second answer came from the cache, reverted too");
    let asked = stub.last().expect("a request upstream");
    assert_eq!(asked.queries[0].name().to_ascii(), "web.upstream.test.");
    // the query log shows the client's question, as CoreDNS's log (before rewrite) does
    let started = std::time::Instant::now();
    while !server.log_contains("A IN web-east.fwd.test.") && started.elapsed() < std::time::Duration::from_secs(3) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        server.log_contains("\"A IN web-east.fwd.test. udp"),
        "{:?}",
        server.log.lock().map(|l| l.clone())
    );
    assert!(
        !server.log_contains("web.upstream.test."),
        "the rewritten name is not logged"
    );
    // answer auto + answer value: a CNAME's owner and target both mapped back, over TCP too
    for cmd in ["dig", "kdig"] {
        let tcp = dig_with(cmd, &server, &["+tcp", "alias-x.fwd.test"]);
        assert_eq!(
            tcp.answers,
            [
                "alias-x.fwd.test. 30 IN CNAME real.cdn.fwd.test.",
                "real.cdn.example. 30 IN A 192.0.2.1"
            ],
            "{cmd}: {}",
            tcp.text
        );
    }
    assert_eq!(
        stub.last().map(|m| m.queries[0].name().to_ascii()).as_deref(),
        Some("alias.x.upstream.test.")
    );
}

#[test]
fn type_class_ttl_edns0_and_cname_rules() {
    let stub = Stub::start();
    let text = format!(
        ".:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    rewrite continue ttl suffix .ttl.test 100-200
    rewrite continue rcode suffix .sf.test SERVFAIL nxdomain
    rewrite class CH IN
    rewrite type TXT A
    rewrite continue edns0 local set 0xffee 0x61626364
    rewrite continue edns0 local append 65001 {{client_ip}}
    rewrite continue edns0 nsid set
    rewrite continue edns0 subnet set 24 56
    rewrite cname suffix .cdn.example .cdn2.example
    forward . {}
}}
",
        stub.addr
    );
    let server = Server::start(&temp_dir("rewrite-rules"), &text);
    assert_eq!(
        dig(&server, &["x.ttl.test"]).answers,
        ["x.ttl.test. 100 IN A 192.0.2.1"]
    );
    let ch = dig(&server, &["-c", "CH", "x.plain.test"]);
    assert_eq!(
        (ch.status.as_str(), ch.question.as_str()),
        ("NOERROR", ";x.plain.test. CH A"),
        "{}",
        ch.text
    );
    assert_eq!(ch.answers, ["x.plain.test. 60 IN A 192.0.2.1"]);
    assert_eq!(
        stub.last().map(|m| u16::from(m.queries[0].query_class())),
        Some(1),
        "upstream asked IN"
    );
    let txt = dig(&server, &["TXT", "t.plain.test"]);
    assert_eq!(
        (txt.question.as_str(), txt.answers.len()),
        (";t.plain.test. IN TXT", 1),
        "{}",
        txt.text
    );
    let plain = dig(&server, &["+noedns", "e.plain.test"]);
    assert_eq!(plain.answers, ["e.plain.test. 60 IN A 192.0.2.1"]);
    let upstream = stub.last().expect("request");
    let opts = &upstream.edns.as_ref().expect("an OPT record added").options().options;
    let code = |c: u16| opts.iter().find(|(k, _)| u16::from(*k) == c).map(|(_, o)| o.clone());
    use hickory_proto::rr::rdata::opt::EdnsOption;
    assert_eq!(code(0xffee), Some(EdnsOption::Unknown(0xffee, b"abcd".to_vec())));
    assert_eq!(code(65001), Some(EdnsOption::Unknown(65001, vec![127, 0, 0, 1])));
    assert!(matches!(code(3), Some(EdnsOption::NSID(_))), "{opts:?}");
    match code(8) {
        Some(EdnsOption::Subnet(s)) => {
            assert_eq!((s.addr().to_string(), s.source_prefix()), ("127.0.0.0".to_string(), 24))
        }
        other => panic!("no client subnet: {other:?}"),
    }
    // rcode: an upstream's SERVFAIL becomes NXDOMAIN for matching names only
    stub.set(common::stub::Mode::ServFail);
    assert_eq!(dig(&server, &["x.sf.test"]).status, "NXDOMAIN");
    assert_eq!(dig(&server, &["x.plain.test"]).status, "SERVFAIL");
    stub.set(common::stub::Mode::Answer);
    // cname: the target is rewritten and its records asked for
    let cname = dig(&server, &["alias.cname.test"]);
    assert_eq!(
        cname.answers,
        [
            "alias.cname.test. 60 IN CNAME real.cdn2.example.",
            "real.cdn2.example. 60 IN A 192.0.2.1"
        ],
        "{}",
        cname.text
    );
}

/// Gardener's search-path shortcut (gardener/gardener, pkg/component/coredns:
/// `rewrite stop` blocks rendered for cluster.local and the common suffix
/// example.com): names a pod's search list appended to a full name are
/// answered as the full name, under the name asked.
#[test]
fn gardeners_search_path_rewrites() {
    let stub = Stub::start();
    let text = format!(
        r".:0 {{
      bind 127.0.0.1
      ready 127.0.0.1:0
      rewrite stop {{
        name regex ([^\.]+)\.([^\.]+)\.svc\.cluster\.local\.svc\.cluster\.local {{1}}.{{2}}.svc.cluster.local
        answer name ([^\.]+)\.([^\.]+)\.svc\.cluster\.local {{1}}.{{2}}.svc.cluster.local.svc.cluster.local
        answer value ([^\.]+)\.([^\.]+)\.svc\.cluster\.local {{1}}.{{2}}.svc.cluster.local.svc.cluster.local
      }}
      rewrite stop {{
        name regex (.*)\.example\.com\.svc\.cluster\.local {{1}}.example.com
        answer name (.*)\.example\.com {{1}}.example.com.svc.cluster.local
        answer value (.*)\.example\.com {{1}}.example.com.svc.cluster.local
      }}
      kubernetes cluster.local in-addr.arpa ip6.arpa {{
          snapshot {}
          pods insecure
          fallthrough in-addr.arpa ip6.arpa
          ttl 30
      }}
      forward . {}
      cache 30
      loop
      loadbalance round_robin
}}
",
        common::demo_cluster().display(),
        stub.addr
    );
    let server = Server::start(&temp_dir("rewrite-gardener"), &text);
    let cluster = dig(&server, &["kubernetes.default.svc.cluster.local.svc.cluster.local"]);
    assert_eq!(
        cluster.answers,
        ["kubernetes.default.svc.cluster.local.svc.cluster.local. 30 IN A 10.96.0.1"],
        "{}",
        cluster.text
    );
    let outside = dig(&server, &["www.example.com.svc.cluster.local"]);
    assert_eq!(
        outside.answers,
        ["www.example.com.svc.cluster.local. 30 IN A 192.0.2.1"],
        "{}",
        outside.text
    );
    assert_eq!(
        stub.last().map(|m| m.queries[0].name().to_ascii()).as_deref(),
        Some("www.example.com."),
        "the upstream is asked the full name"
    );
    assert_eq!(dig(&server, &["nosuch.default.svc.cluster.local"]).status, "NXDOMAIN");
}

#[test]
fn edns0_unset_and_revert_and_answer_rules_without_the_repeated_keyword() {
    let stub = Stub::start();
    let text = format!(
        r".:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    rewrite continue edns0 local set 0xffee abcd revert
    rewrite continue edns0 local unset 0xfffe
    rewrite continue edns0 nsid unset
    rewrite stop name regex ^alias\.av\.test\.$ alias.upstream.test answer value ^real\.cdn\.example\.$ real.cdn.av.test name ^(.*)\.upstream\.test\.$ {{1}}.av.test
    forward . {}
}}
",
        stub.addr
    );
    let server = Server::start(&temp_dir("rewrite-unset"), &text);
    let plain = dig(&server, &["+ednsopt=65534:6162", "+nsid", "e.plain.test"]);
    assert_eq!(plain.answers, ["e.plain.test. 60 IN A 192.0.2.1"], "{}", plain.text);
    let upstream = stub.last().expect("request");
    let opts = &upstream.edns.as_ref().expect("OPT").options().options;
    let codes: Vec<u16> = opts.iter().map(|(k, _)| u16::from(*k)).collect();
    assert_eq!(codes, [0xffee], "0xfffe and NSID unset, 0xffee set: {opts:?}");
    assert!(
        !plain.text.contains("65518"),
        "revert: the reply carries no 0xffee\n{}",
        plain.text
    );
    // `answer value FROM TO name FROM TO`: the second rule without `answer`
    let alias = dig(&server, &["alias.av.test"]);
    assert_eq!(
        alias.answers,
        [
            "alias.av.test. 60 IN CNAME real.cdn.av.test.",
            "real.cdn.example. 60 IN A 192.0.2.1"
        ],
        "{}",
        alias.text
    );
    assert_eq!(
        stub.last().map(|m| m.queries[0].name().to_ascii()),
        Some("alias.upstream.test.".into())
    );
}

#[test]
fn check_refuses_the_rewrite_forms_it_cannot_honour_with_the_nearest_one() {
    let dir = temp_dir("rewrite-refuse");
    let conf = dir.join("Corefile");
    let text = ".:53 {
    rewrite {
        edns0 local set 0xffee abcd
        edns0 nsid set
    }
    rewrite edns0 local set 0xffee {server_name}
    rewrite edns0 nsid unset revert
    rewrite name regex (.*)\\.a\\.test {1}.b.test answer auto answer name (.*)\\.b\\.test {1}.a.test
}
";
    std::fs::write(&conf, text).expect("write");
    let (status, stderr) = common::check(&conf);
    assert!(!status.success());
    assert!(
        stderr.contains("Corefile:4:9: rewrite: one edns0 rule per rewrite"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Corefile:6:36: rewrite: unsupported variable '{server_name}'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Corefile:7:19: rewrite: edns0 nsid unset takes no arguments"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Corefile:8:13: rewrite: 'answer auto' cannot be combined"),
        "{stderr}"
    );
}
