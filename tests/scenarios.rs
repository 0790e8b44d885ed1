//! Runs every scenario in `zones/scenarios/*.scn` end to end: the real
//! binary on a loopback port, real UDP and TCP queries, answers compared
//! as zone-file text. The format is described in zones/scenarios/README.md.

mod common;

use std::path::{Path, PathBuf};

use common::{answer_lines, corefile, tcp, temp_dir, udp, Server};
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;

#[derive(Default, Debug)]
struct Step {
    line: usize,
    name: String,
    qtype: String,
    tcp: bool,
    rcode: Option<String>,
    flags: Vec<String>,
    answers: Vec<String>,
    authority: Option<String>,
}

#[derive(Default)]
struct Scenario {
    cluster: Option<PathBuf>,
    options: Vec<String>,
    steps: Vec<Step>,
}

fn parse(path: &Path) -> Scenario {
    let text = std::fs::read_to_string(path).expect("read scenario");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sc = Scenario::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim().to_string();
        let at = format!("{}:{}", path.display(), i + 1);
        match word {
            "cluster" => sc.cluster = Some(root.join(rest)),
            "option" => sc.options.push(rest),
            "query" => {
                let parts: Vec<&str> = rest.split_whitespace().collect();
                assert!(parts.len() >= 2, "{at}: query NAME TYPE [udp|tcp]");
                let tcp = parts.get(2) == Some(&"tcp");
                sc.steps.push(Step {
                    line: i + 1,
                    name: parts[0].into(),
                    qtype: parts[1].into(),
                    tcp,
                    ..Step::default()
                });
            }
            _ => {
                let step = sc
                    .steps
                    .last_mut()
                    .unwrap_or_else(|| panic!("{at}: '{word}' before any query"));
                match word {
                    "rcode" => step.rcode = Some(rest),
                    "flags" => step.flags = rest.split_whitespace().map(String::from).collect(),
                    "answer" => step.answers.push(rest.split_whitespace().collect::<Vec<_>>().join(" ")),
                    "authority" => step.authority = Some(rest),
                    other => panic!("{at}: unknown keyword '{other}'"),
                }
            }
        }
    }
    sc
}

fn check(step: &Step, reply: &Message, at: &str) {
    let want_rcode = step.rcode.clone().unwrap_or_else(|| "NOERROR".into());
    assert_eq!(common::rcode_name(reply), want_rcode, "{at}: rcode");
    let got = answer_lines(reply);
    let mut unmatched = got.clone();
    for want in &step.answers {
        let pos = unmatched.iter().position(|g| matches(want, g));
        let pos = pos.unwrap_or_else(|| panic!("{at}: missing answer '{want}'; got {got:#?}"));
        unmatched.remove(pos);
    }
    assert!(unmatched.is_empty(), "{at}: unexpected answers {unmatched:#?}");
    for flag in &step.flags {
        let set = match flag.as_str() {
            "aa" => reply.metadata.authoritative,
            "tc" => reply.metadata.truncation,
            "rd" => reply.metadata.recursion_desired,
            "-aa" => !reply.metadata.authoritative,
            "-tc" => !reply.metadata.truncation,
            other => panic!("{at}: unknown flag {other}"),
        };
        assert!(set, "{at}: flag {flag}");
    }
    if let Some(kind) = &step.authority {
        let got: Vec<String> = reply.authorities.iter().map(|r| r.record_type().to_string()).collect();
        assert_eq!(got, vec![kind.clone()], "{at}: authority section");
    }
}

/// Token-wise equality where an expected `*` matches any token.
fn matches(want: &str, got: &str) -> bool {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split_whitespace().collect(), got.split_whitespace().collect());
    w.len() == g.len() && w.iter().zip(&g).all(|(a, b)| *a == "*" || a == b)
}

#[test]
fn scenarios() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("zones/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("zones/scenarios")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "scn"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "expected scenario files in {}", dir.display());
    let mut steps = 0;
    for file in files {
        let sc = parse(&file);
        let cluster = sc.cluster.clone().unwrap_or_else(common::demo_cluster);
        let tag = file.file_stem().and_then(|s| s.to_str()).unwrap_or("scn").to_string();
        let server = Server::start(&temp_dir(&tag), &corefile(&cluster, &sc.options.join("\n        ")));
        for step in &sc.steps {
            let qtype: RecordType = step
                .qtype
                .parse()
                .unwrap_or_else(|_| panic!("{}:{}: bad type", file.display(), step.line));
            let reply = if step.tcp {
                tcp(server.dns, &step.name, qtype)
            } else {
                udp(server.dns, &step.name, qtype)
            };
            check(step, &reply, &format!("{}:{}", file.display(), step.line));
            steps += 1;
        }
    }
    println!("{steps} scenario steps passed");
}
