//! Cache hits replayed as bytes (`src/query/forward/hits.rs`), end to end:
//! the real binary forwarding to a second clusterdns serving a `file`
//! zone. Each worker answers a hit the first time through the full path and
//! from then on by patching the bytes it wrote, so every test sends enough
//! repeats for every worker to replay, and checks what clients see: the
//! same answer with the TTLs counted down, the client's ID and spelling,
//! the metrics of a hit, a prefetch, stale answers, `loadbalance`,
//! truncation, and behind `hosts` the end of replays when its file takes
//! the name. Every reply must parse strictly.

mod common;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clusterdns::fuzzing::parse_strict;
use common::dig::ask;
use common::stub::Stub;
use common::{query, temp_dir, udp_raw, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::{Record, RecordType};

/// Repeats sent so that every UDP worker has learned and replayed a hit.
const REPEATS: usize = 12;
/// The ceiling of a wait for an event: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

/// The upstream: a clusterdns serving example.org from a zone file.
fn upstream(dir: &Path) -> Server {
    let mut zone = String::from(
        "$ORIGIN example.org.\n$TTL 300\n@ IN SOA ns hostmaster 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.53\n\
         www IN A 192.0.2.1\nwww IN A 192.0.2.2\nwww IN A 192.0.2.3\nshort 10 IN A 192.0.2.9\n",
    );
    for k in 1..=40 {
        let _ = writeln!(zone, "many IN A 198.51.100.{k}");
    }
    std::fs::write(dir.join("example.org.db"), zone).expect("zone");
    let conf = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    file {} example.org\n}}\n",
        dir.join("example.org.db").display()
    );
    Server::start(dir, &conf)
}

/// The server under test: `forward` to `up` behind `cache` with `extra`.
fn front(dir: &Path, up: SocketAddr, cache: &str, extra: &str) -> Server {
    let conf = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    forward . {up} {{\n        read_timeout 300ms\n    }}\n    {cache}\n    {extra}\n}}\n"
    );
    Server::start(dir, &conf)
}

fn dirs(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = temp_dir(tag);
    let (u, f) = (dir.join("up"), dir.join("front"));
    std::fs::create_dir_all(&u).expect("dir");
    std::fs::create_dir_all(&f).expect("dir");
    (u, f)
}

