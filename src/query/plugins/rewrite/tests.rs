//! Questions rewritten and answers mapped back, without sockets.

use hickory_proto::op::Query;
use hickory_proto::rr::{Name, RecordType};

use super::Rewrite;
use crate::query::reply::{self, Answer};

fn rules(body: &str) -> Rewrite {
    Rewrite {
        rules: crate::config::tests::server_block(body).expect("valid").rewrites,
    }
}

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("name")
}

fn asked(rw: &Rewrite, q: &str, t: RecordType) -> Option<String> {
    let (q, _) = rw.apply(&Query::query(name(q), t)).expect("valid")?;
    Some(format!("{} {}", q.name(), q.query_type()))
}

#[test]
fn each_match_kind_rewrites_the_question() {
    let rw = rules(
        r"rewrite name exact A.Example b.example
rewrite name prefix foo bar
rewrite name suffix .schmoogle.com .google.com
rewrite name substring west east
rewrite name regex ^(.*)-(us-west-1)\.example\.org\.$ {1}.service.{2}.consul
rewrite type ANY HINFO",
    );
    let cases = [
        ("a.example.", "b.example. A"),
        ("foo.x.test.", "bar.x.test. A"),
        ("www.schmoogle.com.", "www.google.com. A"),
        ("ftp-us-west-1.example.org.", "ftp.service.us-west-1.consul. A"),
    ];
    for (q, want) in cases {
        assert_eq!(asked(&rw, q, RecordType::A).as_deref(), Some(want), "{q}");
    }
    assert_eq!(
        asked(&rw, "west.test.", RecordType::A).as_deref(),
        Some("east.test. A"),
        "substring 'west.'"
    );
    assert_eq!(asked(&rw, "foobar.test.", RecordType::A), None, "prefix 'foo.' only");
    assert_eq!(asked(&rw, "x.test.", RecordType::ANY).as_deref(), Some("x.test. HINFO"));
}

#[test]
fn stop_ends_the_list_and_continue_chains() {
    let rw = rules("rewrite continue name suffix .a.test .b.test\nrewrite name suffix .b.test .c.test\nrewrite name suffix .c.test .d.test");
    assert_eq!(asked(&rw, "x.a.test.", RecordType::A).as_deref(), Some("x.c.test. A"));
    let bad = rules("rewrite name substring bad. bad..x.");
    assert!(bad.apply(&Query::query(name("a.bad.test."), RecordType::A)).is_err());
}

#[test]
fn answers_are_mapped_back() {
    let rw = rules("rewrite name suffix .corp.example .svc.internal answer auto answer value (.*)\\.svc\\.internal {1}.corp.example");
    let (q, revert) = rw
        .apply(&Query::query(name("db.corp.example."), RecordType::A))
        .expect("valid")
        .expect("applied");
    let mut out = Answer::default();
    out.answers.push(reply::cname(q.name(), 5, name("real.svc.internal.")));
    out.answers
        .push(reply::address(&name("real.svc.internal."), 5, [192, 0, 2, 1].into(), RecordType::A).expect("A"));
    revert.answer(&mut out);
    let lines: Vec<String> = out.answers.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "db.corp.example. 5 IN CNAME real.corp.example.",
            "real.corp.example. 5 IN A 192.0.2.1"
        ]
    );
    let ttl = rules("rewrite ttl suffix .example 30-60");
    let (_, revert) = ttl
        .apply(&Query::query(name("a.example."), RecordType::A))
        .expect("ok")
        .expect("applied");
    let mut out = Answer::default();
    out.answers.push(reply::txt(&name("a.example."), 5, "x"));
    out.authority.push(reply::txt(&name("a.example."), 600, "y"));
    revert.answer(&mut out);
    assert_eq!((out.answers[0].ttl, out.authority[0].ttl), (30, 60));
}
