//! `/metrics` from a live server after real queries: valid Prometheus text
//! (promtool), CoreDNS's names and label sets, and search-expansion counts
//! that match a known query mix exactly. Plus lameduck on SIGTERM and a
//! never-ending request cut by the server (reloads: tests/reload_admin.rs).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::stub::Stub;
use common::{http_get, query, tcp, temp_dir, udp, udp_raw, value, Server};
use hickory_proto::rr::RecordType;

#[test]
fn metrics_are_coredns_compatible_and_count_search_expansions_exactly() {
    let stub = Stub::start();
    let dir = temp_dir("metrics");
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    health 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n    forward . {}\n    cache 30\n}}\n",
        common::demo_cluster().display(),
        stub.addr
    );
    let server = Server::start(&dir, &text);
    // The mix: one pod's walk for www.example.com (ndots:5) from namespace
    // shop, one for a short name of another namespace, real names, and
    // plain misses.
    let mix: [(&str, &str); 9] = [
        ("www.example.com.shop.svc.cluster.local.", "NXDOMAIN"), // namespace
        ("www.example.com.svc.cluster.local.", "NXDOMAIN"),      // svc
        ("www.example.com.cluster.local.", "NXDOMAIN"),          // zone
        ("www.example.com.", "NOERROR"),                         // forwarded
        ("redis.svc.cluster.local.", "NXDOMAIN"),                // svc
        ("redis.cluster.local.", "NXDOMAIN"),                    // zone
        ("missing.shop.svc.cluster.local.", "NXDOMAIN"),         // a missing Service: not an expansion
        ("web.shop.svc.cluster.local.", "NOERROR"),
        ("kubernetes.default.svc.cluster.local.", "NOERROR"),
    ];
    for (name, want) in mix {
        assert_eq!(
            common::rcode_name(&udp(server.dns, name, RecordType::A)),
            want,
            "{name}"
        );
    }
    // again, from the reply memo: counted the same
    for (name, _) in mix {
        udp(server.dns, name, RecordType::A);
    }
    tcp(server.dns, "web.shop.svc.cluster.local.", RecordType::AAAA);
    let mut dnssec = query(5, "kubernetes.default.svc.cluster.local.", RecordType::A, Some(1232));
    let n = dnssec.len();
    dnssec[n - 4] |= 0x80; // DO bit in the OPT TTL
    udp_raw(server.dns, &dnssec).expect("reply");
    http_get(server.admin("health").expect("health"), "/health");

    let text = server.metrics();
    if let Some(verdict) = common::promtool_check(&text, &dir.join("metrics.txt")) {
        assert_eq!(verdict, Ok(()), "promtool");
    }
    assert_catalogued(&text);
    let server_label = "server=\"dns://127.0.0.1:0\",zone=\".\",view=\"\"";
    let get = |series: &str| value(&text, series);
    for (suffix, want) in [("namespace", 2.0), ("svc", 4.0), ("zone", 4.0)] {
        let series = format!("clusterdns_search_expansion_nxdomain_total{{{server_label},suffix=\"{suffix}\"}}");
        assert_eq!(get(&series), want, "{series}\n{text}");
    }
    assert_eq!(get(&format!("clusterdns_nxdomain_total{{{server_label}}}")), 12.0);
    assert_eq!(
        get(&format!(
            "coredns_dns_requests_total{{{server_label},proto=\"udp\",family=\"1\",type=\"A\"}}"
        )),
        19.0
    );
    assert_eq!(
        get(&format!(
            "coredns_dns_requests_total{{{server_label},proto=\"tcp\",family=\"1\",type=\"AAAA\"}}"
        )),
        1.0
    );
    assert_eq!(
        get(&format!(
            "coredns_dns_responses_total{{{server_label},rcode=\"NXDOMAIN\",plugin=\"kubernetes\"}}"
        )),
        12.0
    );
    assert_eq!(
        get(&format!(
            "coredns_dns_responses_total{{{server_label},rcode=\"NOERROR\",plugin=\"forward\"}}"
        )),
        1.0
    );
    assert_eq!(
        get(&format!(
            "coredns_dns_responses_total{{{server_label},rcode=\"NOERROR\",plugin=\"cache\"}}"
        )),
        1.0
    );
    assert_eq!(get(&format!("coredns_dns_do_requests_total{{{server_label}}}")), 1.0);
    assert_eq!(
        get(&format!("coredns_dns_request_duration_seconds_count{{{server_label}}}")),
        20.0
    );
    assert!(
        get(&format!(
            "coredns_dns_request_duration_seconds_bucket{{{server_label},le=\"0.00025\"}}"
        )) >= 1.0
    );
    assert_eq!(
        get(&format!(
            "coredns_dns_request_size_bytes_count{{{server_label},proto=\"tcp\"}}"
        )),
        1.0
    );
    assert!(
        get(&format!(
            "coredns_dns_response_size_bytes_bucket{{{server_label},proto=\"udp\",le=\"+Inf\"}}"
        )) == 19.0
    );
    for name in ["kubernetes", "forward", "cache", "prometheus", "health", "ready"] {
        let series = format!("coredns_plugin_enabled{{{server_label},name=\"{name}\"}}");
        assert_eq!(get(&series), 1.0, "{series}");
    }
    assert_eq!(
        common::sum_of(&text, "coredns_cache_hits_total", "type=\"success\""),
        1.0
    );
    assert_eq!(
        common::sum_of(&text, "coredns_cache_requests_total", "zones=\".\""),
        2.0
    );
    assert_eq!(
        common::sum_of(&text, "coredns_cache_misses_total", "server=\"dns://127.0.0.1:0\""),
        1.0
    );
    assert_eq!(
        common::sum_of(
            &text,
            "coredns_proxy_request_duration_seconds_count",
            "rcode=\"NOERROR\""
        ),
        1.0
    );
    assert!(get("coredns_health_request_duration_seconds_count") >= 1.0);
    assert_eq!(get("clusterdns_client_requests_total{namespace=\"unknown\"}"), 20.0);
    for family in [
        "coredns_build_info{",
        "coredns_panics_total ",
        "coredns_reload_failed_total ",
        "coredns_autopath_success_total ",
        "coredns_health_request_failures_total ",
        "coredns_forward_max_concurrent_rejects_total ",
        "coredns_forward_healthcheck_broken_total ",
        "coredns_proxy_healthcheck_failures_total{proxy_name=\"forward\",to=",
        "coredns_cache_entries{server=",
        "coredns_cache_prefetch_total{server=",
        "coredns_cache_served_stale_total{server=",
        "coredns_cache_evictions_total{server=",
        "coredns_proxy_request_duration_seconds_bucket{proxy_name=\"forward\",to=",
        "coredns_kubernetes_dns_programming_duration_seconds_bucket{service_kind=",
        "process_resident_memory_bytes ",
        "process_cpu_seconds_total ",
        "process_open_fds ",
        "process_start_time_seconds ",
        "clusterdns_requests_in_flight ",
        "clusterdns_udp_kernel_drops ",
        "clusterdns_truncated_responses_total{",
    ] {
        assert!(text.lines().any(|l| l.starts_with(family)), "missing {family}");
    }
    assert!(get("process_resident_memory_bytes") > 1e6);
}

