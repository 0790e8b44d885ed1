//! A small cluster in the fake API server, and queries against a server
//! watching it (for the watch-path tests).

use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;
use loadtest::fakeapi::FakeApi;
use serde_json::json;

use super::{udp, Server};

pub fn corefile(api: &FakeApi) -> String {
    corefile_with(api, "")
}

/// The Corefile with extra `kubernetes` options.
pub fn corefile_with(api: &FakeApi, options: &str) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local in-addr.arpa {{\n        endpoint {}\n        ttl 5\n        {options}\n    }}\n}}\n",
        api.url()
    )
}

pub fn namespace(name: &str) -> serde_json::Value {
    json!({"metadata": {"name": name}})
}

pub fn service(ns: &str, name: &str, ip: &str) -> serde_json::Value {
    json!({"metadata": {"name": name, "namespace": ns}, "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
}

pub fn headless_slice(ns: &str, svc: &str, ips: &[&str]) -> serde_json::Value {
    let eps: Vec<_> = ips
        .iter()
        .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
        .collect();
    json!({"metadata": {"name": format!("{svc}-abc"), "namespace": ns, "labels": {"kubernetes.io/service-name": svc}},
           "addressType": "IPv4", "endpoints": eps, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
}

/// The A records of `name`, as text ("NXDOMAIN"/"SERVFAIL" when negative).
pub fn a(server: &Server, name: &str) -> Vec<String> {
    let m = udp(server.dns, name, RecordType::A);
    let rcode = super::rcode_name(&m);
    if rcode != "NOERROR" {
        return vec![rcode];
    }
    let mut v: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
    v.sort();
    v
}

/// Polls until `name` answers `want` (a 60 s ceiling that only a hang
/// reaches).
pub fn eventually(server: &Server, name: &str, want: &[&str]) -> Duration {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if a(server, name) == want {
            return started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{name}: wanted {want:?}, still {:?}", a(server, name));
}

pub fn cluster(rt: &tokio::runtime::Runtime) -> FakeApi {
    let api = rt.block_on(FakeApi::start()).expect("fake api");
    api.put("namespaces", namespace("default"));
    api.put("namespaces", namespace("db"));
    api.put("services", service("default", "kubernetes", "10.96.0.1"));
    api.put("services", json!({"metadata": {"name": "pg", "namespace": "db"}, "spec": {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}}));
    api.put("endpointslices", headless_slice("db", "pg", &["10.1.0.1", "10.1.0.2"]));
    api
}
