//! `kubernetes { namespace_labels SELECTOR }`: only namespaces whose labels
//! match are served, names in the others answer as if the namespace did
//! not exist. Checked by `clusterdns check` (accepted selectors printed in
//! the effective configuration, bad ones refused at their position), and
//! over the wire with the real binary: watching the fake API server while
//! namespaces are relabelled, created, deleted and relisted; restarting
//! from a persisted state during an API outage; and from a `snapshot`
//! dump that changes.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::{a, corefile_with, eventually, headless_slice, service};
use common::{rcode_name, temp_dir, udp, Server};
use hickory_proto::rr::RecordType;
use loadtest::fakeapi::{FakeApi, Fault};
use serde_json::{json, Value};

/// A Namespace with `labels`.
fn namespace(name: &str, labels: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}})
}

/// `default` (labelled `dns=on`) holding `kubernetes`, and `db` (not
/// labelled) holding the ClusterIP Service `web` and the headless `pg`.
fn cluster(rt: &tokio::runtime::Runtime) -> FakeApi {
    let api = rt.block_on(FakeApi::start()).expect("fake api");
    api.put("namespaces", namespace("default", json!({"dns": "on"})));
    api.put("namespaces", namespace("db", json!({"team": "data"})));
    api.put("services", service("default", "kubernetes", "10.96.0.1"));
    api.put("services", service("db", "web", "10.96.0.60"));
    api.put(
        "services",
        json!({"metadata": {"name": "pg", "namespace": "db"}, "spec": {"clusterIP": "None"}}),
    );
    api.put("endpointslices", headless_slice("db", "pg", &["10.1.0.1"]));
    api
}

/// The rcode of `name`/`qtype`.
fn rcode(server: &Server, name: &str, qtype: RecordType) -> String {
    rcode_name(&udp(server.dns, name, qtype))
}

/// The PTR targets of `name`, or its rcode when negative.
fn ptr(server: &Server, name: &str) -> Vec<String> {
    let m = udp(server.dns, name, RecordType::PTR);
    match rcode_name(&m).as_str() {
        "NOERROR" => m.answers.iter().map(|r| r.data.to_string()).collect(),
        other => vec![other.to_string()],
    }
}

