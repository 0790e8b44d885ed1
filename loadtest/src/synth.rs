//! Synthetic clusters for the fake API server: `namespaces` namespaces,
//! `services` Services spread over them, each with one EndpointSlice of
//! `endpoints` ready endpoints. Addresses are deterministic, so a test or
//! benchmark knows every answer in advance.

use serde_json::{json, Value};

use crate::fakeapi::FakeApi;

/// The shape of a synthetic cluster.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub namespaces: usize,
    pub services: usize,
    pub endpoints: usize,
}

/// `(namespace, name)` of service `i`.
pub fn service_name(shape: &Shape, i: usize) -> (String, String) {
    (format!("ns-{}", i % shape.namespaces.max(1)), format!("svc-{i}"))
}

/// The cluster IP of service `i` (with `generation` bumped on changes).
pub fn cluster_ip(i: usize, generation: usize) -> String {
    let n = i + generation * 1_000_000;
    format!("10.{}.{}.{}", 96 + (n >> 16) % 64, (n >> 8) & 255, n & 255)
}

pub fn service(shape: &Shape, i: usize, generation: usize) -> Value {
    let (ns, name) = service_name(shape, i);
    let ip = cluster_ip(i, generation);
    json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
           "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}})
}

pub fn slice(shape: &Shape, i: usize) -> Value {
    let (ns, name) = service_name(shape, i);
    let eps: Vec<Value> = (0..shape.endpoints)
        .map(|e| {
            let n = i * shape.endpoints + e;
            json!({"addresses": [format!("10.{}.{}.{}", 128 + (n >> 16) % 64, (n >> 8) & 255, n & 255)], "conditions": {"ready": true},
                   "targetRef": {"kind": "Pod", "name": format!("{name}-{e}"), "namespace": ns}})
        })
        .collect();
    json!({"metadata": {"name": format!("{name}-x1"), "namespace": ns, "labels": {"kubernetes.io/service-name": name},
                        "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2026-11-22T00:00:00Z"}},
           "addressType": "IPv4", "endpoints": eps, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
}

/// The whole cluster as one kubectl JSON dump (`kubectl get ... -o json`).
pub fn dump(shape: &Shape) -> String {
    let mut items: Vec<Value> = (0..shape.namespaces)
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{n}")}}))
        .collect();
    for i in 0..shape.services {
        let mut s = service(shape, i, 0);
        s["apiVersion"] = json!("v1");
        s["kind"] = json!("Service");
        items.push(s);
        let mut e = slice(shape, i);
        e["apiVersion"] = json!("discovery.k8s.io/v1");
        e["kind"] = json!("EndpointSlice");
        items.push(e);
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// Puts the whole cluster into `api`.
pub fn populate(api: &FakeApi, shape: &Shape) {
    for n in 0..shape.namespaces {
        api.put("namespaces", json!({"metadata": {"name": format!("ns-{n}")}}));
    }
    for i in 0..shape.services {
        api.put("services", service(shape, i, 0));
        if shape.endpoints > 0 {
            api.put("endpointslices", slice(shape, i));
        }
    }
}

/// ServiceImport `i` (`imp-i`, a ClusterSetIP import in service `i`'s
/// namespace) with its ClusterSetIP of `generation`.
pub fn import(shape: &Shape, i: usize, generation: usize) -> Value {
    let (ns, _) = service_name(shape, i);
    json!({"metadata": {"name": format!("imp-{i}"), "namespace": ns},
           "spec": {"type": "ClusterSetIP", "ips": [import_ip(i, generation)],
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
}

/// The ClusterSetIP of import `i` (from 11.0.0.0/8).
pub fn import_ip(i: usize, generation: usize) -> String {
    let n = i + generation * 1_000_000;
    format!("11.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255)
}

/// Cluster `c`'s EndpointSlice of import `i`: `shape.endpoints` ready
/// endpoints from 12.0.0.0/6.
pub fn import_slice(shape: &Shape, i: usize, c: usize) -> Value {
    let (ns, _) = service_name(shape, i);
    let eps: Vec<Value> = (0..shape.endpoints)
        .map(|e| {
            let n = (i * 8 + c) * shape.endpoints + e;
            json!({"addresses": [format!("{}.{}.{}.{}", 12 + (n >> 24) % 4, (n >> 16) & 255, (n >> 8) & 255, n & 255)],
                   "conditions": {"ready": true}})
        })
        .collect();
    json!({"metadata": {"name": format!("imp-{i}-c{c}"), "namespace": ns,
                        "labels": {"multicluster.kubernetes.io/service-name": format!("imp-{i}"),
                                   "multicluster.kubernetes.io/source-cluster": format!("cluster-{c}")}},
           "addressType": "IPv4", "endpoints": eps, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
}

/// Puts `count` ServiceImports into `api`, each with a slice from each of
/// `clusters` clusters.
pub fn populate_imports(api: &FakeApi, shape: &Shape, count: usize, clusters: usize) {
    for i in 0..count {
        api.put("serviceimports", import(shape, i, 0));
        for c in 0..clusters {
            api.put("endpointslices", import_slice(shape, i, c));
        }
    }
}

/// Pod `i`: Running, in namespace `i % namespaces`, one IP from 10.192.0.0/10.
pub fn pod(shape: &Shape, i: usize) -> Value {
    let ns = format!("ns-{}", i % shape.namespaces.max(1));
    let ip = format!("10.{}.{}.{}", 192 + (i >> 16) % 64, (i >> 8) & 255, i & 255);
    json!({"metadata": {"name": format!("pod-{i}"), "namespace": ns, "labels": {"app": format!("app-{}", i % 1000)}},
           "spec": {"nodeName": format!("node-{}", i % 500), "containers": [{"name": "main", "image": "registry.example/app:1"}]},
           "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "192.168.0.1"}})
}

/// Puts `count` Pods into `api`.
pub fn populate_pods(api: &FakeApi, shape: &Shape, count: usize) {
    for i in 0..count {
        api.put("pods", pod(shape, i));
    }
}

/// Seconds since the Unix epoch as RFC 3339 UTC (`2026-11-22T10:00:00Z`),
/// the form of `endpoints.kubernetes.io/last-change-trigger-time`.
pub fn rfc3339(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_314_195), "2026-11-22T02:23:15Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
