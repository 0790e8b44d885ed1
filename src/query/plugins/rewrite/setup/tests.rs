//! `rewrite` rules as CoreDNS parses them, and every error they can report.

use crate::config::tests::{assert_errors, server_block};
use crate::query::plugins::rewrite::setup::rule::{EdnsAction, EdnsData, EdnsRule, Matcher, RuleKind};

#[test]
fn every_rule_form_loads() {
    let s = server_block(
        r"rewrite name foo.example bar.example
rewrite continue name suffix .schmoogle.com .google.com answer auto
rewrite stop {
    name regex (.*)-(us-west-1)\.example\.org {1}.service.{2}.consul
    answer name (.*)\.service\.(us-west-1)\.consul {1}-{2}.example.org
    answer value (.*)\.service\.(us-west-1)\.consul {1}-{2}.example.org
}
rewrite type ANY HINFO
rewrite class CH IN
rewrite ttl regex (.*)\.example 15-300
rewrite ttl exact a.example -60
rewrite cname suffix .cdn.example .cdn.internal
rewrite edns0 local set 0xffee 0x61626364
rewrite edns0 local append 65000 {client_ip}
rewrite edns0 nsid replace
rewrite edns0 subnet set 24 56
rewrite rcode a.example SERVFAIL 3
rewrite rcode regex .*\.example servfail NXDOMAIN",
    )
    .expect("valid");
    assert_eq!(s.rewrites.len(), 14);
    match &s.rewrites[13].kind {
        RuleKind::Rcode { from, to, .. } => assert_eq!((u16::from(*from), u16::from(*to)), (2, 3)),
        other => panic!("{other:?}"),
    }
    match &s.rewrites[0].kind {
        RuleKind::Name {
            matcher: Matcher::Exact(f),
            to,
            auto,
            ..
        } => {
            assert_eq!((f.as_str(), to.as_str(), *auto), ("foo.example.", "bar.example.", true))
        }
        other => panic!("{other:?}"),
    }
    assert!(s.rewrites[0].stop && !s.rewrites[1].stop);
    match &s.rewrites[1].kind {
        RuleKind::Name {
            matcher: Matcher::Suffix(f),
            auto,
            ..
        } => assert_eq!((f.as_str(), *auto), (".schmoogle.com.", true)),
        other => panic!("{other:?}"),
    }
    match &s.rewrites[2].kind {
        RuleKind::Name { answers, auto, .. } => assert_eq!((answers.len(), *auto), (2, false)),
        other => panic!("{other:?}"),
    }
    match &s.rewrites[5].kind {
        RuleKind::Ttl { min, max, .. } => assert_eq!((*min, *max), (15, 300)),
        other => panic!("{other:?}"),
    }
    match &s.rewrites[6].kind {
        RuleKind::Ttl { min, max, .. } => assert_eq!((*min, *max), (0, 60)),
        other => panic!("{other:?}"),
    }
    match &s.rewrites[8].kind {
        RuleKind::Edns0 { action, option, .. } => assert_eq!(
            (*action, option),
            (
                EdnsAction::Set,
                &EdnsRule::Local {
                    code: 0xffee,
                    data: EdnsData::Bytes(b"abcd".to_vec())
                }
            )
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_bad_argument_is_reported_with_its_position() {
    let errors = server_block(
        r"rewrite
rewrite name onlyone
rewrite name fuzzy a b
rewrite name regex (.*)\.a {1}.{2}.b
rewrite name regex ( b
rewrite name prefix a b answer auto answer name x y
rewrite name prefix a b answer bogus
rewrite name prefix a b answer name x
rewrite name prefix a b trailing
rewrite type A
rewrite type A BOGUS
rewrite class IN XX
rewrite ttl a.example lots
rewrite ttl a.example 300-15
rewrite edns0 local set 0xffee
rewrite edns0 local set 0x1ffff data
rewrite edns0 local set 1 {server_name}
rewrite edns0 local set 1 0xzz
rewrite edns0 subnet set 33 56
rewrite edns0 nsid frob
rewrite edns0 cookie set
rewrite answer name a b
rewrite flags a b
rewrite cname a
rewrite rcode a.example SERVFAIL
rewrite rcode a.example SERVFAIL NOPE
rewrite name a b {
    name c d
}",
    )
    .expect_err("invalid");
    let want = [
        "/tmp/Corefile:2:1: rewrite: no rule",
        "/tmp/Corefile:3:9: rewrite: too few arguments for a name rule",
        "/tmp/Corefile:4:14: rewrite: name rule supports only exact, prefix, suffix, substring and regex matching, got 'fuzzy'",
        "/tmp/Corefile:5:28: rewrite: '{1}.{2}.b' uses more groups than the pattern",
        "/tmp/Corefile:6:20: could not parse regex '('",
        "/tmp/Corefile:7:9: rewrite: 'answer auto' cannot be combined with 'answer name'",
        "/tmp/Corefile:8:32: rewrite: answer takes auto, name FROM TO or value FROM TO",
        "/tmp/Corefile:9:32: rewrite: answer name needs FROM and TO",
        "/tmp/Corefile:10:25: rewrite: unexpected 'trailing'",
        "/tmp/Corefile:11:9: rewrite: type rules take exactly FROM and TO",
        "/tmp/Corefile:12:16: rewrite: invalid type 'BOGUS'",
        "/tmp/Corefile:13:18: invalid query class 'XX'",
        "/tmp/Corefile:14:23: rewrite: invalid TTL 'lots'",
        "/tmp/Corefile:15:23: rewrite: invalid TTL '300-15'",
        "/tmp/Corefile:16:15: rewrite: edns0 local rules take exactly CODE and DATA",
        "/tmp/Corefile:17:25: rewrite: '0x1ffff' is not an option code",
        "/tmp/Corefile:18:27: rewrite: unsupported variable '{server_name}'",
        "/tmp/Corefile:19:27: rewrite: '0xzz' is not hex data",
        "/tmp/Corefile:20:26: rewrite: '33' is not an IPv4 prefix length",
        "/tmp/Corefile:21:20: rewrite: invalid edns0 action 'frob'",
        "/tmp/Corefile:22:15: rewrite: invalid edns0 rule type 'cookie'",
        "/tmp/Corefile:23:9: rewrite: response rewrites must begin with a name rule",
        "/tmp/Corefile:24:9: rewrite: invalid rule type 'flags'",
        "/tmp/Corefile:25:9: rewrite: too few arguments for a cname rule",
        "/tmp/Corefile:26:9: rewrite: rcode rules take [MATCH] NAME FROM TO",
        "/tmp/Corefile:27:34: rewrite: invalid rcode 'NOPE'",
        "/tmp/Corefile:29:5: rewrite: a rule on the directive line takes no block",
    ];
    assert_errors(&errors, &want);
}