/// `clusterdns check` of a Corefile with `options` in its `kubernetes`
/// block (from line 3, column 9): exit status, stdout and stderr.
fn check(dir: &Path, options: &str) -> (bool, String, String) {
    let conf = dir.join("Corefile");
    let text = format!(".:53 {{\n    kubernetes cluster.local {{\n        {options}\n    }}\n}}\n");
    std::fs::write(&conf, text).expect("write Corefile");
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf"])
        .arg(&conf)
        .output()
        .expect("run clusterdns check");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn selectors_are_printed_when_valid_and_refused_at_their_position_when_not() {
    let dir = temp_dir("nslabels-check");
    for (written, printed) in [
        (
            "namespace_labels istio-injection=enabled",
            "namespace_labels istio-injection=enabled",
        ),
        (
            "namespace_labels team in (a, b),!legacy",
            "namespace_labels team in (a,b),!legacy",
        ),
        (
            "namespace_labels env notin (dev), kubernetes.io/metadata.name",
            "namespace_labels env notin (dev),kubernetes.io/metadata.name",
        ),
        (
            "namespace_labels tier!=web,owner==me",
            "namespace_labels tier!=web,owner=me",
        ),
        // Kubernetes reads `()` as the set of the empty value, and needs no
        // space before the parenthesis
        ("namespace_labels env in ()", "namespace_labels env in ()"),
        ("namespace_labels env notin(a,b)", "namespace_labels env notin (a,b)"),
    ] {
        let (ok, out, err) = check(&dir, written);
        assert!(ok, "{written}: {err}");
        assert!(
            out.contains(printed) || err.contains(printed),
            "{written}: printed as {printed}: {out}{err}"
        );
    }
    let conf = dir.join("Corefile").display().to_string();
    for (written, error) in [
        ("namespace_labels", ":3:9: 'namespace_labels' takes at least 1 argument"),
        (
            "namespace_labels a=b c",
            ":3:26: namespace_labels: 'b c' is not a label value",
        ),
        (
            "namespace_labels env in (a",
            ":3:26: namespace_labels: 'env in (a': expected '(v1, v2, ...)' after in",
        ),
        ("namespace_labels =on", ":3:26: namespace_labels: '' is not a label key"),
        (
            "namespace_labels a=-x",
            ":3:26: namespace_labels: '-x' is not a label value",
        ),
        (
            "namespace_labels Bad.IO/x",
            ":3:26: namespace_labels: 'Bad.IO/x' is not a label key",
        ),
        (
            "namespace_labels x>1",
            ":3:26: namespace_labels: 'x>1' is not a label key",
        ),
        (
            "namespaces a b\n        namespace_labels x=y",
            ":4:9: kubernetes: namespaces and namespace_labels cannot both be set",
        ),
    ] {
        let (ok, _, err) = check(&dir, written);
        assert!(!ok, "{written}: refused");
        assert!(
            err.contains(&format!("{conf}{error}")),
            "{written}: wanted {conf}{error}, got {err}"
        );
    }
    // Every error at once: a bad `labels` and a bad `namespace_labels`.
    let (ok, _, err) = check(&dir, "labels a=b c\n        namespace_labels d=e f");
    assert!(!ok);
    assert!(
        err.contains(":3:16: labels:") && err.contains(":4:26: namespace_labels:"),
        "{err}"
    );
}

#[test]
fn a_namespace_relabelled_shows_and_hides_its_names_over_the_watch() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let dir = temp_dir("nslabels-watch");
    let server = Server::start(&dir, &corefile_with(&api, "namespace_labels dns=on"));
    let web = "web.db.svc.cluster.local.";
    assert_eq!(a(&server, "kubernetes.default.svc.cluster.local."), ["10.96.0.1"]);
    assert_eq!(rcode(&server, "default.svc.cluster.local.", RecordType::A), "NOERROR");
    // db does not match: its names do not exist, nor do its PTR records.
    assert_eq!(a(&server, web), ["NXDOMAIN"]);
    assert_eq!(a(&server, "pg.db.svc.cluster.local."), ["NXDOMAIN"]);
    assert_eq!(rcode(&server, "db.svc.cluster.local.", RecordType::A), "NXDOMAIN");
    assert_eq!(
        rcode(&server, "_http._tcp.web.db.svc.cluster.local.", RecordType::SRV),
        "NXDOMAIN"
    );
    assert_eq!(ptr(&server, "60.0.96.10.in-addr.arpa."), ["NXDOMAIN"]);
    assert_eq!(
        ptr(&server, "1.0.96.10.in-addr.arpa."),
        ["kubernetes.default.svc.cluster.local."]
    );

    // db labelled to match: every name of it appears.
    api.put("namespaces", namespace("db", json!({"team": "data", "dns": "on"})));
    eventually(&server, web, &["10.96.0.60"]);
    assert_eq!(a(&server, "pg.db.svc.cluster.local."), ["10.1.0.1"]);
    assert_eq!(rcode(&server, "db.svc.cluster.local.", RecordType::A), "NOERROR");
    assert_eq!(ptr(&server, "60.0.96.10.in-addr.arpa."), ["web.db.svc.cluster.local."]);

    // A Service appears in a namespace that matches, not in one that does not.
    api.put("namespaces", namespace("shop", json!({"dns": "off"})));
    api.put("services", service("shop", "cart", "10.96.0.70"));
    api.put("services", service("db", "cache", "10.96.0.61"));
    eventually(&server, "cache.db.svc.cluster.local.", &["10.96.0.61"]);
    assert_eq!(a(&server, "cart.shop.svc.cluster.local."), ["NXDOMAIN"]);

    // db's label changed back: its names go, the Services stay known.
    api.put("namespaces", namespace("db", json!({"dns": "off"})));
    eventually(&server, web, &["NXDOMAIN"]);
    assert_eq!(a(&server, "cache.db.svc.cluster.local."), ["NXDOMAIN"]);
    assert_eq!(ptr(&server, "60.0.96.10.in-addr.arpa."), ["NXDOMAIN"]);
    // A label changed while no watch saw it is found by the relist.
    api.put_unannounced("namespaces", namespace("shop", json!({"dns": "on"})));
    api.restart();
    eventually(&server, "cart.shop.svc.cluster.local.", &["10.96.0.70"]);
    assert_eq!(a(&server, web), ["NXDOMAIN"], "db still does not match");
    // A matching namespace deleted: its names go with it.
    api.delete("namespaces", "", "default");
    eventually(&server, "kubernetes.default.svc.cluster.local.", &["NXDOMAIN"]);
}

/// The ceiling of a wait for an event: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

