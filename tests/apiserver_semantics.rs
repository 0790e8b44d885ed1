//! The API source against an independent fake API server
//! (`tests/apiserver/fake_apiserver.py`, written from the Kubernetes API
//! documentation rather than from the project's own fake): paged lists
//! whose continue token expires mid-list, bookmarks, `ERROR` events with a
//! 410 Status, 429/503 with Retry-After, a rotated bearer token, RBAC's
//! 403, and objects the lean types cannot read. Answers are checked with
//! dig; requests with the fake's own log of what it received.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::dig::dig_with;
use common::{temp_dir, Server};
use hickory_proto::rr::RecordType;
use serde_json::{json, Value};

/// The Python fake, killed on drop.
struct Fake {
    child: Child,
    port: u16,
}

impl Fake {
    fn start(dir: &Path, args: &[&str]) -> Fake {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apiserver/fake_apiserver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the fake API server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("port line");
        let port = line.trim().strip_prefix("port ").and_then(|p| p.parse().ok());
        Fake {
            child,
            port: port.unwrap_or_else(|| panic!("fake said {line:?}")),
        }
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let body = body.to_string();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect fake");
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: fake\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).expect("send");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).ok();
        let text = String::from_utf8_lossy(&raw);
        let (_, chunked) = text.split_once("\r\n\r\n").unwrap_or_default();
        serde_json::from_str(&dechunk(chunked)).unwrap_or(Value::Null)
    }

    fn control(&self, verb: &str, body: Value) -> Value {
        self.call("POST", &format!("/_control/{verb}"), &body)
    }

    fn apply(&self, resource: &str, object: Value) {
        self.control("apply", json!({"resource": resource, "object": object}));
    }

    /// Every API request the fake received (and every bookmark it sent).
    fn requests(&self) -> Vec<Value> {
        match self.call("GET", "/_control/requests", &Value::Null) {
            Value::Array(v) => v,
            other => panic!("requests: {other}"),
        }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn service(ns: &str, name: &str, ip: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": name},
                        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x".repeat(2000)}},
           "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "ipFamilies": ["IPv4"],
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
                    "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"},
           "status": {"loadBalancer": {}}})
}

/// A cluster of `n` Services in `default` (`svc-0` … at 10.96.1.x) with a
/// kubeconfig pointing at the fake; returns the Corefile.
fn cluster(fake: &Fake, dir: &Path, n: usize, token: Option<&Path>) -> String {
    fake.apply(
        "namespaces",
        json!({"metadata": {"name": "default"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
    );
    for i in 0..n {
        fake.apply(
            "services",
            service("default", &format!("svc-{i}"), &format!("10.96.1.{}", i + 1)),
        );
    }
    // A headless Service whose slice has no endpoints yet: Go sends null.
    fake.apply(
        "services",
        json!({"metadata": {"name": "empty", "namespace": "default"}, "spec": {"clusterIP": "None", "ports": null}}),
    );
    fake.apply("endpointslices", json!({"metadata": {"name": "empty-x", "namespace": "default", "labels": {"kubernetes.io/service-name": "empty"}},
                                        "addressType": "IPv4", "endpoints": null, "ports": null}));
    let user = match token {
        Some(t) => format!("    user: {{tokenFile: {}}}\n", t.display()),
        None => "    user: {}\n".to_string(),
    };
    let kubeconfig = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster: {{server: 'http://127.0.0.1:{}'}}\nusers:\n- name: u\n{user}contexts:\n- name: c\n  context: {{cluster: fake, user: u}}\ncurrent-context: c\n",
        fake.port
    );
    std::fs::write(&kubeconfig, text.replace("    user: {", "  user: {")).expect("kubeconfig");
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local {{\n        kubeconfig {}\n        ttl 5\n    }}\n}}\n",
        kubeconfig.display()
    )
}

fn status_of(server: &Server, name: &str) -> (String, Vec<String>) {
    let d = dig_with("dig", server, &[name, "A"]);
    let data = d.data();
    (d.status, data)
}

/// The ceiling of every wait for an event here: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

fn unix_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as u64)
}

/// When the server's watch of `kind` last saw a frame, as Unix ms
/// bounds `(at or before it, at or after it)`, from
/// `clusterdns_kubernetes_last_event_age_seconds` read against the clock
/// just before and just after the scrape (0s: none yet).
fn last_frame(server: &Server, kind: &str) -> (u64, u64) {
    let series = format!("clusterdns_kubernetes_last_event_age_seconds{{kind=\"{kind}\"}}");
    let before = unix_ms();
    let age = server.metric(&series);
    let after = unix_ms();
    if age < 0.0 {
        return (0, 0);
    }
    let age = (age * 1000.0).round() as u64;
    (before.saturating_sub(age), after.saturating_sub(age))
}

