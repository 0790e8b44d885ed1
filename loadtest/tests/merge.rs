//! `loadtest merge` and the shared schedule: two halves of a step merge
//! into exactly the whole (to the bucket); four generators on one shared
//! schedule send one generator's queries and merge exactly; reports
//! travel through logs between markers; the pods profile reads the API.
//! No test here compares timings (`loadtest/bench/merge-vs-single.sh`
//! does, on a quiet machine).

use std::net::UdpSocket;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
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

/// Every question a responder was asked (name as sent, type, class).
type Asked = Arc<Mutex<Vec<Vec<u8>>>>;

/// A DNS responder that answers every query at once (its ID, question and
/// NOERROR) for `seconds`, keeping each query's question in order.
fn responder(seconds: u64) -> (std::net::SocketAddr, Asked) {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = sock.local_addr().expect("addr");
    let asked = Asked::default();
    let keep = asked.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(seconds);
        let mut buf = [0u8; 512];
        let _ = sock.set_read_timeout(Some(Duration::from_millis(50)));
        while Instant::now() < end {
            let Ok((n, peer)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let question = buf.get(12..n).map(|q| {
                let name = q.iter().position(|b| *b == 0).map_or(q.len(), |z| z + 1);
                q[..(name + 4).min(q.len())].to_vec()
            });
            if let (Some(q), Ok(mut all)) = (question, keep.lock()) {
                all.push(q);
            }
            let mut reply = buf[..n].to_vec();
            reply[2] |= 0x80;
            let _ = sock.send_to(&reply, peer);
        }
    });
    (addr, asked)
}

