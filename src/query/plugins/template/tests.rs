//! Rendered records are read as zone-file lines, as miekg/dns's `NewRR` does.

use super::parse_rr;
use crate::query::plugins::verdict::Verdict;

#[test]
fn record_lines_default_like_new_rr() {
    let r = parse_rr("ip-10-1-2-3.example. 60 IN A 10.1.2.3").expect("A");
    assert_eq!(r.to_string(), "ip-10-1-2-3.example. 60 IN A 10.1.2.3");
    let r = parse_rr("foogle.com CNAME google.com").expect("relative names, no TTL");
    assert_eq!(r.to_string(), "foogle.com. 3600 IN CNAME google.com.");
    let r = parse_rr("invalid. 60 IN SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)").expect("SOA");
    assert_eq!(r.ttl, 60);
    for bad in ["", "x. 60 IN A 999.1.1.1", "x. 60 IN BOGUS 1", "not a record"] {
        assert!(parse_rr(bad).is_err(), "{bad:?}");
    }
    for line in [
        "my.example. 60 IN DNAME other.example.",
        "my.example. dname other.example.",
    ] {
        let r = parse_rr(line).expect("DNAME");
        assert_eq!(r.record_type(), hickory_proto::rr::RecordType::DNAME, "{line}");
        let target = crate::zonefile::dname_target(&r).map(|n| n.to_ascii());
        assert_eq!(target.as_deref(), Some("other.example."), "{line}");
    }
}

fn templates(body: &str) -> super::Templates {
    let server = crate::config::tests::server_block(body).expect("valid");
    let list = super::setup::listed(server.plugins.iter().find(|p| p.name() == "template"));
    super::Templates::new(list, "dns://:53".into())
}

fn ask(t: &super::Templates, name: &str, qtype: hickory_proto::rr::RecordType) -> (Verdict, String) {
    let q = hickory_proto::op::Query::query(hickory_proto::rr::Name::from_ascii(name).expect("name"), qtype);
    let mut out = crate::query::Answer::default();
    let done = t.answer(
        &q,
        &crate::query::plugins::chain::Client {
            ip: std::net::IpAddr::from([192, 0, 2, 9]),
            wire: Default::default(),
            subnet: None,
        },
        &mut out,
    );
    let lines: Vec<String> = out.answers.iter().map(ToString::to_string).collect();
    (
        done,
        format!("{} {}", crate::metrics::rcode_name(out.rcode), lines.join(",")),
    )
}

#[test]
fn the_decision_table() {
    use super::Verdict::*;
    use hickory_proto::rr::RecordType::{A, AAAA, MX};
    let t = templates(
        r#"template IN A example {
    match ^a[.]
    answer "{{ .Name }} 5 IN A 192.0.2.1"
    fallthrough b.example
}
template IN ANY example {
    match ^c[.]
    answer "{{ .Name }} 5 IN CNAME d.example."
}
template IN MX example {
    rcode REFUSED
}"#,
    );
    assert_eq!(
        ask(&t, "a.example.", A),
        (Answered, "NOERROR a.example. 5 IN A 192.0.2.1".into())
    );
    assert_eq!(ask(&t, "x.other.", A).0, Next, "outside every template zone");
    assert_eq!(
        ask(&t, "x.b.example.", A).0,
        Answered,
        "fallthrough only for b.example: the next template's regex misses"
    );
    assert_eq!(ask(&t, "x.b.example.", A).1, "SERVFAIL ");
    assert_eq!(
        ask(&t, "x.example.", A),
        (Answered, "SERVFAIL ".into()),
        "no fallthrough there"
    );
    assert_eq!(
        ask(&t, "c.example.", AAAA).0,
        Chase(hickory_proto::rr::Name::from_ascii("d.example.").expect("name"))
    );
    assert_eq!(
        ask(&t, "c.example.", MX),
        (Answered, "NOERROR c.example. 5 IN CNAME d.example.".into()),
        "no chase for MX"
    );
    let nodata = templates("template IN AAAA example");
    assert_eq!(ask(&nodata, "x.example.", AAAA), (Answered, "NOERROR ".into()));
    assert_eq!(ask(&nodata, "x.example.", A).0, Next, "type mismatch: the next plugin");
}

/// coredns plugin/template/var_test.go TestVarMatch: the values the
/// variables hold, as the answer template prints them; a client-dependent
/// expression keeps the answer out of the memo.
#[test]
fn variables_hold_expr_values() {
    use hickory_proto::rr::RecordType::TXT;
    let t = templates(
        r#"template IN TXT example. {
    match ^(?P<n>[0-9]+)[.]example[.]$
    var num int(group('n'))
    var double num * 2
    var label 'x' + group('n')
    var flag num > 1
    expr incidr(client_ip(), '192.0.2.0/24')
    answer "{{ .Name }} 60 IN TXT \"{{ .Var.num }} {{ .Var.double }} {{ .Var.label }} {{ .Var.flag }} {{ len .Var }}\""
}"#,
    );
    let q = hickory_proto::op::Query::query(hickory_proto::rr::Name::from_ascii("2.example.").expect("name"), TXT);
    let mut out = crate::query::Answer::default();
    t.answer(
        &q,
        &crate::query::plugins::chain::Client {
            ip: std::net::IpAddr::from([192, 0, 2, 9]),
            wire: Default::default(),
            subnet: None,
        },
        &mut out,
    );
    let lines: Vec<String> = out.answers.iter().map(ToString::to_string).collect();
    assert_eq!(lines, ["2.example. 60 IN TXT 2 4 x2 true 4"]);
    assert!(!out.tags.memoizable, "client_ip() makes the answer the client's");
}
