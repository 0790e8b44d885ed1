//! `geoip` end to end: a MaxMind DB written at test time by PyPI's
//! mmdb-writer (`tests/common/mmdb.py`, the venv `tests/run` makes) maps
//! 127.0.0.1 to the Netherlands and 127.0.0.2 to Great Britain; two
//! blocks of one zone on one port choose by
//! `metadata('geoip/country/code')` (CoreDNS's README: the view first, the
//! viewless block last), asked with `dig -b` from each address over UDP
//! and TCP, and with `dig +subnet` for `edns-subnet` (the ECS address
//! chooses, not the client's). The labels show in the `log` line
//! (`{/geoip/country/code}`) of the block that serves. CoreDNS's own
//! rows (setup, each label) are `tests/coredns/geoip.table`.

mod common;

use std::path::Path;

use common::{needs, temp_dir, Server};

/// The NL view answers 192.0.2.31, the viewless block after it 192.0.2.44.
fn corefile(db: &Path) -> String {
    format!(
        r#"example.com:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    view netherlands {{
        expr metadata('geoip/country/code') == 'NL'
    }}
    geoip {} {{
        edns-subnet
    }}
    metadata
    log . "geo {{remote}} {{/geoip/country/code}} {{/geoip/city/name}} {{/view/name}}"
    template IN A {{
        answer "{{{{ .Name }}}} 60 IN A 192.0.2.31"
    }}
}}
example.com:0 {{
    bind 127.0.0.1
    template IN A {{
        answer "{{{{ .Name }}}} 60 IN A 192.0.2.44"
    }}
}}
"#,
        db.display()
    )
}

/// `dig +short` of `www.example.com A` from `from`, with `extra` flags.
fn ask(server: &Server, from: &str, extra: &[&str]) -> String {
    common::dig::short_from(server, from, &[&["www.example.com", "A"][..], extra].concat())
}

#[test]
fn views_chosen_by_country() {
    let Some(_) = needs("geoip", common::mmdb::python(), common::mmdb::INSTALL) else {
        return;
    };
    let dir = temp_dir("geoip");
    let db = dir.join("views.mmdb");
    common::mmdb::write("views", &db).expect("mmdb written");
    let server = Server::start(&dir, &corefile(&db));
    for round in 0..2 {
        for tcp in [&[][..], &["+tcp"][..]] {
            // 127.0.0.1 is in NL: the view; 127.0.0.2 in GB: the block after
            assert_eq!(ask(&server, "127.0.0.1", tcp), "192.0.2.31", "round {round} {tcp:?}");
            assert_eq!(ask(&server, "127.0.0.2", tcp), "192.0.2.44", "round {round} {tcp:?}");
        }
    }
    // edns-subnet: the ECS address is looked up, not the client's
    assert_eq!(ask(&server, "127.0.0.2", &["+subnet=127.0.0.1/32"]), "192.0.2.31");
    assert_eq!(ask(&server, "127.0.0.1", &["+subnet=127.0.0.2/32"]), "192.0.2.44");
    // an address the database does not hold: no country, not the view
    assert_eq!(ask(&server, "127.0.0.1", &["+subnet=198.51.100.0/24"]), "192.0.2.44");
    assert!(server.logged("geo 127.0.0.1 NL Amsterdam netherlands"));
    assert!(server.logged("geo 127.0.0.2 NL Amsterdam netherlands"));
    // the GB client is served by the block without `log`
    assert!(!server.log_contains(" GB "));
}

#[test]
fn check_prints_the_database() {
    let Some(_) = needs("geoip", common::mmdb::python(), common::mmdb::INSTALL) else {
        return;
    };
    let dir = temp_dir("geoip-check");
    let db = dir.join("views.mmdb");
    common::mmdb::write("views", &db).expect("mmdb written");
    let conf = dir.join("Corefile");
    std::fs::write(&conf, ". {\n    geoip views.mmdb\n    metadata\n}\n").expect("write");
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(&conf)
        .output()
        .expect("run clusterdns check");
    assert!(printed.status.success(), "{printed:?}");
    let out = String::from_utf8_lossy(&printed.stdout);
    assert!(out.contains("geoip views.mmdb"), "{out}");
    assert!(out.contains("provides city"), "{out}");
    std::fs::write(&conf, ". {\n    geoip missing.mmdb\n}\n").expect("write");
    let (status, out) = common::check(&conf);
    assert_eq!(status.code(), Some(64), "{out}");
    assert!(out.contains("geoip: failed to open database file"), "{out}");
}
