//! The resolver matrix: the stub resolvers that container images carry
//! (glibc, musl, Go, c-ares, Node, dnspython, Java), each as a small program
//! built here from `tests/resolvers/`, look names up as pods would, against
//! the real binary on 127.0.0.1:53 in a private network namespace.
//!
//! Inside the namespace: the cluster server (tests/resolvers/cluster.yaml
//! plus two large headless Services, `forward .` to the upstream), a stub
//! upstream (a second clusterdns serving tests/resolvers/root.db on
//! 127.0.0.2), a server that never syncs (`endpoint` at a closed port) on
//! 127.0.0.3, a minimal /etc/hosts and nsswitch.conf, and per pod a nested
//! mount namespace with the kubelet's resolv.conf bind-mounted. Every
//! client runs once per pod on all that pod's cases (in parallel); each
//! cell asserts the exact values or the failure class. No cell is timed
//! against a bound (a busy machine moves that): a reply the servers never
//! sent would show as a request without a response in their metrics, read
//! before they stop, and every server must have answered every request.
//! The cases and every client's differences are in `resolvers/cases.rs`.

#[path = "resolvers/cases.rs"]
mod cases;
mod common;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use cases::{Case, Class, Client, Kind, Outcome, Pod};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/resolvers")
}

/// Runs a build command; panics with its output when it fails.
fn build(what: &str, cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (tests/run installs the toolchains)"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds every client program into `dir` (the slow ones in parallel).
fn build_clients(dir: &Path) {
    let s = src();
    let go = dir.join("go");
    let go_build = std::thread::spawn({
        let (s, dir) = (s.clone(), dir.to_path_buf());
        move || {
            build(
                "go build",
                Command::new("go")
                    .args(["build", "-o"])
                    .arg(dir.join("golookup"))
                    .arg(s.join("lookup.go"))
                    .env("GOCACHE", go.join("cache"))
                    .env("GOPATH", go.join("path"))
                    .env("GO111MODULE", "off")
                    .env("GOPROXY", "off")
                    .env("GOENV", "off")
                    .env("GOFLAGS", ""),
            );
        }
    });
    let javac = std::thread::spawn({
        let (s, dir) = (s.clone(), dir.to_path_buf());
        move || {
            build(
                "javac",
                Command::new("javac")
                    .arg("-d")
                    .arg(dir.join("java"))
                    .arg(s.join("Lookup.java")),
            )
        }
    });
    let c = s.join("libc.c");
    build(
        "gcc (glibc)",
        Command::new("gcc")
            .arg("-O1")
            .arg("-o")
            .arg(dir.join("glibc"))
            .arg(&c)
            .arg("-lresolv"),
    );
    build(
        "musl-gcc",
        Command::new("musl-gcc")
            .args(["-O1", "-static", "-o"])
            .arg(dir.join("musl"))
            .arg(&c),
    );
    build(
        "gcc (c-ares)",
        Command::new("gcc")
            .arg("-O1")
            .arg("-o")
            .arg(dir.join("cares"))
            .arg(s.join("cares.c"))
            .arg("-lcares"),
    );
    for (what, t) in [("go build", go_build), ("javac", javac)] {
        assert!(t.join().is_ok(), "{what} failed");
    }
}

/// The test's dump: cluster.yaml plus the large headless Services.
fn cluster_dump(dir: &Path) -> PathBuf {
    let mut text = std::fs::read_to_string(src().join("cluster.yaml")).expect("cluster.yaml");
    for (name, n, third) in cases::BIG {
        let _ = write!(
            text,
            "- {{apiVersion: v1, kind: Service, metadata: {{name: {name}, namespace: shop}}, spec: {{clusterIP: None, ports: [{{name: http, port: 80, protocol: TCP}}]}}}}\n\
- apiVersion: discovery.k8s.io/v1\n  kind: EndpointSlice\n  metadata: {{name: {name}-a, namespace: shop, labels: {{kubernetes.io/service-name: {name}}}}}\n  addressType: IPv4\n  ports: [{{name: http, port: 80, protocol: TCP}}]\n  endpoints:\n"
        );
        for k in 1..=n {
            let _ = writeln!(
                text,
                "  - {{addresses: [10.244.{third}.{k}], conditions: {{ready: true}}}}"
            );
        }
    }
    let path = dir.join("cluster.yaml");
    std::fs::write(&path, text).expect("write dump");
    path
}

/// The upstream's zone: root.db plus `many.example.com` (over 512 bytes).
fn root_zone(dir: &Path) -> PathBuf {
    let mut text = std::fs::read_to_string(src().join("root.db")).expect("root.db");
    for k in 1..=cases::MANY {
        let _ = writeln!(text, "many.example.com. IN A 198.51.100.{k}");
    }
    let path = dir.join("root.db");
    std::fs::write(&path, text).expect("write zone");
    path
}

/// Corefiles, hosts, nsswitch.conf, resolv.confs and case lists.
fn write_files(dir: &Path, cases: &[Case]) {
    let dump = cluster_dump(dir);
    let files = [
        (
            "Corefile.cluster",
            format!(".:53 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:8181\n    prometheus 127.0.0.1:9153\n    kubernetes cluster.local clusterset.local in-addr.arpa ip6.arpa {{\n        snapshot {}\n        pods verified\n        multicluster clusterset.local\n    }}\n    forward . 127.0.0.2\n}}\n", dump.display()),
        ),
        (
            "Corefile.unsynced",
            ".:53 {\n    bind 127.0.0.3\n    prometheus 127.0.0.3:9153\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        endpoint http://127.0.0.1:9\n        startup_timeout 0s\n    }\n    forward . 127.0.0.2\n}\n".to_string(),
        ),
        (
            "Corefile.upstream",
            format!(".:53 {{\n    bind 127.0.0.2\n    prometheus 127.0.0.2:9153\n    file {} .\n}}\n", root_zone(dir).display()),
        ),
        ("hosts", "127.0.0.1 localhost\n::1 localhost\n".to_string()),
        ("nsswitch.conf", "hosts: files dns\n".to_string()),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write file");
    }
    for pod in Pod::ALL {
        std::fs::write(dir.join(format!("resolv.{}", pod.name())), pod.resolv_conf()).expect("resolv.conf");
        let list: String = cases
            .iter()
            .filter(|c| c.pod == pod)
            .map(|c| format!("{} {} {}\n", c.id, c.kind.word(), c.name))
            .collect();
        std::fs::write(dir.join(format!("cases.{}", pod.name())), list).expect("cases");
    }
}

/// The command line of a client program.
fn command(client: Client, dir: &Path) -> String {
    let (s, d) = (src().display().to_string(), dir.display().to_string());
    match client {
        Client::GetentHosts => format!("bash {s}/getent.sh hosts"),
        Client::GetentAhosts => format!("bash {s}/getent.sh ahosts"),
        Client::Glibc => format!("{d}/glibc"),
        Client::Musl => format!("{d}/musl"),
        Client::Go => format!("env GODEBUG=netdns=go {d}/golookup"),
        Client::Cares => format!("{d}/cares"),
        Client::NodeLookup => format!("node {s}/lookup.js lookup"),
        Client::NodeResolve => format!("node {s}/lookup.js resolve"),
        Client::Dnspython => format!("/usr/bin/python3 {s}/lookup.py"),
        Client::Java => format!("java -XX:TieredStopAtLevel=1 -Xshare:auto -cp {d}/java Lookup"),
    }
}

/// The script run in the private namespace: servers up, the truncated
/// 512-byte replies recorded with dig, then every client on every pod.
fn script(dir: &Path, cases: &[Case]) -> String {
    let d = dir.display();
    let bin = env!("CARGO_BIN_EXE_clusterdns");
    let mut s = format!(
        r#"set -u
ip link set lo up
mount --bind {d}/hosts /etc/hosts
mount --bind {d}/nsswitch.conf /etc/nsswitch.conf
{bin} -conf {d}/Corefile.upstream 2>{d}/upstream.log & servers="$!"
{bin} -conf {d}/Corefile.cluster 2>{d}/cluster.log & servers="$servers $!"
{bin} -conf {d}/Corefile.unsynced 2>{d}/unsynced.log & servers="$servers $!"
for i in $(seq 1 200); do
  (: </dev/tcp/127.0.0.1/8181) 2>/dev/null \
    && dig +short +tries=1 +time=1 @127.0.0.2 ns.root | grep -q . \
    && dig +tries=1 +time=1 @127.0.0.3 web.shop.svc.cluster.local | grep -q SERVFAIL && break
  sleep 0.1
done
"#
    );
    for case in cases.iter().filter(|c| c.over_512) {
        let qtype = if case.kind == Kind::Srv { "SRV" } else { "A" };
        let _ = writeln!(
            s,
            "dig +noedns +notcp +ignore @127.0.0.1 {qtype} {name} > {d}/truncated.{id}.full\n\
             dig +short +noedns +notcp +ignore @127.0.0.1 {qtype} {name} > {d}/truncated.{id}",
            name = case.name,
            id = case.id
        );
    }
    s.push_str("clients=\"\"\n");
    for pod in Pod::ALL {
        for client in Client::ALL {
            let (p, c) = (pod.name(), client.name());
            let _ = writeln!(
                s,
                "unshare --mount bash -c 'mount --bind {d}/resolv.{p} /etc/resolv.conf && exec timeout 60 {cmd}' <{d}/cases.{p} >{d}/out.{p}.{c} 2>{d}/err.{p}.{c} & clients=\"$clients $!\"",
                cmd = command(client, dir)
            );
        }
    }
    s.push_str("wait $clients\n");
    for (ip, name) in SERVERS {
        let _ = writeln!(
            s,
            "(exec 3<>/dev/tcp/{ip}/9153 && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3) > {d}/metrics.{name}"
        );
    }
    s.push_str("kill $servers\nwait\n");
    s
}

/// The three servers in the namespace: (address, name).
const SERVERS: [(&str, &str); 3] = [
    ("127.0.0.1", "cluster"),
    ("127.0.0.2", "upstream"),
    ("127.0.0.3", "unsynced"),
];

/// Every server answered every request it counted (read from its
/// metrics after the last client ended): what a time bound on each
/// lookup stood for, without a clock. `(server, requests, responses)`.
fn unanswered(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (_, name) in SERVERS {
        let text = std::fs::read_to_string(dir.join(format!("metrics.{name}"))).unwrap_or_default();
        let requests = common::sum_of(&text, "coredns_dns_requests_total", "");
        let responses = common::sum_of(&text, "coredns_dns_responses_total", "");
        if requests < 1.0 || requests != responses {
            out.push(format!("{name}: {requests} requests, {responses} responses"));
        }
    }
    out
}

/// One client's reported result for one case.
struct Got {
    outcome: Outcome,
    ms: u64,
    detail: String,
}

/// Reads `out.POD.CLIENT` lines: "ID MS ok V..." or "ID MS err CLASS DETAIL".
fn results(dir: &Path, kinds: &HashMap<&str, Kind>) -> HashMap<(String, &'static str), Got> {
    let mut map = HashMap::new();
    for pod in Pod::ALL {
        for client in Client::ALL {
            let text =
                std::fs::read_to_string(dir.join(format!("out.{}.{}", pod.name(), client.name()))).unwrap_or_default();
            for line in text.lines() {
                let mut f = line.split_whitespace();
                let (Some(id), Some(ms), Some(status)) = (f.next(), f.next(), f.next()) else {
                    continue;
                };
                let rest: Vec<String> = f.map(str::to_string).collect();
                let kind = kinds.get(id).copied().unwrap_or(Kind::Host);
                let outcome = match status {
                    "ok" => Outcome::Values(cases::normalize(kind, rest.clone())),
                    _ => Outcome::Fail(Class::parse(rest.first().map_or("", String::as_str))),
                };
                let got = Got {
                    outcome,
                    ms: ms.parse().unwrap_or(u64::MAX),
                    detail: rest.join(" "),
                };
                map.insert((id.to_string(), client.name()), got);
            }
        }
    }
    map
}

fn show(o: &Outcome) -> String {
    match o {
        Outcome::Values(v) if v.len() > 6 => format!("{} values [{} .. {}]", v.len(), v[0], v[v.len() - 1]),
        Outcome::Values(v) => format!("[{}]", v.join(" ")),
        Outcome::Fail(c) => format!("{c:?}"),
    }
}

/// What the 512-byte replies of the `over_512` cases hold (dig +noedns
/// +ignore, recorded in the namespace), checked to be some but not all,
/// with TC set and nothing after the last whole record (dig warns of
/// "extra bytes"; glibc's and musl's ns_initparse reject such a reply).
fn truncated_replies(dir: &Path, cases: &[Case]) -> HashMap<String, Vec<String>> {
    let mut map = HashMap::new();
    for case in cases.iter().filter(|c| c.over_512) {
        let text = std::fs::read_to_string(dir.join(format!("truncated.{}", case.id))).unwrap_or_default();
        let held: Vec<String> = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(":"))
            .collect();
        let full = std::fs::read_to_string(dir.join(format!("truncated.{}.full", case.id))).unwrap_or_default();
        let flags = full.lines().find(|l| l.starts_with(";; flags:")).unwrap_or("");
        assert!(
            flags.contains(" tc") && !full.contains("extra byte") && !full.contains("malformed"),
            "{}: a truncated reply of whole records with TC:\n{full}",
            case.id
        );
        let all = match &case.want {
            Outcome::Values(v) => v.len(),
            Outcome::Fail(_) => 0,
        };
        assert!(
            !held.is_empty() && held.len() < all,
            "{}: the 512-byte reply must hold some but not all {all} records: {held:?}",
            case.id
        );
        map.insert(case.id.to_string(), held);
    }
    map
}

