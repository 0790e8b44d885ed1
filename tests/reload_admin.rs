//! The admin endpoints across reloads, as CoreDNS's test/reload_test.go
//! asks them: `/health` and `/metrics` kept by good and failed reloads, a
//! listener a reload removes kept until a restart (with a warning), a stop
//! while a reload is due, and `/ready` naming what is not ready once, not
//! once per reload.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{http_get, tcp, temp_dir, Server};
use hickory_proto::rr::RecordType;

/// A Corefile for the reload test: `marker` is the address hosts answers
/// for marker.example (telling which configuration serves), `extra` more
/// directives.
fn reloadable(marker: u8, extra: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    health 127.0.0.1:0\n    reload 2s 0s\n    cache\n    \
         hosts {{\n        192.0.2.{marker} marker.example\n    }}\n{extra}}}\n"
    )
}

/// Waits (10 s at most) until marker.example answers 192.0.2.`marker`.
fn wait_marker(server: &Server, marker: u8) -> bool {
    let want = format!("192.0.2.{marker}");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let reply = tcp(server.dns, "marker.example.", RecordType::A);
        if reply.answers.iter().any(|r| r.data.to_string() == want) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// The address of admin listener `name`, once logged (5 s at most: the
/// listeners sharing the ready address are logged just after it).
fn admin(server: &Server, name: &str) -> std::net::SocketAddr {
    let started = Instant::now();
    while server.admin(name).is_none() && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    server
        .admin(name)
        .unwrap_or_else(|| panic!("no {name} listener logged"))
}

/// The families CoreDNS's test/reload_test.go looks for after a reload.
fn assert_families(server: &Server, when: &str) {
    let text = http_get(admin(server, "metrics"), "/metrics");
    for family in [
        "coredns_build_info",
        "coredns_cache_entries",
        "coredns_dns_request_duration_seconds",
    ] {
        assert!(text.contains(family), "{when}: no {family} in /metrics");
    }
    assert!(
        http_get(admin(server, "health"), "/health").ends_with("\r\n\r\nOK"),
        "{when}: /health"
    );
}

// CoreDNS test/reload_test.go: TestReload, TestReloadHealth,
// TestReloadMetricsHealth, TestMetricsAvailableAfterReload,
// TestMetricsAvailableAfterReloadAndFailedReload (invalid Corefiles twice,
// then a valid one), TestReloadSeveralTimeMetrics (clusterdns differs: the
// metrics, health and ready listeners change only on restart, with a
// warning; CoreDNS closes the metrics listener a reload removes) and
// TestReloadConcurrentRestartAndStop (SIGTERM while a reload is due: the
// process exits, no deadlock). TestReloadUnreadyPlugin and its two-block
// form need a plugin that is never ready, which clusterdns has not.
#[test]
fn reloads_keep_health_and_metrics_and_a_stop_during_a_reload_exits() {
    let dir = temp_dir("reload-admin");
    let prom = "    prometheus 127.0.0.1:0\n";
    let mut server = Server::start(&dir, &reloadable(1, prom));
    assert!(wait_marker(&server, 1));
    assert_families(&server, "at start");
    let path = dir.join("Corefile");
    std::fs::write(&path, reloadable(2, prom)).expect("rewrite");
    assert!(wait_marker(&server, 2), "reloaded");
    assert_families(&server, "after a reload");
    for (i, junk) in ["    invalid\n", "    invalid\n    invalid2\n"].iter().enumerate() {
        std::fs::write(&path, reloadable(9, &format!("{prom}{junk}"))).expect("break");
        let started = Instant::now();
        let failed = || server.metric("coredns_reload_failed_total");
        while failed() < (i + 1) as f64 && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(failed(), (i + 1) as f64, "failed reload {i}");
    }
    std::fs::write(&path, reloadable(3, prom)).expect("repair");
    assert!(wait_marker(&server, 3), "reloaded after two failed reloads");
    assert_families(&server, "after failed reloads");
    std::fs::write(&path, reloadable(4, "")).expect("no prometheus");
    assert!(wait_marker(&server, 4), "reloaded without prometheus");
    assert!(
        server.log_contains("change only on restart"),
        "the kept listener is warned about"
    );
    assert!(
        server.metrics().contains("coredns_build_info"),
        "served until a restart"
    );
    std::fs::write(&path, reloadable(5, "")).expect("one more change");
    std::thread::sleep(Duration::from_secs(2));
    let status = Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = server.wait_exit(Duration::from_secs(10));
    assert_eq!(exit.and_then(|e| e.code()), Some(0), "exits while reloading");
}

// CoreDNS test/reload_test.go TestReloadUnreadyPlugin and
// TestReloadTwoServerBlocksUnreadyPlugin: after a reload, /ready lists each
// plugin that is not ready once (no duplicates from the old configuration).
// The never-ready plugin is a kubernetes source that never syncs, one per
// block.
#[test]
fn a_reload_lists_each_unready_plugin_once() {
    let dir = temp_dir("reload-unready");
    let never = |zone: &str| {
        format!("    kubernetes {zone} {{\n        endpoint http://127.0.0.1:9\n        startup_timeout 0s\n    }}\n")
    };
    let conf = |marker: u8, second: bool| {
        let mut text = format!(
            ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    reload 2s 0s\n    hosts {{\n        \
             192.0.2.{marker} marker.example\n        fallthrough\n    }}\n{}}}\n",
            never("cluster.local")
        );
        if second {
            text.push_str(&format!(
                "example.org:0 {{\n    bind 127.0.0.1\n{}}}\n",
                never("example.org")
            ));
        }
        text
    };
    let server = Server::spawn(&dir, &conf(1, false));
    let body = |s: &Server| {
        http_get(s.ready, "/ready")
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
    };
    assert_eq!(body(&server).as_deref(), Some("kubernetes"));
    let path = dir.join("Corefile");
    std::fs::write(&path, conf(2, false)).expect("rewrite");
    assert!(wait_marker(&server, 2), "reloaded");
    assert_eq!(body(&server).as_deref(), Some("kubernetes"), "one block, one plugin");
    std::fs::write(&path, conf(3, true)).expect("two blocks");
    assert!(wait_marker(&server, 3), "reloaded into two blocks");
    assert_eq!(body(&server).as_deref(), Some("kubernetes,kubernetes"), "one per block");
}
