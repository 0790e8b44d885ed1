//! `trace` end to end: a tiny Zipkin collector in the test (a std
//! `TcpListener` answering `202 Accepted`) collects the v2 JSON batches
//! the server POSTs to `/api/v2/spans`; queries asked with dig come back
//! as `servedns` SERVER spans tagged as CoreDNS's trace plugin tags them
//! (`coredns.io/name`, `/type`, `/proto`, `/remote`, `/rcode`), each with
//! a child span named after the plugin that answered; `every N` sends one
//! query in N; a collector that is down or stalls loses spans, counted in
//! `clusterdns_trace_spans_dropped_total` by reason, and the queries are
//! answered all the same. The same collector stands in for a Datadog
//! agent: `trace datadog` PUTs v0.3 JSON (an array of traces, each an
//! array of spans) to `/v0.3/traces`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::dig::dig;
use common::{temp_dir, Server};
use serde_json::Value;

/// A ceiling only a hang reaches.
const HANG: Duration = Duration::from_secs(30);

/// The collector: every span of every batch POSTed, and the paths asked.
#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Value>>>,
    /// The method and path of every request.
    paths: Arc<Mutex<Vec<String>>>,
    /// The `X-Datadog-Trace-Count` headers.
    trace_counts: Arc<Mutex<Vec<usize>>>,
}

impl Collector {
    /// Listens on a loopback port; `stall`: connections are held, never answered.
    fn start(stall: bool) -> (Collector, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind collector");
        let addr = listener.local_addr().expect("addr");
        let c = Collector::default();
        let kept = c.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming().flatten() {
                if stall {
                    held.push(conn);
                    continue;
                }
                let _ = kept.take(conn);
            }
        });
        (c, addr)
    }

    /// Reads one request (headers, Content-Length body) and answers 202.
    fn take(&self, conn: std::net::TcpStream) -> std::io::Result<()> {
        let mut r = BufReader::new(conn.try_clone()?);
        let mut line = String::new();
        r.read_line(&mut line)?;
        let path = line.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        let mut length = 0;
        loop {
            let mut h = String::new();
            r.read_line(&mut h)?;
            if h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if k.eq_ignore_ascii_case("x-datadog-trace-count") {
                    let n = v.trim().parse().expect("a count");
                    self.trace_counts.lock().expect("collector lock").push(n);
                }
            }
        }
        let mut body = vec![0; length];
        r.read_exact(&mut body)?;
        let batch: Value = serde_json::from_slice(&body).expect("a JSON body");
        // Zipkin: an array of spans; Datadog: an array of traces of spans
        let mut spans = self.spans.lock().expect("collector lock");
        for item in batch.as_array().expect("a JSON array") {
            match item.as_array() {
                Some(trace) => spans.extend(trace.iter().cloned()),
                None => spans.push(item.clone()),
            }
        }
        self.paths.lock().expect("collector lock").push(path);
        (&conn).write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    }

    /// The root spans, once there are at least `n` (a ceiling only a hang reaches).
    fn roots(&self, n: usize) -> Vec<Value> {
        self.roots_when(|roots| roots.len() >= n)
    }

    /// The root spans, once one is the query for `name`.
    fn roots_until(&self, name: &str) -> Vec<Value> {
        self.roots_when(|roots| roots.iter().any(|s| s["tags"]["coredns.io/name"] == name))
    }

    /// The root spans, once `enough` says so of them (a ceiling only a hang reaches).
    fn roots_when(&self, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let roots: Vec<Value> = self
                .spans
                .lock()
                .expect("collector lock")
                .iter()
                .filter(|s| s["name"] == "servedns")
                .cloned()
                .collect();
            if enough(&roots) || started.elapsed() >= HANG {
                return roots;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The names of the spans under `root`, each the only child of the one
/// before (ids and parents named by `keys`).
fn passed(spans: &[Value], root: &Value, (id, parent): (&str, &str)) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = root.clone();
    while let Some(child) = spans.iter().find(|s| s[parent] == at[id]) {
        assert_eq!(spans.iter().filter(|s| s[parent] == at[id]).count(), 1, "{spans:#?}");
        names.push(child["name"].as_str().unwrap_or("?").to_string());
        at = child.clone();
    }
    names
}

fn corefile(collector: &str, options: &str) -> String {
    format!(
        r#"example.org:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    trace {collector} {{
        zipkin_max_batch_interval 100ms
{options}
    }}
    template IN A example.org {{
        answer "{{{{ .Name }}}} 60 IN A 192.0.2.5"
    }}
    template IN TXT example.org {{
        rcode NXDOMAIN
    }}
}}
"#
    )
}