/// Waits until the server's watch of `kind` saw a frame later than
/// `prior` (an upper bound of its last one, from [`last_frame`]). The
/// watch stores a frame's resourceVersion before it reads the next one.
fn seen_after(server: &Server, kind: &str, prior: u64) {
    let started = Instant::now();
    while last_frame(server, kind).0 <= prior {
        assert!(
            started.elapsed() < HANG,
            "no event of {kind} seen: {}",
            server.metrics()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn eventually(server: &Server, name: &str, want: &str, data: &[&str]) -> Duration {
    let started = Instant::now();
    while started.elapsed() < HANG {
        let (status, got) = status_of(server, name);
        if status == want && got == data {
            return started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{name}: wanted {want} {data:?}, still {:?}", status_of(server, name));
}

/// Every wait the watchers logged they would make ("next in N s").
fn planned_waits(server: &Server) -> Vec<f64> {
    let log = server.log.lock().map(|l| l.clone()).unwrap_or_default();
    log.iter()
        .filter_map(|l| l.split_once("next in ")?.1.split_once(" s")?.0.parse().ok())
        .collect()
}

fn watches_of<'a>(requests: &'a [Value], path: &str) -> Vec<&'a Value> {
    requests
        .iter()
        .filter(|r| r["path"] == path && r["watch"] == true && r.get("bookmark").is_none())
        .collect()
}

fn dir(tag: &str) -> PathBuf {
    temp_dir(tag)
}

#[test]
fn initial_sync_changes_and_a_resume_from_the_bookmark() {
    let dir = dir("apisem-sync");
    let fake = Fake::start(&dir, &["--page", "3"]);
    let server = Server::start(&dir, &cluster(&fake, &dir, 10, None));
    // Ten Services over four pages of three.
    eventually(&server, "svc-9.default.svc.cluster.local.", "NOERROR", &["10.96.1.10"]);
    eventually(&server, "svc-0.default.svc.cluster.local.", "NOERROR", &["10.96.1.1"]);
    let lists = fake
        .requests()
        .into_iter()
        .filter(|r| r["path"] == "/api/v1/services" && r["watch"] == false)
        .count();
    assert!(lists >= 4, "listed in pages: {lists} requests");
    // Changes: a creation, a deletion.
    fake.apply("services", service("default", "late", "10.96.2.1"));
    fake.control(
        "delete",
        json!({"resource": "services", "namespace": "default", "name": "svc-3"}),
    );
    eventually(&server, "late.default.svc.cluster.local.", "NOERROR", &["10.96.2.1"]);
    eventually(&server, "svc-3.default.svc.cluster.local.", "NXDOMAIN", &[]);
    // Other kinds move the cluster's version on; a bookmark tells the
    // Service watch so; then every watch is dropped.
    fake.control("bump", json!({"by": 50}));
    let (_, prior) = last_frame(&server, "Service");
    fake.control("bookmark", json!({}));
    seen_after(&server, "Service", prior);
    let before = watches_of(&fake.requests(), "/api/v1/services").len();
    let mark = fake
        .requests()
        .iter()
        .rev()
        .find(|r| r["path"] == "/api/v1/services" && r.get("bookmark").is_some())
        .map(|r| r["bookmark"].clone())
        .expect("the fake sent a bookmark");
    fake.control("drop", json!({}));
    let started = Instant::now();
    let resumed = loop {
        let requests = fake.requests();
        let watches = watches_of(&requests, "/api/v1/services");
        if watches.len() > before {
            break watches[before].clone();
        }
        assert!(started.elapsed() < HANG, "no resume");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        resumed["query"]["resourceVersion"], mark,
        "resumed from the bookmark: {resumed}"
    );
    fake.apply("services", service("default", "after", "10.96.2.2"));
    eventually(&server, "after.default.svc.cluster.local.", "NOERROR", &["10.96.2.2"]);
    // The headless Service with a null endpoint list: no addresses, no error.
    assert!(!server.log_contains("skipped malformed object EndpointSlice"));
}

#[test]
fn an_expired_continue_token_mid_list_restarts_the_list_without_flaps() {
    let dir = dir("apisem-410");
    let fake = Fake::start(&dir, &["--page", "2"]);
    // The first list's second page already finds its token expired.
    fake.control("expire_continue", json!({"next": 1}));
    let server = Server::start(&dir, &cluster(&fake, &dir, 12, None));
    for i in [0, 5, 11] {
        let name = format!("svc-{i}.default.svc.cluster.local.");
        let ip = format!("10.96.1.{}", i + 1);
        assert_eq!(status_of(&server, &name), ("NOERROR".to_string(), vec![ip]));
    }
    assert!(server.logged("listing again from the start"));
    // History compacted, then every watch dropped: the resume gets an
    // ERROR event with a 410 Status and relists, and that list's token
    // expires mid-way too. Names on the last pages never go missing.
    fake.control("expire_continue", json!({"next": 2}));
    fake.control(
        "delete",
        json!({"resource": "services", "namespace": "default", "name": "svc-1"}),
    );
    fake.control("compact", json!({}));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        let addr = server.dns;
        std::thread::spawn(move || {
            let mut bad = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                for i in [8, 9, 10, 11] {
                    let m = common::udp(addr, &format!("svc-{i}.default.svc.cluster.local."), RecordType::A);
                    let rcode = common::rcode_name(&m);
                    if rcode != "NOERROR" || m.answers.is_empty() {
                        bad.push(format!("svc-{i}: {rcode}"));
                    }
                }
            }
            bad
        })
    };
    fake.control("drop", json!({}));
    eventually(&server, "svc-1.default.svc.cluster.local.", "NXDOMAIN", &[]);
    assert!(server.logged("Service: relisting (expired)"));
    // Both tokens expire, the list starts over twice and completes.
    let started = Instant::now();
    let expired = || fake.requests().iter().filter(|r| r["status"] == 410).count();
    while expired() < 3 && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(expired(), 3, "the fake expired three continue tokens");
    let lists = || {
        fake.requests()
            .iter()
            .filter(|r| r["path"] == "/api/v1/services" && r["watch"] == false && r["status"] == 200)
            .filter(|r| r["query"].get("continue").is_none())
            .count()
    };
    // first list, its restart, the relist and its two restarts
    while lists() < 5 && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(lists(), 5, "lists started from the beginning");
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let bad = watcher.join().expect("query thread");
    assert!(bad.is_empty(), "answers flapped during the relist: {bad:?}");
}

#[test]
fn retry_after_is_honoured_and_bounded() {
    let dir = dir("apisem-429");
    let fake = Fake::start(&dir, &[]);
    let server = Server::start(&dir, &cluster(&fake, &dir, 2, None));
    // The API server restarts: its watch cache turns requests away with
    // 429 and Retry-After: 2, then 503 with Retry-After: 1.
    fake.control("fault", json!({"status": 429, "retry_after": 2, "count": 6}));
    fake.control("fault", json!({"status": 503, "retry_after": 1, "count": 3}));
    let from = fake.requests().len();
    let started = Instant::now();
    fake.control("drop", json!({}));
    let faulted = |requests: &[Value]| {
        requests[from..]
            .iter()
            .filter(|r| r["status"] == 429 || r["status"] == 503)
            .count()
    };
    while faulted(&fake.requests()) < 9 && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(100));
    }
    fake.apply("services", service("default", "back", "10.96.3.1"));
    eventually(&server, "back.default.svc.cluster.local.", "NOERROR", &["10.96.3.1"]);
    let took = started.elapsed();
    let requests = fake.requests();
    assert_eq!(faulted(&requests), 9, "every injected fault was met once");
    // Per path, a retry after a 429 waits at least its 2 s.
    for path in [
        "/api/v1/services",
        "/api/v1/namespaces",
        "/apis/discovery.k8s.io/v1/endpointslices",
    ] {
        let times: Vec<(f64, Value)> = requests[from..]
            .iter()
            .filter(|r| r["path"] == path && r.get("bookmark").is_none())
            .map(|r| (r["time"].as_f64().unwrap_or(0.0), r["status"].clone()))
            .collect();
        for pair in times.windows(2) {
            if pair[0].1 == 429 {
                let gap = pair[1].0 - pair[0].0;
                assert!(gap >= 1.9, "{path}: retried {gap:.2} s after a 429 with Retry-After: 2");
            }
        }
    }
    // Three rounds of faults per kind: at least 2 + 2 s of waiting asked
    // for (a lower bound: a busy machine only waits longer), and no more
    // than the backoff's bound on top: every wait the server planned (its
    // log's "next in N s") is at most the 2 s asked for, the backoff's own
    // after three failures being under 1 s.
    assert!(took >= Duration::from_secs(4), "honoured: served after {took:?}");
    assert!(server.logged("retrying as it asks"));
    let planned = planned_waits(&server);
    assert!(
        !planned.is_empty() && planned.iter().all(|w| *w <= 2.0),
        "bounded: planned waits {planned:?}"
    );
    assert_eq!(status_of(&server, "svc-0.default.svc.cluster.local.").0, "NOERROR");
}

