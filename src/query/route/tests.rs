//! The router's decision table, read from the bytes [`Handler::handle`]
//! writes: which block takes a name (the longest zone), which plugin of it
//! answers (CoreDNS's order: `local`, `any`, `chaos`, `rewrite`, `acl`,
//! `template`, `hosts`, `file`, then REFUSED with no `forward`), what
//! `fallthrough` passes on and what a `template` CNAME chases. Only bytes
//! in and bytes out, so it holds while the query path's files move.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{DNSClass, Name, RecordType};

use crate::metrics::{Metrics, Transport};
use crate::query::defer::Sink;
use crate::query::plugins::chain::Chain;
use crate::query::plugins::rewrite::Rewrite;
use crate::query::{Block, Handler, Router, Scratch};

/// A zone file for `file.example.` in a directory of this test's own.
fn zone_file() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clusterdns-route-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("file.example.db");
    let zone = "$ORIGIN file.example.\n@ 300 IN SOA ns.file.example. admin.file.example. 1 7200 1800 86400 30\n\
                @ 300 IN NS ns.file.example.\nns 300 IN A 192.0.2.53\nwww 300 IN A 192.0.2.80\n\
                both 300 IN A 192.0.2.81\n";
    std::fs::write(&path, zone).expect("zone file");
    path
}

/// A handler over the server blocks of `corefile` (the plugins this table
/// covers; no cluster, no forwarding).
fn handler(corefile: &str) -> Handler {
    let config = crate::config::load_str(Path::new("/nonexistent/Corefile"), corefile, 53).expect("Corefile");
    let blocks = config
        .servers
        .iter()
        .map(|s| Block {
            rewrite: (!s.rewrites.is_empty()).then(|| Rewrite {
                rules: s.rewrites.clone(),
            }),
            plugins: Chain::build(&s.plugins, "dns://:53"),
            ..Block::new(s.zones.clone())
        })
        .collect();
    Handler::new(Router::new(blocks, Vec::new()), Arc::new(Metrics::default()))
}

/// The reply to `name qtype` (class `class`), as its rcode and its answer
/// section in presentation form; `None` when nothing is sent.
fn ask(h: &Handler, name: &str, qtype: RecordType, class: DNSClass) -> Option<(ResponseCode, Vec<String>)> {
    ask_with(h, name, qtype, class, &mut Scratch::default())
}

/// [`ask`] through a worker's `scratch` (its memo and cache-hit replays).
fn ask_with(
    h: &Handler,
    name: &str,
    qtype: RecordType,
    class: DNSClass,
    scratch: &mut Scratch,
) -> Option<(ResponseCode, Vec<String>)> {
    let mut m = Message::new(0x2525, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    let mut q = Query::query(Name::from_ascii(name).expect("name"), qtype);
    q.set_query_class(class);
    m.add_query(q);
    let bytes = m.to_vec().expect("encodes");
    let peer = SocketAddr::from(([10, 0, 0, 7], 5353));
    if !h.handle(&bytes, peer, Transport::Udp, scratch, &|| Sink::None, Instant::now()) {
        return None;
    }
    let reply = Message::from_vec(&scratch.out).expect("the reply parses");
    assert_eq!(reply.metadata.id, 0x2525, "{name}");
    let answers = reply.answers.iter().map(|r| r.to_string()).collect();
    Some((reply.metadata.response_code, answers))
}

/// A question (name, type, class) and the reply it gets from [`ask`].
type Row<'a> = (&'a str, RecordType, DNSClass, Option<(ResponseCode, Vec<String>)>);

const COREFILE: &str = "\
example.org:53 {
    template IN A example.org {
        answer \"{{ .Name }} 60 IN A 192.0.2.1\"
    }
}
sub.example.org:53 {
    template IN A sub.example.org {
        answer \"{{ .Name }} 60 IN A 192.0.2.2\"
    }
}
.:53 {
    local
    any
    chaos clusterdns-test
    acl blocked.test {
        block
    }
    rewrite name exact renamed.test. hosts.test.
    template IN A tmpl.test {
        match ^(www|both)[.]tmpl[.]test[.]$
        answer \"{{ .Name }} 60 IN A 192.0.2.10\"
        fallthrough
    }
    template IN A chase.test {
        answer \"{{ .Name }} 60 IN CNAME hosts.test.\"
    }
    hosts /nonexistent/hosts {
        192.0.2.20 hosts.test other.tmpl.test blocked.test
        192.0.2.21 both.tmpl.test both.file.example
        fallthrough
    }
    file ZONE file.example
}
";