/// Every family on the page is in `metrics::catalogue` or a plugin's own
/// list (`query::plugins::PER_BLOCK`) with the same type and help, and
/// every series carries exactly the listed labels (a histogram's `le`
/// aside): those are the one list of what `/metrics` shows.
fn assert_catalogued(text: &str) {
    use clusterdns::metrics::catalogue::ALL;
    use clusterdns::query::plugins::PER_BLOCK;
    let family = |name: &str| {
        let plugins = PER_BLOCK.iter().flat_map(|f| f.iter());
        ALL.iter().chain(plugins).find(|f| f.name == name)
    };
    let mut seen = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let f = family(name).unwrap_or_else(|| panic!("{name} is not in metrics::catalogue"));
            assert_eq!(f.help, help, "{name}");
            seen += 1;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            assert_eq!(family(name).map(|f| f.kind), Some(kind), "{name}");
        } else {
            let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
            let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|sfx| {
                    name.strip_suffix(sfx)
                        .filter(|b| family(b).is_some_and(|f| f.kind == "histogram"))
                })
                .unwrap_or(name);
            let f = family(base).unwrap_or_else(|| panic!("{line}: {base} is not in metrics::catalogue"));
            let names: Vec<&str> = labels
                .trim_end_matches('}')
                .split("\",")
                .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
                .filter(|k| *k != "le")
                .collect();
            assert_eq!(names, f.labels, "{line}");
        }
    }
    assert!(seen > 50, "only {seen} families on the page");
}