/// The questions asked, sorted (the multiset, whoever sent them).
fn sorted(asked: &Asked) -> Vec<Vec<u8>> {
    let mut all = asked.lock().map(|a| a.clone()).unwrap_or_default();
    all.sort();
    all
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

/// Runs `loadtest run` as four generators of one shared schedule against
/// `target` and merges their logs; the four reports and the merged one.
fn four_generators(d: &std::path::Path, run: &[&str]) -> (Vec<Report>, Report, String) {
    let start = unix_now() + 2.5;
    let at = format!("{start:.3}");
    let generators: Vec<_> = (0..4)
        .map(|i| {
            let mut c = loadtest(run);
            c.args(["--of", "4", "--start-at", &at, "--log-report"]);
            // Two as an Indexed Job's pods are told, two by flag.
            if i < 2 {
                c.env("JOB_COMPLETION_INDEX", i.to_string());
            } else {
                c.args(["--index", &i.to_string()]);
            }
            c.stdout(std::process::Stdio::piped()).spawn().expect("generator")
        })
        .collect();
    let (mut logs, mut reports) = (Vec::new(), Vec::new());
    for (i, g) in generators.into_iter().enumerate() {
        let log = d.join(format!("gen-{i}.log"));
        let text = ok(g.wait_with_output().expect("wait"));
        reports.extend(report::read(&text).expect("a framed report"));
        std::fs::write(&log, text).expect("log");
        logs.push(log.display().to_string());
    }
    let merged = d.join("merged").display().to_string();
    let mut args = vec!["merge"];
    args.extend(logs.iter().map(String::as_str));
    args.extend(["--out", &merged]);
    let text = ok(loadtest(&args).output().expect("merge"));
    let json = std::fs::read_to_string(format!("{merged}.json")).expect("merged json");
    let one = report::read(&json).expect("merged report").remove(0);
    let svg = std::fs::read_to_string(format!("{merged}.svg")).expect("svg");
    assert!(svg.contains("4 generators merged") && svg.contains("polyline"));
    assert!(reports
        .iter()
        .all(|r| r.generators[0].start_at == Some(at.parse().expect("at"))));
    (reports, one, text)
}

/// What a merge of four generators must give, checked exactly (timing
/// agreement with one generator is `loadtest/bench/merge-vs-single.sh`'s,
/// on a machine kept quiet): the four sent the very queries one generator
/// sends at the total rate, each step's counts, rcodes and latency
/// histogram are the generators' added bucket by bucket, and step k of
/// every generator began no earlier than the shared start plus k slots.
#[test]
fn four_generators_on_a_shared_schedule_merge_exactly() {
    let (single_target, single_asked) = responder(30);
    let (shared_target, shared_asked) = responder(40);
    let d = dir("merge4");
    std::fs::write(
        d.join("names.txt"),
        "a.example A\nb.example AAAA\nc.example A\nd.example TXT\n",
    )
    .expect("names");
    let names = d.join("names.txt").display().to_string();
    // Low rates: the five processes hardly compete for this machine's cores.
    let run = |target: &str| -> Vec<String> {
        let args = [
            "run", "--target", target, "--names", &names, "--rate", "100", "--ramp", "1x..2x",
        ];
        let rest = ["--steps", "2", "--step-duration", "1"];
        args.iter().chain(&rest).map(|s| s.to_string()).collect()
    };
    let single = d.join("single").display().to_string();
    let args = run(&single_target.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(loadtest(&args).args(["--out", &single]).output().expect("single"));
    let json = std::fs::read_to_string(format!("{single}.json")).expect("single json");
    let one = report::read(&json).expect("single report").remove(0);
    let args = run(&shared_target.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (four, merged, text) = four_generators(&d, &args);

    assert!(text.contains("4 reports from 4 file(s), 4 generators"), "{text}");
    for never in ["missing", "more than once", "different"] {
        assert!(!text.contains(never), "every generator reported once, alike:\n{text}");
    }
    let (asked, want) = (sorted(&shared_asked), sorted(&single_asked));
    assert_eq!(want.len(), 300, "one generator: 100 then 200 queries");
    assert!(
        asked == want,
        "the four asked {} questions, not the single one's {}",
        asked.len(),
        want.len()
    );
    assert_eq!(merged.rows.len(), 2, "{text}");
    for (k, row) in merged.rows.iter().enumerate() {
        let steps: Vec<&Row> = four.iter().map(|r| &r.rows[k]).collect();
        let o = &row.outcome;
        assert_eq!(
            (o.offered, o.sent),
            (one.rows[k].outcome.offered, one.rows[k].outcome.sent),
            "step {k}"
        );
        let sum = |f: fn(&Outcome) -> u64| steps.iter().map(|s| f(&s.outcome)).sum::<u64>();
        assert_eq!(o.sent, sum(|o| o.sent), "step {k}: sent");
        assert_eq!(o.answered, sum(|o| o.answered), "step {k}: answered");
        assert_eq!(o.lost, sum(|o| o.lost), "step {k}: lost");
        for (code, n) in o.rcodes.iter().enumerate() {
            assert_eq!(
                *n,
                steps.iter().map(|s| s.outcome.rcodes[code]).sum::<u64>(),
                "step {k}: rcode {code}"
            );
        }
        let mut buckets = std::collections::BTreeMap::new();
        for (i, n) in steps.iter().flat_map(|s| s.outcome.histogram()) {
            *buckets.entry(i).or_insert(0) += n;
        }
        assert_eq!(
            o.histogram(),
            buckets.into_iter().collect::<Vec<_>>(),
            "step {k}: histogram"
        );
        let slot = four[0].generators[0].slot_seconds;
        for (r, s) in four.iter().zip(&steps) {
            let at = r.generators[0].start_at.expect("shared start") + k as f64 * slot;
            assert!(
                s.started >= at - 0.001,
                "step {k} of generator {} began before its slot",
                r.generators[0].index
            );
        }
        let earliest = steps.iter().map(|s| s.started).fold(f64::MAX, f64::min);
        assert_eq!(
            row.started, earliest,
            "step {k}: the merged step begins with its first generator"
        );
    }
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
    let target = responder(10).0.to_string();
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