#[test]
fn spans_reach_the_collector_tagged_as_coredns_tags_them() {
    let (collector, addr) = Collector::start(false);
    let dir = temp_dir("trace");
    let server = Server::start(&dir, &corefile(&format!("zipkin {addr}"), "        service dnsproxy"));
    assert_eq!(dig(&server, &["a.example.org", "A"]).status, "NOERROR");
    assert_eq!(dig(&server, &["b.example.org", "TXT", "+tcp"]).status, "NXDOMAIN");
    let roots = collector.roots(2);
    assert_eq!(roots.len(), 2, "{roots:#?}\n{}", server.metrics());
    let by_name = |n: &str| {
        roots
            .iter()
            .find(|s| s["tags"]["coredns.io/name"] == n)
            .cloned()
            .expect(n)
    };
    let (a, b) = (by_name("a.example.org."), by_name("b.example.org."));
    for (span, qtype, proto, rcode) in [(&a, "A", "udp", "NOERROR"), (&b, "TXT", "tcp", "NXDOMAIN")] {
        assert_eq!(span["kind"], "SERVER", "{span}");
        assert_eq!(span["tags"]["coredns.io/type"], qtype, "{span}");
        assert_eq!(span["tags"]["coredns.io/proto"], proto, "{span}");
        assert_eq!(span["tags"]["coredns.io/remote"], "127.0.0.1", "{span}");
        assert_eq!(span["tags"]["coredns.io/rcode"], rcode, "{span}");
        assert_eq!(span["localEndpoint"]["serviceName"], "dnsproxy", "{span}");
        assert_eq!(span["localEndpoint"]["ipv4"], "127.0.0.1", "{span}");
        assert_eq!(span["traceId"].as_str().map(str::len), Some(16), "{span}");
        assert!(
            span["timestamp"].as_u64().is_some_and(|t| t > 1_600_000_000_000_000),
            "{span}"
        );
        assert!(span["duration"].as_u64().is_some_and(|d| d >= 1), "{span}");
        assert!(span.get("parentId").is_none(), "{span}");
    }
    // the plugins passed, each span the child of the one before, as CoreDNS's chain
    let spans = collector.spans.lock().expect("collector lock").clone();
    assert_eq!(passed(&spans, &a, ("id", "parentId")), ["prometheus", "template"]);
    assert!(collector
        .paths
        .lock()
        .expect("collector lock")
        .iter()
        .all(|p| p == "POST /api/v2/spans"));
    let sent = |s: &Server| s.metric_sum("clusterdns_trace_spans_sent_total", "");
    let started = Instant::now();
    // two queries, each a root and the two plugins it passed
    while started.elapsed() < HANG && sent(&server) < 6.0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sent(&server), 6.0, "{}", server.metrics());
}

#[test]
fn every_n_sends_one_query_in_n() {
    let (collector, addr) = Collector::start(false);
    let dir = temp_dir("trace-every");
    let server = Server::start(
        &dir,
        &corefile(&format!("http://{addr}/api/v2/spans"), "        every 3"),
    );
    for i in 0..12 {
        assert_eq!(dig(&server, &[&format!("q{i}.example.org"), "A"]).status, "NOERROR");
    }
    // spans leave in the order they were served, a batch at a time: once
    // the twelfth query's root is in, any other sampled root is too
    let roots = collector.roots_until("q11.example.org.");
    let names: Vec<&str> = roots
        .iter()
        .filter_map(|s| s["tags"]["coredns.io/name"].as_str())
        .collect();
    // the third, sixth, ninth and twelfth (CoreDNS counts from 1 and traces when N divides the count)
    assert_eq!(
        names,
        [
            "q2.example.org.",
            "q5.example.org.",
            "q8.example.org.",
            "q11.example.org."
        ],
        "{names:?}"
    );
}

