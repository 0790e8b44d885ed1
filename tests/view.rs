//! `view` and `metadata` end to end: one listener on 127.0.0.1 whose
//! blocks share the zone `.`, asked with dig from two loopback source
//! addresses (127.0.0.1 and 127.0.0.2): the split horizon answers each
//! client from its own block, over UDP and TCP, repeatedly (the inside's
//! cached answer never reaches the outside), with the `view` label on `coredns_dns_requests_total`
//! and the view's name in the log line (`{/view/name}`). One UDP socket
//! (`multisocket 1`): one worker, so its memo and cache-hit replays see
//! both clients.

mod common;

use common::stub::Stub;
use common::{temp_dir, Server};

/// The `outside` view (client 127.0.0.1) answers from `hosts`; the
/// block after it, without a view, forwards everyone else to `stub` with a
/// cache (a block chosen by zone alone would be this one: its cache hits
/// must not be replayed to the outside).
fn corefile(stub: &Stub) -> String {
    format!(
        r#". {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    multisocket 1
    metadata
    log . "view={{/view/name}} {{remote}} {{name}}"
    view outside {{
        expr incidr(client_ip(), '127.0.0.1/32')
    }}
    hosts {{
        203.0.113.7 shop.example
        198.51.100.1 other.example
    }}
}}
. {{
    bind 127.0.0.1
    cache 60
    forward . {}
}}
"#,
        stub.addr
    )
}

/// `dig +short` of `name` from source address `from`, over TCP when `tcp`
/// (no cookie, no AD: a plain question).
fn ask(server: &Server, from: &str, name: &str, tcp: bool) -> String {
    let args = ["+noadflag", name, "A", if tcp { "+tcp" } else { "+notcp" }];
    common::dig::short_from(server, from, &args)
}

#[test]
fn split_horizon_by_client_address() {
    let dir = temp_dir("view");
    let stub = Stub::start();
    let server = Server::start(&dir, &corefile(&stub));
    for round in 0..3 {
        for tcp in [false, true] {
            // inside: the stub's answer (forwarded once, then from the cache)
            assert_eq!(
                ask(&server, "127.0.0.2", "shop.example", tcp),
                "192.0.2.1",
                "round {round} tcp {tcp}"
            );
            // outside: hosts; never the inside's cache hit
            assert_eq!(
                ask(&server, "127.0.0.1", "shop.example", tcp),
                "203.0.113.7",
                "round {round} tcp {tcp}"
            );
            assert_eq!(ask(&server, "127.0.0.1", "other.example", tcp), "198.51.100.1");
        }
    }
    assert_eq!(
        stub.count(),
        1,
        "the inside's answer came from its cache after the first"
    );
    let outside = server.metric_sum("coredns_dns_requests_total", r#"view="outside""#);
    let inside = server.metric_sum("coredns_dns_requests_total", r#"view="""#);
    assert_eq!((outside, inside), (12.0, 6.0));
    assert!(server.log_contains("view=outside 127.0.0.1 shop.example."));
    // the inside block has no `log`: nothing of 127.0.0.2 is logged
    assert!(!server.log_contains("127.0.0.2 shop.example."));
}
