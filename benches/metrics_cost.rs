//! What metrics cost per query: the same query handled with the server
//! block's `coredns_dns_*` stats attached and without, on the fastest path
//! (a memoized cluster answer, where metrics are the largest share).
//!
//! `cargo bench --bench metrics_cost`
//!
//! Run without `--bench` (as `cargo test --all-targets` runs every bench
//! target, `test = false` or not), it handles each query a few times and
//! checks what the bench compares: both handlers write the same replies,
//! and only the one with stats counts them. Nothing is timed then.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use clusterdns::query::defer::Sink;
use clusterdns::query::{Handler, Scratch};
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

fn handler(with_stats: bool) -> Handler {
    clusterdns::fuzzing::demo_handler(Path::new(env!("CARGO_MANIFEST_DIR")), with_stats)
}

fn query(name: &str) -> Vec<u8> {
    let mut m = Message::new(7, MessageType::Query, OpCode::Query);
    m.add_query(Query::query(Name::from_ascii(name).expect("name"), RecordType::A));
    m.to_vec().expect("encode")
}

/// Nanoseconds per handled query.
fn run(h: &Handler, packets: &[Vec<u8>], n: usize) -> f64 {
    let peer: SocketAddr = "10.0.0.9:5353".parse().expect("addr");
    let mut scratch = Scratch::default();
    let sink = || Sink::None;
    let started = Instant::now();
    for i in 0..n {
        let p = &packets[i % packets.len()];
        std::hint::black_box(h.handle(
            p,
            peer,
            clusterdns::metrics::Transport::Udp,
            &mut scratch,
            &sink,
            started,
        ));
    }
    started.elapsed().as_nanos() as f64 / n as f64
}

/// The test mode: a few queries through both handlers, no clock read.
fn check(with: &Handler, without: &Handler, packets: &[Vec<u8>]) {
    let peer: SocketAddr = "10.0.0.9:5353".parse().expect("addr");
    let sink = || Sink::None;
    let rounds = 25;
    let (mut a, mut b) = (Scratch::default(), Scratch::default());
    for _ in 0..rounds {
        for p in packets {
            let udp = clusterdns::metrics::Transport::Udp;
            assert!(
                with.handle(p, peer, udp, &mut a, &sink, Instant::now()),
                "no reply with stats"
            );
            assert!(
                without.handle(p, peer, udp, &mut b, &sink, Instant::now()),
                "no reply without stats"
            );
            assert!(a.out.len() > 12, "a reply is a DNS message");
            assert_eq!(a.out, b.out, "both handlers answer alike: only the metrics differ");
        }
    }
    let handled = (rounds * packets.len()) as f64;
    let requests = |h: &Handler| -> f64 {
        h.metrics
            .render(true)
            .lines()
            .filter(|l| l.starts_with("coredns_dns_requests_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert_eq!(requests(with), handled, "every query counted with stats");
    assert_eq!(requests(without), 0.0, "nothing counted without");
    println!("metrics_cost (test mode): {handled} queries per handler, replies equal, counted only with stats");
}

fn main() {
    let packets: Vec<Vec<u8>> = [
        "kubernetes.default.svc.cluster.local.",
        "web.shop.svc.cluster.local.",
        "www.example.com.shop.svc.cluster.local.",
        "missing.default.svc.cluster.local.",
    ]
    .iter()
    .map(|n| query(n))
    .collect();
    let (with, without) = (handler(true), handler(false));
    if !std::env::args().any(|a| a == "--bench") {
        check(&with, &without, &packets);
        return;
    }
    let n = 2_000_000;
    run(&with, &packets, n / 10);
    run(&without, &packets, n / 10);
    let mut rows = Vec::new();
    for _ in 0..5 {
        rows.push((run(&without, &packets, n), run(&with, &packets, n)));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let plain = median(rows.iter().map(|r| r.0).collect());
    let counted = median(rows.iter().map(|r| r.1).collect());
    println!("memoized cluster answers, median of 5 runs of {n} queries:");
    println!("  without metrics {plain:.0} ns/query, with metrics {counted:.0} ns/query");
    println!(
        "  metrics cost {:.0} ns/query = {:.1}% of the per-query CPU",
        counted - plain,
        (counted - plain) / counted * 100.0
    );
}