#[test]
fn a_rotated_token_is_used_next_and_rbac_denials_are_logged_not_looped() {
    let dir = dir("apisem-token");
    let token = dir.join("token");
    let fake = Fake::start(&dir, &["--token-file", token.to_str().expect("utf-8 path")]);
    let server = Server::start(&dir, &cluster(&fake, &dir, 2, Some(&token)));
    assert_eq!(status_of(&server, "svc-1.default.svc.cluster.local.").1, ["10.96.1.2"]);
    // The kubelet rotates the token; the old one stops working at once
    // (stricter than a real API server, which accepts it until it expires).
    fake.control("rotate", json!({}));
    let rotated = std::fs::read_to_string(&token).expect("token").trim().to_string();
    let from = fake.requests().len();
    fake.control("drop", json!({}));
    fake.apply("services", service("default", "rotated", "10.96.4.1"));
    eventually(&server, "rotated.default.svc.cluster.local.", "NOERROR", &["10.96.4.1"]);
    let after: Vec<Value> = fake.requests()[from..]
        .iter()
        .filter(|r| r.get("bookmark").is_none())
        .cloned()
        .collect();
    assert!(!after.is_empty());
    assert!(
        after
            .iter()
            .all(|r| r["token"] == rotated.as_str() && r["status"] != 401),
        "{after:?}"
    );
    // RBAC loses the right to watch EndpointSlices: a clear log line, the
    // errors counted, retries backed off rather than a hot loop.
    fake.control("forbid", json!({"resources": ["endpointslices"]}));
    let from = fake.requests().len();
    fake.control("drop", json!({}));
    // Four denied requests in a row: at once, then after at least 0.25
    // and 0.5 s (the lower half of the backoff's 0.5 and 1 s). Counted by
    // the fake's clock, as a lower bound: a busy machine only adds to it,
    // and a hot loop would make the four in milliseconds.
    let denied = || -> Vec<f64> {
        fake.requests()[from..]
            .iter()
            .filter(|r| r["status"] == 403)
            .map(|r| r["time"].as_f64().unwrap_or(0.0))
            .collect()
    };
    let started = Instant::now();
    while denied().len() < 4 && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(50));
    }
    let times = denied();
    assert!(times.len() >= 4, "retried after a denial: {times:?}");
    assert!(
        times[3] - times[0] >= 0.7,
        "backed off, not a hot loop: denied at {times:?}"
    );
    assert!(server.logged("RBAC must allow the verbs list and watch on endpointslices.discovery.k8s.io"));
    let errors = server.metric_sum("clusterdns_kubernetes_watch_errors_total", "EndpointSlice");
    assert!(errors >= 1.0, "{}", server.metrics());
    assert_eq!(status_of(&server, "svc-0.default.svc.cluster.local.").1, ["10.96.1.1"]);
}

