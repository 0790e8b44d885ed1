//! `loadtest merge` and the shared schedule: two halves of a step merge
//! into exactly the whole (to the bucket); four generators on one shared
//! schedule agree with one generator at the total rate; reports travel
//! through logs between markers; the pods profile reads the API.

use std::collections::VecDeque;
use std::net::UdpSocket;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use loadtest::capacity::{Row, Slo};
use loadtest::fakeapi::FakeApi;
use loadtest::merge::merge;
use loadtest::outcome::Outcome;
use loadtest::report::{self, Generator, Report};
use loadtest::schedule::unix_now;
use loadtest::synth::{self, Shape};

fn report_of(rows: Vec<Row>, generators: Vec<Generator>) -> Report {
    Report {
        target: "127.0.0.1:53".into(),
        workload: "test".into(),
        amplification: 1.0,
        slo: Slo {
            p99_ms: 5.0,
            max_loss: 0.001,
        },
        generators,
        rows,
    }
}

fn generator(index: usize, of: usize) -> Generator {
    Generator {
        index,
        of,
        host: format!("gen-{index}"),
        ..Generator::default()
    }
}

/// One step of `n` answers with latencies spread over 10 µs..20 ms, and
/// its two halves (even and odd answers), each half offering half the rate.
fn whole_and_halves(n: u64, rate: f64) -> (Row, Row, Row) {
    let mut o = [Outcome::default(), Outcome::default(), Outcome::default()];
    for i in 0..n {
        let us = (10 + (i * 7919) % 20_000) as f64;
        let rcode = [0, 0, 3, 3, 3, 2][(i % 6) as usize];
        o[0].record(us, rcode);
        o[1 + (i % 2) as usize].record(us, rcode);
    }
    let [whole, a, b] = o;
    let row = |mut o: Outcome, share: f64| {
        o.offered = rate * share;
        o.sent = o.answered + (share * 10.0) as u64;
        o.lost = (share * 10.0) as u64;
        o.seconds = 2.0;
        Row {
            label: String::new(),
            outcome: o,
            cpu_seconds: None,
            started: 1_700_000_000.0,
        }
    };
    (row(whole, 1.0), row(a, 0.5), row(b, 0.5))
}