/// The printed matrix and every failing cell with its detail.
fn judge(
    cases: &[Case],
    got: &HashMap<(String, &'static str), Got>,
    truncated: &HashMap<String, Vec<String>>,
) -> (String, Vec<String>) {
    let mut table = format!("{:<20}", "case");
    for client in Client::ALL {
        let _ = write!(table, " {:<13}", client.name());
    }
    let (mut failures, mut slowest) = (Vec::new(), (0, String::new()));
    for case in cases {
        let _ = write!(table, "\n{:<20}", case.id);
        for client in Client::ALL {
            let Some(want) = cases::expect(client, case, truncated) else {
                let _ = write!(table, " {:<13}", "-");
                continue;
            };
            let g = got.get(&(case.id.to_string(), client.name()));
            let failure = match g {
                None => Some(format!("no result (err.{}.{})", case.pod.name(), client.name())),
                Some(g) if g.outcome != want.outcome => Some(format!(
                    "want {}, got {} ({} ms: {})",
                    show(&want.outcome),
                    show(&g.outcome),
                    g.ms,
                    g.detail.chars().take(160).collect::<String>()
                )),
                Some(g) => {
                    if g.ms > slowest.0 {
                        slowest = (g.ms, format!("{} × {}", client.name(), case.id));
                    }
                    None
                }
            };
            let _ = write!(table, " {:<13}", if failure.is_some() { "FAIL" } else { "ok" });
            if let Some(detail) = failure {
                let (c, k) = (client.name(), case.kind.word());
                failures.push(format!("{c} × {} ({k} {}): {detail}", case.id, case.name));
            }
        }
    }
    let _ = write!(table, "\nslowest passing cell: {} ms ({})", slowest.0, slowest.1);
    (table, failures)
}

#[test]
fn every_resolver_a_pod_carries_gets_the_right_answer() {
    if !common::namespaces_or_skip("resolver matrix") {
        return;
    }
    let dir = common::temp_dir("resolvers");
    build_clients(&dir);
    let cases = cases::cases(&std::fs::read_to_string(src().join("cases.txt")).expect("cases.txt"));
    write_files(&dir, &cases);
    let started = std::time::Instant::now();
    let out = Command::new("unshare")
        .args(["--mount", "--net", "bash", "-c", &script(&dir, &cases)])
        .output()
        .expect("run unshare");
    let log = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let servers = format!(
        "namespace script stderr:\n{}\ncluster.log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        log("cluster.log")
    );
    let kinds: HashMap<&str, Kind> = cases.iter().map(|c| (c.id.as_str(), c.kind)).collect();
    let got = results(&dir, &kinds);
    assert!(!got.is_empty(), "no client reported anything\n{servers}");
    let truncated = truncated_replies(&dir, &cases);
    let (table, failures) = judge(&cases, &got, &truncated);
    eprintln!("resolver matrix (ran in {:?}):\n{table}\n", started.elapsed());
    let unanswered = unanswered(&dir);
    assert!(
        unanswered.is_empty(),
        "requests without a response (a reply lost or never sent): {unanswered:?}\n{servers}"
    );
    assert!(
        failures.is_empty(),
        "{} failing cells (files in {}):\n{}",
        failures.len(),
        dir.display(),
        failures.join("\n")
    );
}