#[test]
fn malformed_objects_are_logged_and_skipped_without_losing_the_rest() {
    let dir = dir("apisem-malformed");
    let fake = Fake::start(&dir, &["--page", "500"]);
    let conf = cluster(&fake, &dir, 3, None);
    // In the same list page as good ones: a port that is not a number.
    fake.apply(
        "services",
        json!({"metadata": {"name": "bad", "namespace": "default"},
                                  "spec": {"clusterIP": "10.96.9.9", "ports": [{"port": "eighty"}]}}),
    );
    fake.apply("services", service("default", "zzz", "10.96.9.10"));
    let server = Server::start(&dir, &conf);
    assert_eq!(status_of(&server, "svc-2.default.svc.cluster.local.").1, ["10.96.1.3"]);
    assert_eq!(status_of(&server, "zzz.default.svc.cluster.local.").1, ["10.96.9.10"]);
    assert!(server.logged("skipped malformed object Service default/bad"));
    // In the watch: a good Service turns unreadable, then another change.
    fake.apply(
        "services",
        json!({"metadata": {"name": "svc-0", "namespace": "default"},
                                  "spec": {"clusterIP": "10.96.1.1", "clusterIPs": "10.96.1.1"}}),
    );
    fake.apply("services", service("default", "next", "10.96.9.11"));
    eventually(&server, "next.default.svc.cluster.local.", "NOERROR", &["10.96.9.11"]);
    assert!(server.logged("skipped malformed object Service default/svc-0"));
    let invalid = server.metric_sum("clusterdns_kubernetes_invalid_objects_total", "Service");
    assert!(invalid >= 2.0, "{}", server.metrics());
    // Its resourceVersion was taken: a resume does not meet it again.
    let from = fake.requests().len();
    fake.control("drop", json!({}));
    fake.apply("services", service("default", "later", "10.96.9.12"));
    eventually(&server, "later.default.svc.cluster.local.", "NOERROR", &["10.96.9.12"]);
    assert!(fake.requests()[from..].iter().all(|r| r["status"] != 410));
}