#[test]
fn merged_halves_equal_the_whole_to_the_bucket() {
    let (w1, a1, b1) = whole_and_halves(20_000, 10_000.0);
    let (w2, a2, b2) = whole_and_halves(40_000, 20_000.0);
    let whole = report_of(vec![w1, w2], vec![generator(0, 1)]);
    let a = report_of(vec![a1, a2], vec![generator(0, 2)]);
    let b = report_of(vec![b1, b2], vec![generator(1, 2)]);
    // One half through a log (framed, with kubectl's --prefix), one as a file.
    let log: String = report::to_log(&report::json(&a, None))
        .lines()
        .map(|l| format!("[pod/gen-0/loadtest] {l}\n"))
        .collect();
    let mut reports = report::read(&format!("progress...\n{log}done\n")).expect("log");
    reports.extend(report::read(&report::json(&b, None).to_string()).expect("json"));
    let m = merge(&reports).expect("merge");
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    let (got, want) = (report::json(&m.report, m.knee), report::json(&whole, None));
    for (g, w) in got["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .zip(want["steps"].as_array().expect("steps"))
    {
        for key in [
            "histogram",
            "p50_ms",
            "p99_ms",
            "p999_ms",
            "mean_ms",
            "sent",
            "answered",
            "lost",
            "rcodes",
            "offered_qps",
        ] {
            assert_eq!(g[key], w[key], "{key}");
        }
        let (ga, wa) = (
            g["achieved_qps"].as_f64().expect("qps"),
            w["achieved_qps"].as_f64().expect("qps"),
        );
        assert!((ga - wa).abs() < 1e-6 * wa, "achieved {ga} vs {wa}");
    }
    assert_eq!(got["generators"].as_array().map(Vec::len), Some(2));
}

#[test]
fn merge_refuses_a_generator_twice_and_notes_what_is_missing() {
    let (_, a, b) = whole_and_halves(2000, 1000.0);
    let one = report_of(vec![a.clone()], vec![generator(1, 3)]);
    let err = merge(&[one.clone(), one.clone()]).expect_err("twice");
    assert!(err.contains("generator 1 of 3 is reported more than once"), "{err}");
    let longer = report_of(vec![b.clone(), b], vec![generator(0, 3)]);
    let m = merge(&[one, longer]).expect("merge");
    assert_eq!(m.report.rows.len(), 1, "only the steps every generator ran");
    let notes = m.notes.join("\n");
    assert!(notes.contains("2 of 3 generators reported (missing: 2)"), "{notes}");
    assert!(notes.contains("merged the first 1"), "{notes}");
    let mut slow = a;
    slow.outcome.seconds *= 1.5;
    let m = merge(&[report_of(vec![slow], vec![generator(0, 1)])]).expect("merge");
    assert!(
        m.notes
            .join("")
            .contains("generator 0 (gen-0) took 3.0 s to send a 2.0 s step"),
        "{:?}",
        m.notes
    );
    assert!(
        report::read("--- loadtest report begin ---\n{").is_err(),
        "a cut log is an error"
    );
}

/// A DNS responder that answers every query `delay` after it arrived, so
/// latency is the delay, large against this machine's scheduling noise.
fn delayed_responder(delay: Duration, seconds: u64) -> std::net::SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = sock.local_addr().expect("addr");
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(seconds);
        let mut queue: VecDeque<(Instant, Vec<u8>, std::net::SocketAddr)> = VecDeque::new();
        let mut buf = [0u8; 512];
        while Instant::now() < end {
            let wait = queue.front().map_or(Duration::from_millis(20), |q| {
                q.0.saturating_duration_since(Instant::now())
            });
            let _ = sock.set_read_timeout(Some(wait.max(Duration::from_micros(100))));
            if let Ok((n, peer)) = sock.recv_from(&mut buf) {
                let mut reply = buf[..n].to_vec();
                reply[2] |= 0x80;
                queue.push_back((Instant::now() + delay, reply, peer));
            }
            while queue.front().is_some_and(|q| q.0 <= Instant::now()) {
                if let Some((_, reply, peer)) = queue.pop_front() {
                    let _ = sock.send_to(&reply, peer);
                }
            }
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

fn loadtest(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_loadtest"));
    c.args(args);
    c
}

fn ok(out: Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    text
}

#[test]
fn four_generators_on_a_shared_schedule_agree_with_one() {
    let target = delayed_responder(Duration::from_millis(500), 30).to_string();
    let d = dir("merge4");
    std::fs::write(d.join("names.txt"), "a.example A\nb.example AAAA\n").expect("names");
    let names = d.join("names.txt").display().to_string();
    // Low rates, so no generator has to spin between sends and the five
    // processes do not compete for this machine's two cores.
    let common = [
        "run",
        "--target",
        &target,
        "--names",
        &names,
        "--rate",
        "400",
        "--step-duration",
        "1.5",
    ];
    let single = d.join("single").display().to_string();
    ok(loadtest(&common).args(["--out", &single]).output().expect("single"));
    let start = format!("{:.3}", unix_now() + 2.5);
    let generators: Vec<_> = (0..4)
        .map(|i| {
            let mut c = loadtest(&common);
            c.args(["--of", "4", "--start-at", &start, "--log-report"]);
            // Two as an Indexed Job's pods are told, two by flag.
            if i < 2 {
                c.env("JOB_COMPLETION_INDEX", i.to_string());
            } else {
                c.args(["--index", &i.to_string()]);
            }
            c.stdout(std::process::Stdio::piped()).spawn().expect("generator")
        })
        .collect();
    let mut logs = Vec::new();
    for (i, g) in generators.into_iter().enumerate() {
        let log = d.join(format!("gen-{i}.log"));
        std::fs::write(&log, ok(g.wait_with_output().expect("wait"))).expect("log");
        logs.push(log.display().to_string());
    }
    let merged = d.join("merged").display().to_string();
    let mut args = vec!["merge"];
    args.extend(logs.iter().map(String::as_str));
    args.extend(["--out", &merged]);
    let text = ok(loadtest(&args).output().expect("merge"));
    assert!(text.contains("4 reports from 4 file(s), 4 generators"), "{text}");
    assert!(
        !text.contains("note:"),
        "steps started together, every generator reported:\n{text}"
    );
    let read = |p: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{p}.json")).expect("read")).expect("json")
    };
    let (one, four) = (read(&single)["steps"][0].clone(), read(&merged)["steps"][0].clone());
    assert_eq!(four["offered_qps"], 400.0, "{four}");
    assert_eq!(four["sent"], one["sent"], "the same number of queries in all");
    for key in ["achieved_qps", "p99_ms"] {
        let (a, b) = (one[key].as_f64().expect(key), four[key].as_f64().expect(key));
        assert!(
            (a - b).abs() <= 0.1 * a,
            "{key}: one generator {a}, four merged {b}\n{text}"
        );
    }
    let svg = std::fs::read_to_string(format!("{merged}.svg")).expect("svg");
    assert!(svg.contains("4 generators merged") && svg.contains("polyline"));
}

#[test]
fn the_pods_profile_reads_the_services_through_the_api() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = rt.block_on(FakeApi::start()).expect("fake API");
    let shape = Shape {
        namespaces: 3,
        services: 30,
        endpoints: 1,
    };
    synth::populate(&api, &shape);
    let d = dir("api");
    let kubeconfig = d.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: \"{}\"}}}}]\nusers: [{{name: me, user: {{}}}}]\ncontexts: [{{name: fake, context: {{cluster: fake, user: me}}}}]\ncurrent-context: fake\n",
            api.url()
        ),
    )
    .expect("kubeconfig");
    let target = delayed_responder(Duration::from_millis(1), 10).to_string();
    let out = loadtest(&[
        "run",
        "--target",
        &target,
        "--pods",
        "--services-from",
        "api",
        "--lookups",
        "500",
    ])
    .args(["--rate", "200", "--step-duration", "0.5", "--log-report"])
    .env("KUBECONFIG", &kubeconfig)
    .output()
    .expect("run");
    let text = ok(out);
    assert!(
        text.contains("500 lookups over 30 Services in 3 namespaces of the Kubernetes API"),
        "{text}"
    );
    let reports = report::read(&text).expect("the framed report");
    assert_eq!(reports[0].rows[0].outcome.sent, 100);
    assert_eq!(reports[0].generators[0].of, 1);
}
