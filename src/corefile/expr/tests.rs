//! The expression language on its own: what compiles (and what not, with
//! the offset), and what runs to what.

use super::{Program, Query, Ty, Value, Wire};

fn query() -> Query<'static> {
    static GROUPS: [(String, String); 0] = [];
    Query {
        name: "a.example.",
        qtype: "A",
        class: "IN",
        client: "10.240.0.1".parse().ok(),
        groups: &GROUPS,
        wire: Wire::of(false, 40, (4321, 0), Some((1232, true)), 40212),
        metadata: super::Metadata::default(),
    }
}

fn eval(src: &str) -> Result<Value, String> {
    let p = Program::compile(src, &[]).map_err(|e| format!("compile at {}: {}", e.offset, e.message))?;
    p.run(&query(), &[])
}

#[test]
fn operators_and_functions_run_as_expr_lang_does() {
    let cases: [(&str, Value); 17] = [
        ("name() == 'a.example.'", Value::Bool(true)),
        ("type() == 'A' && class() == \"IN\"", Value::Bool(true)),
        ("incidr(client_ip(), '10.0.0.0/8')", Value::Bool(true)),
        ("incidr(client_ip(), '192.0.2.0/24') or false", Value::Bool(false)),
        ("1 + 2 * 3", Value::Int(7)),
        ("7 % 4", Value::Int(3)),
        ("7 / 2", Value::Float(3.5)),
        ("'x' + 'y'", Value::Str("xy".into())),
        ("int('42') > 41", Value::Bool(true)),
        ("replace('10-0-0-1', '-', '.')", Value::Str("10.0.0.1".into())),
        (
            "any(['10.0.0.0/8', '192.168.0.0/16'], incidr('192.168.1.1', #))",
            Value::Bool(true),
        ),
        ("count([1, 2, 3], # > 1)", Value::Int(2)),
        ("'b' in ['a', 'b']", Value::Bool(true)),
        ("'abc' not in ['a']", Value::Bool(true)),
        ("name() endsWith '.example.' ? upper('y') : 'n'", Value::Str("Y".into())),
        ("len(split('a.b.c', '.'))", Value::Int(3)),
        ("!(metadata('x/y') == '')", Value::Bool(false)),
    ];
    for (src, want) in cases {
        assert_eq!(eval(src), Ok(want), "{src}");
    }
}

#[test]
fn misuse_is_a_compile_error_with_its_offset() {
    let errors = [
        ("1 +", 3),
        ("invalid expression", 0),
        ("undefined == 1", 0),
        ("name() ==", 9),
        ("1 + 'x'", 4),
        ("incidr(1, 'x')", 0),
        ("len", 0),
        ("'unterminated", 0),
    ];
    for (src, offset) in errors {
        match Program::compile(src, &[]) {
            Ok(_) => panic!("{src}: compiled"),
            Err(e) => assert_eq!(e.offset, offset, "{src}: {}", e.message),
        }
    }
}

#[test]
fn the_request_functions_read_what_the_client_sent() {
    let cases = [
        ("proto()", Value::Str("udp".into())),
        ("size()", Value::Int(40)),
        ("id()", Value::Int(4321)),
        ("opcode()", Value::Int(0)),
        ("do()", Value::Bool(true)),
        ("bufsize()", Value::Int(1232)),
        ("port()", Value::Str("40212".into())),
        ("int(port()) > 1024 && bufsize() >= 512", Value::Bool(true)),
    ];
    for (src, want) in cases {
        assert_eq!(eval(src), Ok(want), "{src}");
        assert!(Program::compile(src, &[]).expect("compiles").uses_client, "{src}");
    }
    // CoreDNS's edns.Size: no OPT is 512, a smaller payload is 512, TCP is 65535.
    assert_eq!(Wire::of(false, 30, (1, 0), None, 53).bufsize, 512);
    assert_eq!(Wire::of(false, 30, (1, 0), Some((100, false)), 53).bufsize, 512);
    assert_eq!(Wire::of(true, 30, (1, 0), Some((1232, false)), 53).bufsize, 65535);
    assert!(!Program::compile("name() == 'x.'", &[]).expect("compiles").uses_client);
}

#[test]
fn variables_carry_their_type_and_value() {
    let vars = vec![("a".to_string(), Ty::Int)];
    let p = Program::compile("a + 1", &vars).expect("compiles");
    assert_eq!(p.ty, Ty::Int);
    assert_eq!(p.run(&query(), &[Value::Int(1)]), Ok(Value::Int(2)));
    let e = Program::compile("'x' + a", &vars).expect_err("string + int");
    assert!(e.message.contains("mismatched types string and int"), "{}", e.message);
}

#[test]
fn runtime_failures_are_errors() {
    for src in [
        "incidr('notanip', '10.0.0.0/8')",
        "int('x')",
        "1 % 0",
        "[1][5]",
        "9223372036854775807 + 1",
    ] {
        assert!(eval(src).is_err(), "{src}");
    }
    assert!(
        Program::compile("client_ip() == ''", &[])
            .expect("compiles")
            .uses_client
    );
}
