//! `template` options and every error they can report.

use crate::config::tests::{assert_errors, server_block};

#[test]
fn the_readme_examples_load() {
    let s = server_block(
        r#"template IN A example {
    match "^ip0a(?P<b>[a-f0-9]{2})(?P<c>[a-f0-9]{2})(?P<d>[a-f0-9]{2})[.]example[.]$"
    answer "{{ .Name }} 60 IN A 10.{{ parseInt .Group.b 16 8 }}.{{ parseInt .Group.c 16 8 }}.{{ parseInt .Group.d 16 8 }}"
    fallthrough
}
template ANY ANY invalid {
    rcode NXDOMAIN
    authority "invalid. 60 {{ .Class }} SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)"
    ederror 21 "Blocked according to RFC2606"
}
template IN AAAA .
template ANY ANY " a.example  b.example " {
    rcode NXDOMAIN
    upstream
}"#,
    )
    .expect("valid");
    let templates = super::listed(s.setup("template"));
    assert_eq!(templates.len(), 4);
    let t = &templates[0];
    assert_eq!(
        (t.regex.len(), t.answer.len(), t.fallthrough.as_deref()),
        (1, 1, Some(&[][..]))
    );
    assert_eq!(templates[1].ederror, Some((21, "Blocked according to RFC2606".into())));
    assert_eq!(templates[2].zones, [hickory_proto::rr::Name::root()]);
    assert_eq!(templates[3].zones.len(), 2, "a quoted list of zones is split");
}

#[test]
fn every_bad_argument_is_reported_with_its_position() {
    let errors = server_block(
        r#"template
template XX A
template IN BOGUS
template IN A {
    match "(unclosed"
    answer "{{ .Name"
    additional "{{ range .Match }}x{{ end }}"
    authority "{{ .Bogus }}"
    rcode NOPE
    ederror 70000
    answer
    frobnicate
}"#,
    )
    .expect_err("invalid");
    let want = [
        "/tmp/Corefile:2:1: 'template' takes at least 2 arguments",
        "/tmp/Corefile:3:10: invalid query class 'XX'",
        "/tmp/Corefile:4:13: invalid record type 'BOGUS'",
        "/tmp/Corefile:6:11: could not parse regex '(unclosed'",
        "/tmp/Corefile:7:12: template: could not compile answer template: unclosed action",
        "/tmp/Corefile:8:16: template: could not compile additional template: 'range' is not supported",
        "/tmp/Corefile:10:11: template: unknown rcode 'NOPE'",
        "/tmp/Corefile:11:13: template: '70000' is not an extended DNS error code",
        "/tmp/Corefile:12:5: 'answer' takes at least 1 argument",
        "/tmp/Corefile:13:5: template: unknown option 'frobnicate'",
    ];
    assert_errors(&errors, &want);
}

#[test]
fn var_and_expr_errors_point_into_the_expression() {
    let errors = server_block(
        r#"template IN A example. {
    var a 1
    var b a + 'x'
    var 1b 2
    var len 1
    var a 2
    expr name() ==
    expr "incidr(client_ip(), 10)"
    var c
}"#,
    )
    .expect_err("invalid");
    let want = [
        "/tmp/Corefile:4:15: template: could not compile expression 'a + 'x'': invalid operation: + (mismatched types int and string)",
        "/tmp/Corefile:5:9: template: invalid variable name \"1b\"",
        "/tmp/Corefile:6:9: template: variable name \"len\" is reserved",
        "/tmp/Corefile:7:9: template: variable name \"a\" is reserved or already declared",
        "/tmp/Corefile:8:19: template: could not compile expression 'name() ==': unexpected end of expression",
        "/tmp/Corefile:9:11: template: could not compile expression 'incidr(client_ip(), 10)': cannot use int as argument",
        "/tmp/Corefile:10:5: 'var' takes at least 2 arguments",
    ];
    assert_errors(&errors, &want);
}