/// Waits (until [`HANG`]) for the state file to hold `needle`.
fn saved(state: &Path, needle: &[u8]) -> bool {
    let started = Instant::now();
    while started.elapsed() < HANG {
        if std::fs::read(state).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn a_restart_during_an_outage_serves_the_persisted_filter_and_another_selector_waits_for_the_api() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let dir = temp_dir("nslabels-persist");
    let state = dir.join("kubernetes.state");
    let options = |selector: &str| format!("namespace_labels {selector}\n        persist {}", state.display());
    let server = Server::start(&dir, &corefile_with(&api, &options("dns=on")));
    api.put("services", service("default", "late", "10.96.0.90"));
    eventually(&server, "late.default.svc.cluster.local.", &["10.96.0.90"]);
    assert!(saved(&state, b"late"), "state not saved");
    drop(server);

    api.set_fault(Fault::Outage);
    let server = Server::spawn(&dir, &corefile_with(&api, &options("dns=on")));
    let kubernetes = "kubernetes.default.svc.cluster.local.";
    let started = Instant::now();
    while a(&server, kubernetes) != ["10.96.0.1"] && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        a(&server, kubernetes),
        ["10.96.0.1"],
        "served from disk with the API down"
    );
    assert_eq!(a(&server, "late.default.svc.cluster.local."), ["10.96.0.90"]);
    assert_eq!(
        a(&server, "web.db.svc.cluster.local."),
        ["NXDOMAIN"],
        "db did not match when saved"
    );
    drop(server);

    // Another selector: the saved state (filtered by the old one) is not
    // served, and nothing is NXDOMAIN before the API has been listed.
    let other = format!("{}\n        startup_timeout 0s", options("team=data"));
    let server = Server::spawn(&dir, &corefile_with(&api, &other));
    let started = Instant::now();
    while !server.log_contains("built for another kubernetes block") && started.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.log_contains("built for another kubernetes block"));
    assert_eq!(a(&server, "web.db.svc.cluster.local."), ["SERVFAIL"]);
    assert_eq!(a(&server, kubernetes), ["SERVFAIL"]);
    api.set_fault(Fault::None);
    eventually(&server, "web.db.svc.cluster.local.", &["10.96.0.60"]);
    assert_eq!(a(&server, kubernetes), ["NXDOMAIN"]);
}

/// A `kubectl get -o json` dump: namespace `app` with `labels`, its Service
/// `api`, and the Namespace `kube-system` labelled `dns=on`.
fn dump(labels: Value) -> String {
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system", "labels": {"dns": "on"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app", "labels": labels}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "app"},
         "spec": {"clusterIP": "10.0.0.5", "ports": [{"port": 80}]}},
    ]})
    .to_string()
}

#[test]
fn a_snapshot_dump_relabelled_shows_and_hides_names_and_pods() {
    let dir = temp_dir("nslabels-snapshot");
    let path = dir.join("cluster.json");
    std::fs::write(&path, dump(json!({"dns": "off"}))).expect("write");
    let server = Server::start(
        &dir,
        &common::corefile(&path, "namespace_labels dns in (on, yes)\n        pods insecure"),
    );
    let (api, pod) = ("api.app.svc.cluster.local.", "10-0-0-9.app.pod.cluster.local.");
    assert_eq!(a(&server, api), ["NXDOMAIN"]);
    assert_eq!(a(&server, pod), ["NXDOMAIN"]);
    assert_eq!(a(&server, "10-0-0-9.kube-system.pod.cluster.local."), ["10.0.0.9"]);
    std::fs::write(&path, dump(json!({"dns": "yes"}))).expect("write");
    eventually(&server, api, &["10.0.0.5"]);
    assert_eq!(a(&server, pod), ["10.0.0.9"]);
    assert_eq!(ptr(&server, "5.0.0.10.in-addr.arpa."), ["api.app.svc.cluster.local."]);
    std::fs::write(&path, dump(json!({}))).expect("write");
    eventually(&server, api, &["NXDOMAIN"]);
    assert_eq!(ptr(&server, "5.0.0.10.in-addr.arpa."), ["NXDOMAIN"]);
}

#[test]
fn imports_in_a_namespace_that_does_not_match_are_not_served_in_the_clusterset_zone() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let api = cluster(&rt);
    let import = json!({"metadata": {"name": "web", "namespace": "db"},
        "spec": {"type": "ClusterSetIP", "ips": ["10.200.0.5"], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}});
    api.put("serviceimports", import);
    let corefile = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    kubernetes cluster.local clusterset.local in-addr.arpa {{\n        endpoint {}\n        multicluster clusterset.local\n        namespace_labels dns=on\n    }}\n}}\n",
        api.url()
    );
    let server = Server::start(&temp_dir("nslabels-mcs"), &corefile);
    let web = "web.db.svc.clusterset.local.";
    assert_eq!(a(&server, web), ["NXDOMAIN"]);
    assert_eq!(rcode(&server, "db.svc.clusterset.local.", RecordType::A), "NXDOMAIN");
    assert_eq!(ptr(&server, "5.0.200.10.in-addr.arpa."), ["NXDOMAIN"]);
    api.put("namespaces", namespace("db", json!({"dns": "on"})));
    eventually(&server, web, &["10.200.0.5"]);
    assert_eq!(rcode(&server, "db.svc.clusterset.local.", RecordType::A), "NOERROR");
    assert_eq!(
        ptr(&server, "5.0.200.10.in-addr.arpa."),
        ["web.db.svc.clusterset.local."]
    );
}