/// One raw UDP query with `id` and an optional EDNS payload, parsed strictly.
fn ask_raw(server: &Server, id: u16, name: &str, qtype: RecordType, edns: Option<u16>) -> (Vec<u8>, Message) {
    let bytes = udp_raw(server.dns, &query(id, name, qtype, edns)).expect("a reply");
    let parsed = parse_strict(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    (bytes, parsed)
}

/// Every record but OPT, TTLs zeroed: what must not change between hits.
fn without_ttls(m: &Message) -> Vec<Record> {
    m.answers
        .iter()
        .chain(&m.authorities)
        .chain(m.additionals.iter().filter(|r| r.record_type() != RecordType::OPT))
        .map(|r| {
            let mut r = r.clone();
            r.ttl = 0;
            r
        })
        .collect()
}

fn ttls(m: &Message) -> Vec<u32> {
    m.answers
        .iter()
        .chain(&m.authorities)
        .chain(m.additionals.iter().filter(|r| r.record_type() != RecordType::OPT))
        .map(|r| r.ttl)
        .collect()
}

#[test]
fn hits_are_the_same_answer_with_ttls_counted_down_the_clients_id_and_spelling() {
    let (u, f) = dirs("hits-same");
    let up = upstream(&u);
    let server = front(&f, up.dns, "cache 30", "");
    for (name, rcode) in [("www.example.org.", "NOERROR"), ("nx.example.org.", "NXDOMAIN")] {
        let cached = Instant::now();
        let (_, first) = ask_raw(&server, 1, name, RecordType::A, Some(1232));
        assert_eq!(common::rcode_name(&first), rcode, "{name}");
        assert!(
            ttls(&first).iter().all(|t| *t == 30),
            "capped by `cache 30`: {:?}",
            ttls(&first)
        );
        for id in 0..REPEATS as u16 {
            let (_, m) = ask_raw(&server, 100 + id, name, RecordType::A, Some(1232));
            assert_eq!(m.metadata.id, 100 + id, "the client's ID");
            assert_eq!(without_ttls(&m), without_ttls(&first));
        }
        std::thread::sleep(Duration::from_millis(1100));
        for id in 0..REPEATS as u16 {
            let (_, m) = ask_raw(&server, 200 + id, name, RecordType::A, Some(1232));
            assert_eq!(m.metadata.id, 200 + id);
            assert_eq!(without_ttls(&m), without_ttls(&first), "{name}: the same records");
            assert_eq!(
                m.metadata,
                {
                    // A hit carries AA, as CoreDNS's cache sets it (item.toMsg).
                    let mut h = first.metadata;
                    (h.id, h.authoritative) = (200 + id, true);
                    h
                },
                "the same flags, AA set"
            );
            // counted down by the seconds gone since the entry was stored
            // (at least the pause; as many more as the machine took)
            let aged = cached.elapsed().as_secs() as u32;
            let t = ttls(&m);
            assert!(
                !t.is_empty() && t.iter().all(|t| *t < 30 && *t >= 30u32.saturating_sub(aged + 1)),
                "{name}: every TTL counted down by at most {aged} s: {t:?}"
            );
            assert_eq!(m.edns.as_ref().map(|e| e.max_payload()), Some(1232), "OPT untouched");
        }
    }
    // the spelling of the question, as dig prints it, and RD/CD echoed
    for _ in 0..REPEATS {
        let d = ask("dig", "127.0.0.1", &server.port(), &["WwW.ExAmple.ORG", "A"]);
        assert_eq!(d.status, "NOERROR");
        assert!(d.question.starts_with(";WwW.ExAmple.ORG."), "{}", d.question);
        assert_eq!(d.data(), ["192.0.2.1", "192.0.2.2", "192.0.2.3"]);
        assert!(d.flags.split(' ').any(|f| f == "rd"), "{}", d.flags);
        let d = ask(
            "dig",
            "127.0.0.1",
            &server.port(),
            &["+norecurse", "+cdflag", "www.example.org", "A"],
        );
        assert!(!d.flags.split(' ').any(|f| f == "rd"), "{}", d.flags);
        assert!(d.flags.split(' ').any(|f| f == "cd"), "{}", d.flags);
    }
}

#[test]
fn replayed_hits_count_as_hits_in_every_metric() {
    let (u, f) = dirs("hits-metrics");
    let up = upstream(&u);
    let server = front(&f, up.dns, "cache 30", "");
    let family = |f: &str, having: &str| server.metric_sum(f, having);
    ask_raw(&server, 1, "www.example.org.", RecordType::A, None);
    ask_raw(&server, 2, "nx.example.org.", RecordType::A, None);
    let before = (
        family("coredns_cache_requests_total", ""),
        family("coredns_cache_misses_total", ""),
        family("coredns_cache_hits_total", "type=\"success\""),
        family("coredns_cache_hits_total", "type=\"denial\""),
        family("coredns_dns_requests_total", ""),
        family("coredns_dns_responses_total", "plugin=\"cache\""),
        family("coredns_dns_responses_total", "rcode=\"NXDOMAIN\""),
    );
    assert_eq!((before.0, before.1, before.2 + before.3), (2.0, 2.0, 0.0));
    for id in 0..REPEATS as u16 {
        ask_raw(&server, id, "www.example.org.", RecordType::A, None);
        ask_raw(&server, id, "nx.example.org.", RecordType::A, None);
    }
    let n = REPEATS as f64;
    assert_eq!(family("coredns_cache_requests_total", ""), before.0 + 2.0 * n);
    assert_eq!(family("coredns_cache_misses_total", ""), before.1);
    assert_eq!(family("coredns_cache_hits_total", "type=\"success\""), before.2 + n);
    assert_eq!(family("coredns_cache_hits_total", "type=\"denial\""), before.3 + n);
    assert_eq!(family("coredns_dns_requests_total", ""), before.4 + 2.0 * n);
    assert_eq!(
        family("coredns_dns_responses_total", "plugin=\"cache\""),
        before.5 + 2.0 * n
    );
    assert_eq!(
        family("coredns_dns_responses_total", "rcode=\"NXDOMAIN\""),
        before.6 + n
    );
    assert_eq!(
        family("coredns_dns_request_duration_seconds_count", ""),
        before.4 + 2.0 * n,
        "every replay timed"
    );
}

/// The prefetch is decided by counts, not by how fast the machine is: it
/// needs 2 × REPEATS + 2 hits, which the first two batches of REPEATS do
/// not reach whenever they come; after a pause (a lower bound) the entry
/// has less than 99% of its 100 s left, and the second hit after the two
/// batches refreshes it. The upstream answers the refresh with another
/// TTL, so an answer carrying that TTL can only come from the refreshed
/// entry (whose own hits stay below the count to the end).
#[test]
fn replayed_hits_still_trigger_one_prefetch() {
    let (_, f) = dirs("hits-prefetch");
    let up = Stub::start();
    up.ttl.store(100, Ordering::Relaxed);
    let prefetch = format!("cache {{\n        prefetch {} 10m 99%\n    }}", 2 * REPEATS + 2);
    let server = front(&f, up.addr, &prefetch, "");
    let name = "short.example.org.";
    ask_raw(&server, 1, name, RecordType::A, None);
    for id in 0..REPEATS as u16 {
        ask_raw(&server, id, name, RecordType::A, None);
    }
    assert_eq!(up.count(), 1);
    assert_eq!(server.metric_sum("coredns_cache_prefetch_total", ""), 0.0);
    up.ttl.store(300, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(1200)); // 98 s of 100 left: under 99%
    for id in 0..REPEATS as u16 {
        let (_, m) = ask_raw(&server, id, name, RecordType::A, None);
        assert_eq!(m.answers.len(), 1);
        assert!(m.answers[0].ttl <= 100, "{:?}", ttls(&m));
    }
    let refreshed = || {
        let (_, m) = ask_raw(&server, 99, name, RecordType::A, None);
        m.answers.first().is_some_and(|r| r.ttl > 100)
    };
    let started = Instant::now();
    // each poll is a hit: the second one reaches the count
    while !(refreshed() && up.count() >= 2) && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(up.count(), 2, "one prefetch went upstream");
    assert_eq!(server.metric_sum("coredns_cache_prefetch_total", ""), 1.0);
    // the refreshed entry is served (the upstream's new TTL), still from bytes
    for id in 0..REPEATS as u16 {
        let (_, m) = ask_raw(&server, id, name, RecordType::A, None);
        assert!(m.answers[0].ttl > 100, "{:?}", ttls(&m));
    }
    assert_eq!(up.count(), 2);
}

#[test]
fn a_stale_entry_is_served_when_the_upstream_is_gone() {
    let (u, f) = dirs("hits-stale");
    let up = upstream(&u);
    let cache = "cache {\n        success 100 1 1\n        serve_stale 1h\n    }";
    let server = front(&f, up.dns, cache, "");
    for id in 0..REPEATS as u16 {
        let (_, m) = ask_raw(&server, id, "www.example.org.", RecordType::A, None);
        assert_eq!(m.answers.len(), 3);
    }
    drop(up);
    std::thread::sleep(Duration::from_millis(1500));
    for id in 0..REPEATS as u16 {
        let (_, m) = ask_raw(&server, id, "www.example.org.", RecordType::A, None);
        assert_eq!(common::rcode_name(&m), "NOERROR");
        assert_eq!(m.answers.len(), 3);
        let stale = ttls(&m); // the answer's three, and the upstream zone's NS in authority
        assert!(
            stale.len() >= 3 && stale.iter().all(|t| *t == 0),
            "stale: TTL 0: {stale:?}"
        );
    }
    assert!(server.metric_sum("coredns_cache_served_stale_total", "") >= REPEATS as f64);
}

#[test]
fn loadbalance_still_rotates_replayed_addresses() {
    let (u, f) = dirs("hits-lb");
    let up = upstream(&u);
    let server = front(&f, up.dns, "cache 30", "loadbalance");
    let mut orders = std::collections::HashSet::new();
    for id in 0..4 * REPEATS as u16 {
        let (_, m) = ask_raw(&server, id, "www.example.org.", RecordType::A, None);
        let order: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, ["192.0.2.1", "192.0.2.2", "192.0.2.3"]);
        orders.insert(order);
    }
    assert!(orders.len() >= 3, "orders seen: {orders:?}");
}

