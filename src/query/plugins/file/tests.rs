//! The block's zone lines as one plugin: the longest origin answers,
//! whichever line holds it, and each row prints only its own lines.

use std::time::Duration;

use hickory_proto::op::Query;
use hickory_proto::rr::{Name, RecordType};

use super::setup::FileConfig;
use super::*;

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("name")
}

/// A zone file for `origin` whose `www` has `address`.
fn line(tag: &str, origin: &str, address: &str) -> Arc<dyn Line> {
    let dir = std::env::temp_dir().join(format!("clusterdns-zones-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("db");
    let text = format!("$ORIGIN {origin}\n@ 60 IN SOA ns hostmaster 1 7200 3600 1209600 60\nwww 60 IN A {address}\n");
    std::fs::write(&path, text).expect("write zone");
    Arc::new(FileConfig {
        path,
        zones: vec![name(origin)],
        reload: Duration::from_secs(60),
        reload_by_mtime: false,
        fallthrough: None,
    })
}

fn address(zones: &dyn Answering, qname: &str) -> String {
    let mut out = Answer::default();
    let query = Query::query(name(qname), RecordType::A);
    zones.answer(&query, &Client::ANY, &mut out);
    out.answers.first().map(|r| r.data.to_string()).unwrap_or_default()
}

#[test]
fn the_longest_origin_answers_whichever_line_holds_it() {
    let (outer, inner) = (
        line("outer", "example.org.", "192.0.2.1"),
        line("inner", "sub.example.org.", "192.0.2.2"),
    );
    for lines in [[outer.clone(), inner.clone()], [inner, outer]] {
        let setup = lines
            .into_iter()
            .fold(None, |s: Option<Arc<dyn Setup>>, l| Some(with(s.as_ref(), l)));
        let zones = setup.expect("a setup").build("dns://:53");
        assert_eq!(address(&*zones, "www.sub.example.org."), "192.0.2.2");
        assert_eq!(address(&*zones, "www.example.org."), "192.0.2.1");
        assert!(zones.serves(&name("x.example.org.")) && !zones.serves(&name("example.com.")));
        assert!(!zones.passes_address(&name("www.example.org.")));
        assert_eq!(zones.zone_sources().len(), 2, "both origins may be sent");
    }
}

#[test]
fn each_directive_prints_its_own_lines() {
    let setup = with(None, line("print", "example.net.", "192.0.2.3"));
    assert!(holds(Some(&setup), "file") && !holds(Some(&setup), "auto"));
    let (mut mine, mut others) = (Block(String::new()), Block(String::new()));
    print_lines(&mut mine, Some(&setup), "file");
    print_lines(&mut others, Some(&setup), "secondary");
    assert!(
        mine.0.trim_start().starts_with("file ") && mine.0.contains("example.net."),
        "{}",
        mine.0
    );
    assert!(others.0.is_empty());
}
