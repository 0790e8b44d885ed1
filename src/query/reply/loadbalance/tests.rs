//! The draw of `loadbalance weighted`, with the random number fixed (the
//! rows of CoreDNS's TestLoadBalanceWRR).

use std::path::PathBuf;
use std::time::Duration;

use super::draw;
use crate::query::plugins::template::parse_rr;
use crate::query::reply::loadbalance::weights::Weights;

fn weights(text: &str) -> std::sync::Arc<Weights> {
    let dir = std::env::temp_dir().join(format!("clusterdns-weights-{}", fastrand::u64(..)));
    std::fs::create_dir_all(&dir).expect("dir");
    let file: PathBuf = dir.join("w");
    std::fs::write(&file, text).expect("write");
    let w = Weights::load(file, Duration::ZERO).expect("loads");
    let _ = std::fs::remove_dir_all(&dir);
    w
}

#[test]
fn the_draw_falls_into_the_heaviest_first() {
    let w = weights(
        "endpoint.region2.skydns.test\n10.240.0.2 5\n10.240.0.1 2\n\
         endpoint.region1.skydns.test\n::2 4\n::1 3\n",
    );
    let addrs: Vec<_> = [
        "endpoint.region2.skydns.test. 300 IN A 10.240.0.1",
        "endpoint.region2.skydns.test. 300 IN A 10.240.0.2",
        "endpoint.region2.skydns.test. 300 IN A 10.240.0.3",
        "endpoint.region1.skydns.test. 300 IN AAAA ::1",
        "endpoint.region1.skydns.test. 300 IN AAAA ::2",
    ]
    .iter()
    .map(|t| parse_rr(t).expect("rr"))
    .collect();
    // TestLoadBalanceWRR row 0: (random value, top address); the sum is 15.
    for (v, top) in [
        (0, 1),
        (4, 1),
        (5, 4),
        (8, 4),
        (9, 3),
        (11, 3),
        (12, 0),
        (13, 0),
        (14, 2),
    ] {
        let got = draw(&addrs, &w, |limit| {
            assert_eq!(limit, 15);
            v
        });
        assert_eq!(got, Some(top), "random {v}");
    }
}
