//! The template subset against Go's own output for the README's examples.

use super::{Data, Template};

fn data() -> Data<'static> {
    Data {
        zone: "example.",
        name: "ip-10-1-2-3.example.",
        class: "IN",
        qtype: "A",
        regex: "^ip-(?P<b>[0-9]*)",
        matches: vec!["ip-10-1-2-3.example.".into(), "0a".into(), "ff".into()],
        groups: vec![
            ("0".into(), "ip-10".into()),
            ("a".into(), "10".into()),
            ("b".into(), "1".into()),
        ],
        remote: "192.0.2.9".into(),
        question: ("ip-10-1-2-3.example.", 1, 1),
        meta: crate::corefile::expr::Metadata::default(),
        vars: vec![
            ("local".into(), super::Value::Bool(true)),
            ("n".into(), super::Value::Int(7)),
        ],
    }
}

fn run(text: &str) -> Result<String, String> {
    Template::parse(text)?.execute(&data())
}

#[test]
fn fields_groups_and_matches_render_as_go_does() {
    let cases = [
        (
            "{{ .Name }} 60 IN A {{ .Group.a }}.{{ .Group.b }}.0.1",
            "ip-10-1-2-3.example. 60 IN A 10.1.0.1",
        ),
        ("{{ index .Match 1 }}", "0a"),
        ("{{ .Zone }} {{ .Class }} {{ .Type }}", "example. IN A"),
        ("{{ .Group.missing }}", "<no value>"),
        ("{{ index .Group \"missing\" }}|", "|"),
        ("{{ .Remote }}", "192.0.2.9"),
        ("{{ .Question.Qtype }} {{ .Question.Name }}", "1 ip-10-1-2-3.example."),
        ("{{ parseInt (index .Match 1) 16 8 }}", "10"),
        ("{{ index .Match 2 | printf \"%s-x\" }}", "ff-x"),
        ("{{ printf \"%03d|%-3s|%x\" 7 \"a\" 255 }}", "007|a  |ff"),
        (
            "{{ len .Match }} {{ eq .Type \"A\" \"AAAA\" }} {{ not (eq .Type \"A\") }}",
            "3 true false",
        ),
        ("{{ and .Name .Zone }} {{ or \"\" .Class }}", "example. IN"),
        ("a  {{- .Type -}}  b", "aAb"),
        ("{{/* comment */}}x", "x"),
        ("{{ .Meta \"kubernetes/client-namespace\" }}|", "|"),
        ("{{ index .Message.Question 0 }}", ";ip-10-1-2-3.example.\tIN\t A"),
    ];
    for (text, want) in cases {
        assert_eq!(run(text).as_deref(), Ok(want), "{text}");
    }
}

#[test]
fn execution_errors_are_reported_not_panicked() {
    for text in [
        "{{ index .Match 9 }}",
        "{{ parseInt (index .Match 2) 16 4 }}",
        "{{ parseInt .Name 10 8 }}",
        "{{ lt .Name 3 }}",
        "{{ .Name 3 }}",
    ] {
        assert!(run(text).is_err(), "{text}");
    }
}

#[test]
fn unsupported_syntax_is_a_load_error() {
    for (text, says) in [
        ("{{ range .Match }}x{{ end }}", "'range' is not supported"),
        ("{{ $x := 1 }}", "variables"),
        ("{{ .Name", "unclosed action"),
        ("{{ upper .Name }}", "function \"upper\" not defined"),
        ("{{ \"abc }}", "unterminated string"),
        ("{{ (index .Match 1 }}", "missing ')'"),
        ("{{ }}", "missing value"),
    ] {
        let err = Template::parse(text).expect_err(text);
        assert!(err.contains(says), "{text}: {err}");
    }
}

#[test]
fn a_field_the_data_has_not_parses_and_fails_each_run() {
    let t =
        Template::parse("{{ .Name }} {{ if .Nope }}{{ (index .Group.x 0) }}{{ end }} {{ .Grup.d }}").expect("parses");
    assert_eq!(t.unknown_fields, [".Nope", ".Grup.d"]);
    let err = t.execute(&data()).expect_err("no field");
    assert!(err.contains("no field .Nope"), "{err}");
}

#[test]
fn arbitrary_text_never_panics() {
    let pieces = [
        "{{",
        "}}",
        "{{-",
        "-}}",
        " ",
        ".",
        ".Name",
        ".Group.a",
        ".Match",
        "index",
        "parseInt",
        "printf",
        "\"",
        "`",
        "\\",
        "(",
        ")",
        "|",
        "%",
        "%99999999999999999999d",
        "eq",
        "and",
        "1",
        "-1",
        "0x",
        "é",
        "/*",
        "*/",
        "$x",
    ];
    let wide = run("{{ printf \"%99999999999999999999d\" 7 }}").expect("runs");
    assert_eq!(wide.len(), 255, "widths are capped");
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..20_000 {
        let mut text = String::new();
        for _ in 0..(x % 12) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text.push_str(pieces[(x % pieces.len() as u64) as usize]);
        }
        if let Ok(t) = Template::parse(&text) {
            let _ = t.execute(&data());
        }
    }
}

#[test]
fn if_else_end_picks_a_branch() {
    assert_eq!(
        run("{{ if .Var.local }}10.0.0.1{{ else }}192.0.2.1{{ end }}").as_deref(),
        Ok("10.0.0.1")
    );
    assert_eq!(run("{{ if eq .Var.n 8 }}a{{ else }}b{{ end }}").as_deref(), Ok("b"));
    assert_eq!(
        run("x{{ if .Group.a }}{{ if .Var.missing }}m{{ end }}[{{ .Group.a }}]{{ end }}y").as_deref(),
        Ok("x[10]y")
    );
    assert_eq!(run("{{ if .Var.n }}n={{ .Var.n }}{{ end }}").as_deref(), Ok("n=7"));
    for bad in [
        "{{ if .Name }}x",
        "{{ else }}",
        "{{ end }}",
        "{{ if .Name }}{{ else }}{{ else }}{{ end }}",
        "{{ if .Name }}{{ else if .Zone }}{{ end }}",
    ] {
        assert!(Template::parse(bad).is_err(), "{bad}");
    }
}
