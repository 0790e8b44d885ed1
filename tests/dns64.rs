//! `dns64` end to end with dig over IPv6 and IPv4: AAAA synthesized from
//! A for cluster names, hosts entries and forwarded names (through the
//! stub upstream, which has A records and no AAAA).

mod common;

use common::dig::{dig_at as dig, Dig as Reply};
use common::stub::Stub;
use common::{free_port, temp_dir, Server};

/// A server on `port` for 127.0.0.1 and ::1: the demo cluster, hosts
/// entries, `forward` to `stub` and `cache`, with the default `dns64`; a
/// second block (`alt.test`) has `dns64 64:1337::/96`.
fn start(tag: &str, port: u16, stub: &Stub) -> Server {
    let text = format!(
        "\
.:{port} {{
    bind 127.0.0.1 ::1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    hosts {{
        192.0.2.7 v4only.hosts.test
        192.0.2.8 dual.hosts.test
        2001:db8::8 dual.hosts.test
        fallthrough
    }}
    dns64
    kubernetes cluster.local {{
        snapshot {}
    }}
    forward . {}
    cache 30
}}
alt.test:{port} {{
    bind 127.0.0.1 ::1
    hosts {{
        192.0.2.9 a.alt.test
    }}
    dns64 64:1337::/96
}}
",
        common::demo_cluster().display(),
        stub.addr
    );
    Server::start(&temp_dir(tag), &text)
}

/// Whether this machine has an IPv6 loopback (the IPv6-client tests need it).
fn ipv6_loopback() -> bool {
    let up = std::net::UdpSocket::bind("[::1]:0").map_err(|e| format!("no IPv6 loopback (::1): {e}"));
    let fix = "enable IPv6 on lo (sysctl -w net.ipv6.conf.lo.disable_ipv6=0)";
    common::needs("dns64's IPv6-client checks", up, fix).is_some()
}

fn v6(port: u16, args: &[&str]) -> Reply {
    dig("::1", port, args)
}

fn v4(port: u16, args: &[&str]) -> Reply {
    dig("127.0.0.1", port, args)
}

#[test]
fn aaaa_is_synthesized_for_ipv6_clients_only() {
    if !ipv6_loopback() {
        return;
    }
    let stub = Stub::start();
    let port = free_port();
    let _server = start("dns64", port, &stub);
    // a v4 client first: its NODATA must not be replayed to the v6 client
    let plain = v4(port, &["kubernetes.default.svc.cluster.local", "AAAA"]);
    assert_eq!(
        (plain.status.as_str(), plain.answers.len()),
        ("NOERROR", 0),
        "{plain:?}"
    );
    let cluster = v6(port, &["kubernetes.default.svc.cluster.local", "AAAA"]);
    assert_eq!(
        cluster.answers,
        ["kubernetes.default.svc.cluster.local. 5 IN AAAA 64:ff9b::a60:1"],
        "10.96.0.1 under 64:ff9b::/96: {cluster:?}"
    );
    let again = v4(port, &["kubernetes.default.svc.cluster.local", "AAAA"]);
    assert_eq!(
        again.answers.len(),
        0,
        "and the v6 answer is not replayed to v4 clients"
    );
    // a name with its own AAAA keeps it; a missing name stays NXDOMAIN
    let dual = v6(port, &["web.shop.svc.cluster.local", "AAAA"]);
    assert!(dual.data().iter().all(|a| !a.starts_with("64:ff9b")), "{dual:?}");
    assert_eq!(dual.answers.len(), 1);
    assert_eq!(v6(port, &["nosuch.shop.svc.cluster.local", "AAAA"]).status, "NXDOMAIN");
    // hosts entries
    assert_eq!(v6(port, &["v4only.hosts.test", "AAAA"]).data(), ["64:ff9b::c000:207"]);
    assert_eq!(v6(port, &["dual.hosts.test", "AAAA"]).data(), ["2001:db8::8"]);
    // A questions are untouched
    assert_eq!(v6(port, &["v4only.hosts.test", "A"]).data(), ["192.0.2.7"]);
    // the PREFIX argument of another block
    assert_eq!(v6(port, &["a.alt.test", "AAAA"]).data(), ["64:1337::c000:209"]);
    assert_eq!(v4(port, &["a.alt.test", "AAAA"]).answers.len(), 0);
}

#[test]
fn forwarded_names_are_translated_after_a_second_lookup() {
    if !ipv6_loopback() {
        return;
    }
    let stub = Stub::start();
    let port = free_port();
    let server = start("dns64-forward", port, &stub);
    let www = v6(port, &["www.example.com", "AAAA"]);
    assert_eq!(www.status, "NOERROR", "{www:?}");
    assert_eq!(
        www.answers,
        ["www.example.com. 60 IN AAAA 64:ff9b::c000:201"],
        "the upstream's A 192.0.2.1 (TTL 60, under the 600 s cap without an SOA)"
    );
    let asked = stub.count();
    assert!(asked >= 2, "AAAA then A went upstream: {asked}");
    // again: the AAAA NODATA (no SOA, so not cached) goes upstream, the A comes from the cache
    assert_eq!(v6(port, &["www.example.com", "AAAA"]).data(), ["64:ff9b::c000:201"]);
    assert_eq!(stub.count(), asked + 1, "only the AAAA question went upstream again");
    // over TCP too
    assert_eq!(
        v6(port, &["+tcp", "tcp.example.com", "AAAA"]).data(),
        ["64:ff9b::c000:201"]
    );
    // NXDOMAIN is not translated; IPv4 clients get the upstream's empty answer
    assert_eq!(v6(port, &["nx.example.com", "AAAA"]).status, "NXDOMAIN");
    let v4_client = v4(port, &["other.example.com", "AAAA"]);
    assert_eq!((v4_client.status.as_str(), v4_client.answers.len()), ("NOERROR", 0));
    let translated = server.metric(&format!(
        "coredns_dns64_requests_translated_total{{server=\"dns://127.0.0.1:{port}\"}}"
    ));
    assert_eq!(translated, 3.0, "three translated replies");
}

#[test]
fn prefix_translate_all_and_allow_ipv4() {
    let port = free_port();
    let text = format!(
        "\
.:{port} {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    dns64 {{
        prefix 2001:db8:64::/48
        translate_all
        allow_ipv4
    }}
    kubernetes cluster.local {{
        snapshot {}
    }}
}}
",
        common::demo_cluster().display()
    );
    let server = Server::start(&temp_dir("dns64-options"), &text);
    // allow_ipv4: an IPv4 client gets the synthesis; /48 puts 10.96 before the u octet
    let r = v4(port, &["kubernetes.default.svc.cluster.local", "AAAA"]);
    assert_eq!(r.data(), ["2001:db8:64:a60:0:100::"], "{r:?}");
    // translate_all: a name with its own AAAA gets the synthesized ones instead
    let own = v4(port, &["web.shop.svc.cluster.local", "A"]).data();
    let all = v4(port, &["web.shop.svc.cluster.local", "AAAA"]).data();
    assert_eq!(own.len(), all.len(), "{own:?} {all:?}");
    assert!(all.iter().all(|a| a.starts_with("2001:db8:64:")), "{all:?}");
    // a repeated question is translated (and counted) again, not replayed
    assert_eq!(
        v4(port, &["kubernetes.default.svc.cluster.local", "AAAA"]).data(),
        r.data()
    );
    let series = format!("coredns_dns64_requests_translated_total{{server=\"dns://127.0.0.1:{port}\"}}");
    assert_eq!(server.metric(&series), 3.0);
}