#[test]
fn truncation_follows_each_clients_limit() {
    let (u, f) = dirs("hits-tc");
    let up = upstream(&u);
    let server = front(&f, up.dns, "cache 30", "");
    for round in 0..REPEATS as u16 {
        let (small, m) = ask_raw(&server, round, "many.example.org.", RecordType::A, None);
        assert!(m.metadata.truncation && small.len() <= 512, "no EDNS: truncated to 512");
        let (big, m) = ask_raw(&server, round, "many.example.org.", RecordType::A, Some(1232));
        assert!(!m.metadata.truncation && big.len() > 512, "EDNS 1232: whole");
        assert_eq!(m.answers.len(), 40);
        let m = common::tcp(server.dns, "many.example.org.", RecordType::A);
        assert_eq!(m.answers.len(), 40, "TCP: whole");
    }
}

#[test]
fn behind_hosts_a_reload_that_takes_the_name_ends_its_replays() {
    let (u, f) = dirs("hits-hosts");
    let up = upstream(&u);
    let hosts = f.join("hosts");
    std::fs::write(&hosts, "192.0.2.99 other.example.org\n").expect("hosts");
    let extra = format!(
        "hosts {} {{\n        reload 100ms\n        fallthrough\n    }}",
        hosts.display()
    );
    let server = front(&f, up.dns, "cache 30", &extra);
    for id in 0..REPEATS as u16 {
        let (_, m) = ask_raw(&server, id, "www.example.org.", RecordType::A, None);
        assert_eq!(m.answers.len(), 3, "the upstream's, through the cache");
    }
    let hits = server.metric_sum("coredns_cache_hits_total", "");
    assert_eq!(hits, (REPEATS - 1) as f64, "every repeat a hit");
    std::fs::write(&hosts, "192.0.2.99 other.example.org\n10.1.2.3 www.example.org\n").expect("hosts");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, m) = ask_raw(&server, 100, "www.example.org.", RecordType::A, None);
        if m.answers.len() == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the cached answer outlived the hosts reload");
        std::thread::sleep(Duration::from_millis(50));
    }
    for id in 0..REPEATS as u16 {
        let (_, m) = ask_raw(&server, id, "www.example.org.", RecordType::A, None);
        let data: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
        assert_eq!(data, ["10.1.2.3"], "every worker answers from hosts now");
    }
}