/// `clusterdns_trace_spans_dropped_total{reason}` once it is at least
/// `n` (a ceiling only a hang reaches).
fn dropped(server: &Server, reason: &str, n: f64) -> f64 {
    let having = format!("reason=\"{reason}\"");
    let started = Instant::now();
    loop {
        let v = server.metric_sum("clusterdns_trace_spans_dropped_total", &having);
        if v >= n || started.elapsed() >= HANG {
            return v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn lost_spans_are_counted_and_queries_answered() {
    // nobody listens: each batch fails to send
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let dir = temp_dir("trace-down");
    let server = Server::start(&dir, &corefile(&closed.to_string(), ""));
    assert_eq!(dig(&server, &["a.example.org", "A"]).status, "NOERROR");
    assert!(dropped(&server, "send", 2.0) >= 2.0, "{}", server.metrics());
    // a collector that never answers: one batch in flight, the backlog of 1 full, the rest dropped
    let (_, stalled) = Collector::start(true);
    let options = "        zipkin_max_backlog_size 1\n        zipkin_max_batch_size 1";
    let dir = temp_dir("trace-stall");
    let server = Server::start(&dir, &corefile(&stalled.to_string(), options));
    for i in 0..6 {
        assert_eq!(dig(&server, &[&format!("s{i}.example.org"), "A"]).status, "NOERROR");
    }
    assert!(dropped(&server, "backlog", 8.0) >= 8.0, "{}", server.metrics());
}

#[test]
fn datadog_spans_reach_the_agent_api() {
    let (agent, addr) = Collector::start(false);
    let dir = temp_dir("trace-datadog");
    let options = "        service dnsproxy\n        datadog_analytics_rate 0.5";
    let server = Server::start(&dir, &corefile(&format!("datadog {addr}"), options));
    assert_eq!(dig(&server, &["a.example.org", "A"]).status, "NOERROR");
    assert_eq!(dig(&server, &["b.example.org", "TXT", "+tcp"]).status, "NXDOMAIN");
    let roots = agent.roots(2);
    assert_eq!(roots.len(), 2, "{roots:#?}\n{}", server.metrics());
    for (name, qtype, proto, rcode) in [
        ("a.example.org.", "A", "udp", "NOERROR"),
        ("b.example.org.", "TXT", "tcp", "NXDOMAIN"),
    ] {
        let span = roots.iter().find(|s| s["meta"]["coredns.io@name"] == name).expect(name);
        assert_eq!(span["resource"], "servedns", "{span}");
        assert_eq!(span["service"], "dnsproxy", "{span}");
        assert_eq!(span["type"], "dns", "{span}");
        assert_eq!(span["meta"]["coredns.io@type"], qtype, "{span}");
        assert_eq!(span["meta"]["coredns.io@proto"], proto, "{span}");
        assert_eq!(span["meta"]["coredns.io@remote"], "127.0.0.1", "{span}");
        assert_eq!(span["meta"]["coredns.io@rcode"], rcode, "{span}");
        assert_eq!(span["metrics"]["_dd1.sr.eausr"], 0.5, "{span}");
        assert_eq!(span["parent_id"], 0, "{span}");
        assert_eq!(span["span_id"], span["trace_id"], "{span}");
        assert!(span["trace_id"].as_u64().is_some_and(|t| t > 0), "{span}");
        assert!(
            span["start"].as_u64().is_some_and(|t| t > 1_600_000_000_000_000_000),
            "{span}"
        );
        assert!(span["duration"].as_u64().is_some_and(|d| d >= 1), "{span}");
        assert_eq!(span["error"], 0, "{span}");
    }
    // the plugins passed: children of the root, in the same trace
    let a = roots.iter().find(|s| s["meta"]["coredns.io@name"] == "a.example.org.");
    let a = a.expect("a's root");
    let spans = agent.spans.lock().expect("collector lock").clone();
    assert_eq!(passed(&spans, a, ("span_id", "parent_id")), ["prometheus", "template"]);
    let child = spans
        .iter()
        .find(|s| s["parent_id"] == a["span_id"])
        .expect("a child span");
    assert_eq!(
        (&child["trace_id"], &child["service"]),
        (&a["trace_id"], &Value::from("dnsproxy"))
    );
    let paths = agent.paths.lock().expect("collector lock").clone();
    assert!(paths.iter().all(|p| p == "PUT /v0.3/traces"), "{paths:?}");
    let counts: usize = agent.trace_counts.lock().expect("collector lock").iter().sum();
    assert_eq!(counts, 2, "one trace per query");
}

/// `trace/traceid`: the log line of a traced query names its trace (the
/// root span's id as Zipkin writes it), an untraced one `-`.
#[test]
fn the_trace_id_is_a_metadata_label() {
    let (collector, addr) = Collector::start(false);
    let dir = temp_dir("trace-id");
    let text = corefile(&format!("zipkin {addr}"), "        every 2").replace(
        "    template IN A",
        "    metadata\n    log . \"traced {name} {/trace/traceid}\"\n    template IN A",
    );
    let server = Server::start(&dir, &text);
    for name in ["one.example.org", "two.example.org"] {
        assert_eq!(dig(&server, &[name, "A"]).status, "NOERROR");
    }
    let roots = collector.roots(1);
    let id = roots[0]["traceId"].as_str().expect("a trace id").to_string();
    assert_eq!(roots[0]["tags"]["coredns.io/name"], "two.example.org.");
    let started = Instant::now();
    let line = format!("traced two.example.org. {id}");
    while started.elapsed() < HANG && !server.log_contains(&line) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.log_contains(&line), "{line}");
    assert!(server.log_contains("traced one.example.org. -"));
}
