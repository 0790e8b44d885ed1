//! The API source through control-plane trouble: prompt resume and relist,
//! backoff only for repeated failures, `persist` (a warm restart while the
//! API is down, corrupt files ignored) and `resync` drift healing, against
//! the project's fake API server.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{a, cluster, corefile_with, eventually, service};
use common::{http_get, temp_dir, Server};
use loadtest::fakeapi::Fault;

/// Waits (bounded) until the server's log has a line containing `needle`.
/// The ceiling of every wait for an event here: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

#[test]
fn every_watch_dropped_after_compaction_then_changes_are_served_by_a_relist() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.put("services", service("default", "doomed", "10.96.0.66"));
    let server = Server::start(&temp_dir("recover-410"), &corefile_with(&api, ""));
    eventually(&server, "doomed.default.svc.cluster.local.", &["10.96.0.66"]);
    // A Service is deleted and another created while the API server
    // restarts with its history compacted: every watch is dropped and
    // only a relist can see the changes.
    api.delete_unannounced("services", "default", "doomed");
    api.put_unannounced("services", service("default", "fresh", "10.96.0.67"));
    api.restart();
    // (how soon is loadtest/bench's business; here: served, by a relist)
    eventually(&server, "doomed.default.svc.cluster.local.", &["NXDOMAIN"]);
    eventually(&server, "fresh.default.svc.cluster.local.", &["10.96.0.67"]);
    assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
    assert!(
        server.logged("Service: relisting (expired)"),
        "{:?}",
        server.log.lock().map(|l| l.clone())
    );
    let relists = "clusterdns_kubernetes_watch_restarts_total{kind=\"Service\",action=\"relist\",reason=\"expired\"}";
    assert!(server.metric(relists) >= 1.0, "{}", server.metrics());
    // A clean end of every watch (no compaction): resumed at once.
    api.drop_streams();
    api.put("services", service("default", "later", "10.96.0.68"));
    eventually(&server, "later.default.svc.cluster.local.", &["10.96.0.68"]);
    let resumes =
        "clusterdns_kubernetes_watch_restarts_total{kind=\"Service\",action=\"resume\",reason=\"watch_ended\"}";
    assert!(server.metric(resumes) >= 1.0, "{}", server.metrics());
}

#[test]
fn repeated_failures_back_off() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let server = Server::start(&temp_dir("recover-backoff"), &corefile_with(&api, ""));
    api.set_fault(Fault::Status(500));
    let before = api.requests();
    let started = Instant::now();
    // Per kind: at once, then after at least 0.25, 0.5 and 1 s (the lower
    // half of the backoff's 0.5, 1 and 2 s). 13 requests over three kinds
    // hold five in a row of one kind, so they take at least 1.75 s: a
    // lower bound, which a busy machine only lengthens; a busy loop makes
    // them in milliseconds.
    while api.requests() - before < 13 && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (during, took) = (api.requests() - before, started.elapsed());
    assert!(during >= 13, "retried: {during} requests in {took:?}");
    assert!(
        took >= Duration::from_millis(1700),
        "backed off: {during} requests in {took:?}"
    );
    assert!(server.log_contains("next in"), "the wait is logged");
    assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
    api.set_fault(Fault::None);
    api.put("services", service("default", "back", "10.96.0.70"));
    eventually(&server, "back.default.svc.cluster.local.", &["10.96.0.70"]);
}

