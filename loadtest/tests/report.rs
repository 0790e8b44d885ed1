//! `loadtest run` and `loadtest plan` as an operator runs them: against a
//! responder on loopback, producing the table, the JSON and the SVG; and a
//! plan from a /metrics page scraped twice.

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Answers every query at once: QR set, NOERROR (NXDOMAIN for names starting with "nx").
fn responder() -> std::net::SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = sock.local_addr().expect("addr");
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        for _ in 0..10_000_000 {
            let Ok((n, peer)) = sock.recv_from(&mut buf) else {
                return;
            };
            if n < 13 {
                continue;
            }
            buf[2] |= 0x80;
            buf[3] = if &buf[13..15] == b"nx" { 3 } else { 0 };
            let _ = sock.send_to(&buf[..n], peer);
        }
    });
    addr
}

fn dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("loadtest-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

#[test]
fn a_ramp_produces_the_table_the_json_and_the_svg() {
    let target = responder();
    let d = dir("report");
    std::fs::write(
        d.join("names.txt"),
        "web.shop.svc.cluster.local A\nnx.example.com AAAA\n",
    )
    .expect("names");
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args(["run", "--target", &target.to_string(), "--names"])
        .arg(d.join("names.txt"))
        .args([
            "--rate",
            "2000",
            "--ramp",
            "1x..2x",
            "--steps",
            "2",
            "--step-duration",
            "1",
            // An objective no loaded CI machine misses (a starved
            // responder drops datagrams, and loss is timing, not a
            // property): the knee is then the last step.
            "--slo-ms",
            "1000",
            "--max-loss",
            "1",
            "--out",
        ])
        .arg(d.join("r"))
        .output()
        .expect("run loadtest");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<&str> = text.lines().filter(|l| l.contains('%')).collect();
    assert_eq!(rows.len(), 2, "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).expect("json")).expect("parse");
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["offered_qps"], 2000.0);
    // Counted exactly, whatever this machine's load: every query sent
    // (open loop), each answered or lost, the rcodes those of the answers.
    for (step, want) in steps.iter().zip([2000, 4000]) {
        let count = |key: &str| step[key].as_u64().unwrap_or_else(|| panic!("{key}: {step}"));
        assert_eq!(count("sent"), want, "{step}");
        assert_eq!(count("answered") + count("lost"), want, "{step}");
        let (ok, nx) = (&step["rcodes"]["NOERROR"], &step["rcodes"]["NXDOMAIN"]);
        assert_eq!(
            ok.as_u64().unwrap_or(0) + nx.as_u64().unwrap_or(0),
            count("answered"),
            "{step}"
        );
    }
    let nx = steps[1]["rcodes"]["NXDOMAIN"].as_u64().unwrap_or(0);
    assert!(
        rows[1].contains("<- knee") && rows[1].contains(&format!("NXDOMAIN:{nx}")),
        "{text}"
    );
    // Latency is measured and ordered; its size is the machine's.
    let (p50, p99) = (
        steps[1]["p50_ms"].as_f64().expect("p50"),
        steps[1]["p99_ms"].as_f64().expect("p99"),
    );
    assert!(p50 > 0.0 && p50 <= p99, "p50 {p50} p99 {p99}");
    assert_eq!(report["knee"]["offered_qps"], 4000.0);
    let svg = std::fs::read_to_string(d.join("r.svg")).expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("knee 4000 qps") && svg.contains("polyline"));
}

#[test]
fn plan_turns_two_scrapes_and_a_knee_into_replicas() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/metrics", listener.local_addr().expect("addr"));
    let scrapes = Arc::new(AtomicU64::new(0));
    let counter = scrapes.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let Ok(mut s) = stream else { continue };
            let mut req = [0u8; 1024];
            let _ = s.read(&mut req);
            // 1 s apart in the test: +60,000 A, +20,000 AAAA, 30,000 of them expansions
            let k = counter.fetch_add(1, Ordering::Relaxed) as f64;
            let body = format!(
                "coredns_dns_requests_total{{server=\"dns://:53\",zone=\".\",view=\"\",proto=\"udp\",family=\"1\",type=\"A\"}} {}\ncoredns_dns_requests_total{{server=\"dns://:53\",zone=\".\",view=\"\",proto=\"udp\",family=\"1\",type=\"AAAA\"}} {}\ncoredns_dns_responses_total{{server=\"dns://:53\",zone=\".\",view=\"\",rcode=\"NXDOMAIN\",plugin=\"kubernetes\"}} {}\nclusterdns_search_expansion_nxdomain_total{{server=\"dns://:53\",zone=\".\",view=\"\",suffix=\"namespace\"}} {}\n",
                1e6 + k * 60_000.0,
                5e5 + k * 20_000.0,
                1e5 + k * 30_000.0,
                1e5 + k * 30_000.0
            );
            let _ = write!(s, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n{body}");
        }
    });
    let d = dir("plan");
    std::fs::write(d.join("cap.json"), r#"{"knee": {"achieved_qps": 100000.0}}"#).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args(["plan", "--metrics", &url, "--interval", "1", "--capacity"])
        .arg(d.join("cap.json"))
        .output()
        .expect("run plan");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // about 80,000 qps; 50% headroom of a 100,000 qps replica → 2, 4, 8
    assert!(text.contains("search-path expansions: 3"), "{text}");
    for want in ["1x growth", "2x growth", "5x growth"] {
        assert!(text.contains(want), "{text}");
    }
    let replicas: Vec<u64> = text
        .lines()
        .filter(|l| l.contains("growth"))
        .filter_map(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(replicas, [2, 4, 8], "{text}");
}
