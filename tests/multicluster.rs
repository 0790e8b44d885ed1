//! Multi-cluster Services (KEP-1645) through the API source: the real
//! binary watches ServiceImports and labelled EndpointSlices in the
//! project's fake API server and answers `clusterset.local` per the MCS DNS
//! specification as objects come, change and go; a cluster without the MCS
//! CRDs still becomes ready, and serves the imports once the CRDs are
//! installed. The snapshot source and CoreDNS's own rows are in
//! `tests/coredns/multicluster.table`.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{cluster, namespace};
use common::{rcode_name, tcp, temp_dir, Server};
use hickory_proto::rr::RecordType;
use loadtest::fakeapi::FakeApi;
use serde_json::{json, Value};

fn corefile(api: &FakeApi) -> String {
    format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    kubernetes cluster.local clusterset.local in-addr.arpa {{\n        endpoint {}\n        multicluster clusterset.local\n    }}\n}}\n",
        api.url()
    )
}

fn import(ns: &str, name: &str, kind: &str, ips: &[&str]) -> Value {
    json!({"metadata": {"name": name, "namespace": ns},
           "spec": {"type": kind, "ips": ips, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
}

/// One cluster's slice of an imported service: `(address, hostname, ready)`.
fn slice(ns: &str, svc: &str, cluster: &str, eps: &[(&str, Option<&str>, bool)]) -> Value {
    let eps: Vec<Value> = eps
        .iter()
        .map(|(ip, host, ready)| json!({"addresses": [ip], "hostname": host, "conditions": {"ready": ready}}))
        .collect();
    json!({"metadata": {"name": format!("{svc}-{cluster}"), "namespace": ns,
                        "labels": {"multicluster.kubernetes.io/service-name": svc,
                                   "multicluster.kubernetes.io/source-cluster": cluster}},
           "addressType": "IPv4", "endpoints": eps, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
}

/// `RCODE` then the answer records' data, sorted.
fn ask(server: &Server, name: &str, qtype: RecordType) -> Vec<String> {
    let m = tcp(server.dns, name, qtype);
    let mut data: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
    data.sort();
    data.insert(0, rcode_name(&m));
    data
}

/// Polls until `name` answers `want` (bounded: 30 s).
fn eventually(server: &Server, name: &str, qtype: RecordType, want: &[&str]) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if ask(server, name, qtype) == want {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{name} {qtype}: wanted {want:?}, still {:?}", ask(server, name, qtype));
}

const A: RecordType = RecordType::A;

#[test]
fn clusterset_names_follow_imports_and_their_clusters() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.put("namespaces", namespace("shop"));
    api.put("serviceimports", import("shop", "web", "ClusterSetIP", &["10.200.0.5"]));
    api.put("serviceimports", import("shop", "db", "Headless", &[]));
    api.put(
        "endpointslices",
        slice(
            "shop",
            "db",
            "east",
            &[("10.1.1.1", Some("db-0"), true), ("10.1.1.2", None, true)],
        ),
    );
    api.put(
        "endpointslices",
        slice("shop", "db", "west", &[("10.2.1.1", None, true)]),
    );
    // An address the cluster zone names already (db/pg's endpoint) keeps that PTR.
    api.put(
        "endpointslices",
        slice("shop", "db", "north", &[("10.1.0.1", None, true)]),
    );
    let server = Server::start(&temp_dir("mcs-api"), &corefile(&api));
    let set = "svc.clusterset.local.";
    assert_eq!(ask(&server, &format!("web.shop.{set}"), A), ["NOERROR", "10.200.0.5"]);
    assert_eq!(
        ask(&server, &format!("db.shop.{set}"), A),
        ["NOERROR", "10.1.0.1", "10.1.1.1", "10.1.1.2", "10.2.1.1"],
        "every ready endpoint of every cluster"
    );
    assert_eq!(
        ask(&server, &format!("db-0.east.db.shop.{set}"), A),
        ["NOERROR", "10.1.1.1"]
    );
    assert_eq!(
        ask(&server, &format!("10-2-1-1.west.db.shop.{set}"), A),
        ["NOERROR", "10.2.1.1"]
    );
    assert_eq!(ask(&server, &format!("10-2-1-1.east.db.shop.{set}"), A), ["NXDOMAIN"]);
    assert_eq!(
        ask(&server, &format!("east.db.shop.{set}"), A),
        ["NOERROR"],
        "a cluster: NODATA"
    );
    assert_eq!(
        ask(&server, &format!("east.web.shop.{set}"), A),
        ["NXDOMAIN"],
        "no cluster names for a ClusterSetIP"
    );
    assert_eq!(ask(&server, "shop.svc.clusterset.local.", A), ["NOERROR"]);
    assert_eq!(
        ask(&server, "dns-version.clusterset.local.", RecordType::TXT),
        ["NOERROR", "1.0.0"]
    );
    assert_eq!(
        ask(&server, "dns-version.cluster.local.", RecordType::TXT),
        ["NOERROR", "1.1.0"]
    );
    assert_eq!(
        ask(&server, "web.shop.svc.cluster.local.", A),
        ["NXDOMAIN"],
        "imports are not Services"
    );
    let srv = ask(&server, &format!("_http._tcp.db.shop.{set}"), RecordType::SRV);
    assert_eq!(srv.len(), 5, "one SRV per endpoint: {srv:?}");
    assert!(srv.contains(&format!("0 25 8080 db-0.east.db.shop.{set}")), "{srv:?}");
    let web_srv = ask(&server, &format!("_http._tcp.web.shop.{set}"), RecordType::SRV);
    assert_eq!(web_srv, ["NOERROR".to_string(), format!("0 100 80 web.shop.{set}")]);
    let ptr = RecordType::PTR;
    assert_eq!(
        ask(&server, "5.0.200.10.in-addr.arpa.", ptr),
        ["NOERROR".to_string(), format!("web.shop.{set}")]
    );
    assert_eq!(
        ask(&server, "1.1.1.10.in-addr.arpa.", ptr),
        ["NOERROR".to_string(), format!("db-0.east.db.shop.{set}")]
    );
    assert_eq!(
        ask(&server, "1.0.1.10.in-addr.arpa.", ptr),
        ["NOERROR", "10-1-0-1.pg.db.svc.cluster.local."],
        "the cluster's own PTR wins"
    );

    // An endpoint becomes unready; then its cluster has none.
    api.put(
        "endpointslices",
        slice("shop", "db", "west", &[("10.2.1.1", None, false)]),
    );
    eventually(
        &server,
        &format!("db.shop.{set}"),
        A,
        &["NOERROR", "10.1.0.1", "10.1.1.1", "10.1.1.2"],
    );
    assert_eq!(ask(&server, &format!("west.db.shop.{set}"), A), ["NXDOMAIN"]);
    assert_eq!(ask(&server, "1.1.2.10.in-addr.arpa.", ptr), ["NXDOMAIN"]);
    // A headless import with no ready endpoint anywhere is NXDOMAIN.
    for c in ["east", "west", "north"] {
        api.delete("endpointslices", "shop", &format!("db-{c}"));
    }
    eventually(&server, &format!("db.shop.{set}"), A, &["NXDOMAIN"]);
    // A ServiceImport deleted: its names and PTR go.
    api.delete("serviceimports", "shop", "web");
    eventually(&server, &format!("web.shop.{set}"), A, &["NXDOMAIN"]);
    assert_eq!(ask(&server, "5.0.200.10.in-addr.arpa.", ptr), ["NXDOMAIN"]);
    // A new ClusterSetIP import with two addresses.
    api.put(
        "serviceimports",
        import("shop", "api", "ClusterSetIP", &["10.200.0.7", "10.200.0.8"]),
    );
    eventually(
        &server,
        &format!("api.shop.{set}"),
        A,
        &["NOERROR", "10.200.0.7", "10.200.0.8"],
    );
}

#[test]
fn a_cluster_without_the_mcs_crds_is_ready_and_says_so_once() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.set_mcs_crd(false);
    // `start` waits for readiness (bounded): the missing CRD must not block it.
    let server = Server::start(&temp_dir("mcs-nocrd"), &corefile(&api));
    assert_eq!(
        ask(&server, "kubernetes.default.svc.cluster.local.", A),
        ["NOERROR", "10.96.0.1"]
    );
    assert_eq!(ask(&server, "web.default.svc.clusterset.local.", A), ["NXDOMAIN"]);
    assert_eq!(
        ask(&server, "default.svc.clusterset.local.", A),
        ["NOERROR"],
        "the namespace exists here"
    );
    let said = |s: &Server| {
        s.log
            .lock()
            .map(|l| {
                l.iter()
                    .filter(|l| l.contains("the MCS CRDs are not installed"))
                    .count()
            })
            .unwrap_or(0)
    };
    let started = Instant::now();
    while said(&server) == 0 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(said(&server), 1, "logged once");
}

/// The MCS CRDs installed after clusterdns starts: the cluster zone is
/// ready and answers meanwhile, and the imports appear without a restart
/// (the missing CRD is looked for again within seconds at first).
#[test]
fn mcs_crds_installed_later_are_picked_up_without_restart() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    api.set_mcs_crd(false);
    let server = Server::start(&temp_dir("mcs-latecrd"), &corefile(&api));
    assert_eq!(
        ask(&server, "kubernetes.default.svc.cluster.local.", A),
        ["NOERROR", "10.96.0.1"],
        "the cluster zone is ready without the CRDs"
    );
    assert_eq!(ask(&server, "db.default.svc.clusterset.local.", A), ["NXDOMAIN"]);
    api.set_mcs_crd(true);
    api.put(
        "serviceimports",
        import("default", "db", "ClusterSetIP", &["10.200.0.7"]),
    );
    eventually(
        &server,
        "db.default.svc.clusterset.local.",
        A,
        &["NOERROR", "10.200.0.7"],
    );
    assert_eq!(
        ask(&server, "kubernetes.default.svc.cluster.local.", A),
        ["NOERROR", "10.96.0.1"]
    );
}