#[test]
fn each_question_is_answered_by_the_block_and_plugin_coredns_picks() {
    let corefile = COREFILE.replace("ZONE", &zone_file().display().to_string());
    let h = handler(&corefile);
    let a = |ttl: u32, name: &str, addr: &str| format!("{name} {ttl} IN A {addr}");
    let noerror = |answers: Vec<String>| Some((ResponseCode::NoError, answers));
    let table: Vec<Row<'_>> = vec![
        // the longest zone takes the name
        (
            "x.example.org.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(60, "x.example.org.", "192.0.2.1")]),
        ),
        (
            "x.sub.example.org.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(60, "x.sub.example.org.", "192.0.2.2")]),
        ),
        // `local` first, before `acl` or any data
        (
            "localhost.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(604800, "localhost.", "127.0.0.1")]),
        ),
        // `chaos` takes class CH
        (
            "version.bind.",
            RecordType::TXT,
            DNSClass::CH,
            noerror(vec!["version.bind. 0 CH TXT clusterdns-test".into()]),
        ),
        // `acl` blocks before `hosts` holding the name
        (
            "blocked.test.",
            RecordType::A,
            DNSClass::IN,
            Some((ResponseCode::Refused, vec![])),
        ),
        // `rewrite` changes the question for `hosts` and the answer back
        (
            "renamed.test.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(3600, "renamed.test.", "192.0.2.20")]),
        ),
        // `template` before `hosts`
        (
            "both.tmpl.test.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(60, "both.tmpl.test.", "192.0.2.10")]),
        ),
        // no template regex matches: `fallthrough` to `hosts`
        (
            "other.tmpl.test.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(3600, "other.tmpl.test.", "192.0.2.20")]),
        ),
        // a template's CNAME is chased (here to `hosts`)
        (
            "x.chase.test.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![
                "x.chase.test. 60 IN CNAME hosts.test.".into(),
                a(3600, "hosts.test.", "192.0.2.20"),
            ]),
        ),
        // `hosts` before `file`; `hosts` falls through to `file`
        (
            "both.file.example.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(3600, "both.file.example.", "192.0.2.21")]),
        ),
        (
            "www.file.example.",
            RecordType::A,
            DNSClass::IN,
            noerror(vec![a(300, "www.file.example.", "192.0.2.80")]),
        ),
        // the block takes it, nothing answers and nothing forwards:
        // SERVFAIL, as CoreDNS's chain that runs out
        (
            "nowhere.test.",
            RecordType::A,
            DNSClass::IN,
            Some((ResponseCode::ServFail, vec![])),
        ),
    ];
    let wrong: Vec<String> = table
        .into_iter()
        .filter_map(|(name, qtype, class, want)| {
            let got = ask(&h, name, qtype, class);
            (got != want).then(|| format!("{name} {qtype} {class}: got {got:?}, want {want:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // an ANY question gets RFC 8482's HINFO
    let (rcode, answers) = ask(&h, "hosts.test.", RecordType::ANY, DNSClass::IN).expect("a reply");
    assert_eq!(rcode, ResponseCode::NoError);
    assert!(
        answers.len() == 1 && answers[0].contains("HINFO") && answers[0].contains("RFC 8482"),
        "{answers:?}"
    );
}

/// An ACME challenge's TXT in a block that serves nothing for it: the
/// SERVFAIL before the challenge is presented is not memoized, so the
/// worker that answered it answers the challenge once presented (and
/// SERVFAIL again after).
#[test]
fn acme_challenge_is_never_replayed_from_the_memo() {
    let file = zone_file();
    let corefile = format!(
        ".:53 {{\n    file {} file.example\n}}\ntls://.:8853 {{\n    tls {{\n        acme dns.other.example\n    }}\n}}\n",
        file.display()
    );
    let h = handler(&corefile);
    let mut scratch = Scratch::default();
    let name = "_acme-challenge.dns.other.example.";
    let txt = |scratch: &mut Scratch| ask_with(&h, name, RecordType::TXT, DNSClass::IN, scratch);
    assert_eq!(txt(&mut scratch).map(|r| r.0), Some(ResponseCode::ServFail));
    assert_eq!(txt(&mut scratch).map(|r| r.0), Some(ResponseCode::ServFail));
    let owner = Name::from_ascii(name).expect("name");
    crate::query::plugins::acme::present(&owner, "route-test-digest");
    let (rcode, answers) = txt(&mut scratch).expect("a reply");
    crate::query::plugins::acme::clean_up(&owner, "route-test-digest");
    assert_eq!(rcode, ResponseCode::NoError);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(answers[0].contains("route-test-digest"), "{answers:?}");
    assert_eq!(txt(&mut scratch).map(|r| r.0), Some(ResponseCode::ServFail));
}

/// A question that becomes ANY only when rewritten still gets RFC 8482's
/// HINFO: the early plugin that asks again is asked on the rewritten one.
#[test]
fn a_question_rewritten_to_any_gets_the_hinfo() {
    let h = handler(".:53 {\n    any\n    rewrite type TXT ANY\n}\n");
    let (rcode, answers) = ask(&h, "x.test.", RecordType::TXT, DNSClass::IN).expect("a reply");
    assert_eq!(rcode, ResponseCode::NoError);
    assert!(
        answers.len() == 1 && answers[0].contains("HINFO") && answers[0].contains("RFC 8482"),
        "{answers:?}"
    );
}