#[test]
fn a_restart_during_an_outage_serves_the_persisted_state_then_reconciles() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let dir = temp_dir("recover-persist");
    let state = dir.join("state").join("kubernetes.state");
    let conf = corefile_with(&api, &format!("persist {}", state.display()));
    let server = Server::start(&dir, &conf);
    api.put("services", service("default", "gone-later", "10.96.0.80"));
    eventually(&server, "gone-later.default.svc.cluster.local.", &["10.96.0.80"]);
    let changed = Instant::now();
    let mut saved = false;
    while !saved && changed.elapsed() < HANG {
        saved = std::fs::read(&state).is_ok_and(|b| b.windows(10).any(|w| w == b"gone-later"));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(saved, "state not saved ({:?} after the change)", changed.elapsed());
    drop(server);

    // The API server is down; meanwhile a Service is deleted.
    api.set_fault(Fault::Outage);
    api.delete("services", "default", "gone-later");
    let started = Instant::now();
    let server = Server::spawn(&dir, &conf);
    let name = "kubernetes.default.svc.cluster.local.";
    while a(&server, name) != ["10.96.0.1"] && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    // answered with the API still down: from disk
    assert_eq!(a(&server, name), ["10.96.0.1"], "not answered from disk");
    assert_eq!(a(&server, "gone-later.default.svc.cluster.local."), ["10.96.0.80"]);
    assert_eq!(a(&server, "pg.db.svc.cluster.local."), ["10.1.0.1", "10.1.0.2"]);
    assert!(http_get(server.ready, "/ready").starts_with("HTTP/1.1 200"));
    assert!(server.logged("not yet confirmed by the API"));
    assert_eq!(server.metric("clusterdns_kubernetes_state_unconfirmed"), 1.0);
    assert!(server.metric("clusterdns_kubernetes_unconfirmed_state_age_seconds") >= 0.0);

    // The API returns: the deletion made during the outage is served.
    api.set_fault(Fault::None);
    eventually(&server, "gone-later.default.svc.cluster.local.", &["NXDOMAIN"]);
    assert_eq!(a(&server, name), ["10.96.0.1"]);
    assert!(server.logged("reconciled with the API"));
    assert_eq!(server.metric("clusterdns_kubernetes_state_unconfirmed"), 0.0);
}

#[test]
fn corrupt_or_foreign_state_files_are_ignored_with_a_log_line() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.set_fault(Fault::Status(503));
    let dir = temp_dir("recover-corrupt");
    let state = dir.join("kubernetes.state");
    let conf = corefile_with(
        &api,
        &format!("persist {}\n        startup_timeout 0s", state.display()),
    );
    let cases: [(&[u8], &str); 3] = [
        (b"clusterdns-state\x01\0\0\0 cut short", "truncated or corrupt"),
        (b"{\"kind\": \"List\"}", "not a clusterdns state file"),
        (b"", "not a clusterdns state file"),
    ];
    for (content, reason) in cases {
        std::fs::write(&state, content).expect("write state");
        let server = Server::spawn(&dir, &conf);
        assert!(server.logged(reason), "{reason}");
        assert!(server.log_contains("ignored"));
        assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["SERVFAIL"]);
        assert!(http_get(server.ready, "/ready").starts_with("HTTP/1.1 503"));
        assert!(server.is_running());
    }
}

#[test]
fn resync_corrects_what_the_watch_missed_without_disturbing_answers() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.put("services", service("default", "drifted", "10.96.0.90"));
    api.put("services", service("default", "ghost", "10.96.0.91"));
    let server = Server::start(&temp_dir("recover-resync"), &corefile_with(&api, "resync 2s"));
    eventually(&server, "drifted.default.svc.cluster.local.", &["10.96.0.90"]);
    // Changed behind every watch's back: only a list can see it.
    api.put_unannounced("services", service("default", "drifted", "10.96.0.92"));
    let started = Instant::now();
    while a(&server, "drifted.default.svc.cluster.local.") != ["10.96.0.92"] && started.elapsed() < HANG {
        assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
        assert_eq!(a(&server, "pg.db.svc.cluster.local."), ["10.1.0.1", "10.1.0.2"]);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(a(&server, "drifted.default.svc.cluster.local."), ["10.96.0.92"]);
    let corrections = "clusterdns_kubernetes_resync_corrections_total{kind=\"Service\"}";
    assert!(server.metric(corrections) >= 1.0, "{}", server.metrics());
    assert!(server.log_contains("Service: relisting (resync)"));
    assert_eq!(a(&server, "ghost.default.svc.cluster.local."), ["10.96.0.91"]);
}