#[test]
fn sigterm_lameduck_fails_health_at_once_keeps_answering_then_exits_zero() {
    let dir = temp_dir("lameduck");
    let text = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    health 127.0.0.1:0 {{\n        lameduck 3s\n    }}\n    kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
        common::demo_cluster().display()
    );
    let mut server = Server::start(&dir, &text);
    let health = server.admin("health").expect("health address");
    assert!(http_get(health, "/health").starts_with("HTTP/1.1 200"));
    let status = Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let signalled = Instant::now();
    let running = |s: &mut Server| s.wait_exit(Duration::from_millis(1)).is_none();
    while !http_get(health, "/health").starts_with("HTTP/1.1 503") && signalled.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Ordered, not timed: health fails, ready fails, queries are still
    // served, and only then (the lameduck's 3 s later) the process exits.
    assert!(
        http_get(health, "/health").starts_with("HTTP/1.1 503"),
        "health never failed"
    );
    assert!(running(&mut server), "health failed only at the exit");
    assert!(http_get(server.ready, "/ready").starts_with("HTTP/1.1 503"));
    let (mut sent, mut failed) = (0, 0);
    while sent < 100 {
        let reply = udp_raw(
            server.dns,
            &query(
                sent as u16,
                "kubernetes.default.svc.cluster.local.",
                RecordType::A,
                None,
            ),
        );
        sent += 1;
        if !reply.is_some_and(|r| r.len() > 3 && r[3] & 0x0f == 0) {
            failed += 1;
        }
    }
    assert!(running(&mut server), "still serving after {sent} queries");
    assert_eq!(failed, 0, "{failed} of {sent} failed during lameduck");
    let exit = server
        .wait_exit(Duration::from_secs(10))
        .expect("exits after the lameduck");
    assert_eq!(exit.code(), Some(0));
    assert!(
        signalled.elapsed() >= Duration::from_secs(3),
        "not before the lameduck ends"
    );
}

// A SIGTERM the moment the server says it listens is a graceful stop: the
// handlers are installed before any listener, so the default action (killed
// by the signal, no lameduck, no drain) never happens. Before the fix, 10 of
// 30 such stops were kills; repeated here to make the race show.
#[test]
fn sigterm_as_soon_as_listening_is_a_graceful_exit() {
    let dir = temp_dir("sigterm-early");
    let text = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    whoami\n}\n";
    for round in 0..8 {
        let mut server = Server::spawn(&dir, text);
        let status = Command::new("kill")
            .args(["-TERM", &server.pid().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = server.wait_exit(Duration::from_secs(10)).expect("exits");
        assert_eq!(exit.code(), Some(0), "round {round}: {exit:?}");
    }
}

// CoreDNS plugin/metrics/metrics_test.go TestMetricsHTTPTimeout: a request
// that never finishes is cut by the server (a read timeout), not held.
#[test]
fn a_metrics_request_that_never_ends_is_closed_by_the_server() {
    use std::io::{Read, Write};
    let dir = temp_dir("metrics-timeout");
    let text = ".:0 {\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    cache\n}\n";
    let server = Server::start(&dir, text);
    // Logged right after the ready listener it shares: waited for (5 s).
    let started = Instant::now();
    while server.admin("metrics").is_none() && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = server.admin("metrics").expect("metrics address");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 100\r\n\r\n"
    )
    .expect("send");
    let mut buf = [0u8; 1024];
    // Closed (0 bytes, an HTTP error, or a reset), never a read that
    // outlasts our 30 s guard.
    match s.read(&mut buf) {
        Ok(n) => assert!(n == 0 || buf[..n].starts_with(b"HTTP/1.1 "), "{:?}", &buf[..n]),
        Err(e) => assert!(
            !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
            "the server held the connection: {e}"
        ),
    }
}
