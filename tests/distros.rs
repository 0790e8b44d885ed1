//! Every distribution's default Corefile in `zones/distros/` (their sources
//! are named in each file's first comment) passes `clusterdns check`
//! unchanged, then serves a cluster name and a forwarded name.
//!
//! To serve, the test changes only what ties a file to a real node, and
//! nothing else:
//!
//! | in the file                                   | becomes                                        |
//! |-----------------------------------------------|------------------------------------------------|
//! | each server key's port (`.:53`, `:5353`, ...) | one free port, plus `bind 127.0.0.1`          |
//! | `health`, `ready`, `prometheus` addresses     | `127.0.0.1:0`                                  |
//! | the `kubernetes` block                        | gains `snapshot zones/cluster.yaml` (no API)   |
//! | `/etc/resolv.conf`                            | a resolv.conf naming the stub upstream         |
//! | `/etc/coredns/NodeHosts`                      | a NodeHosts file with one node                 |
//! | `/etc/coredns/custom/`, `custom/`             | an empty `custom/` directory beside the file   |
//!
//! Some files need plugins other branches bring (`template` for AKS,
//! `rewrite` for Gardener, `dns64` for kops on IPv6): they are listed here
//! as expected to pass all the same.

mod common;

use std::path::{Path, PathBuf};

use common::stub::Stub;
use common::{check, demo_cluster, free_port, run, temp_dir, Server};

fn distros() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("zones/distros")
}

/// `text` with the substitutions in the table above.
fn for_test(text: &str, dir: &Path, port: u16) -> String {
    let text = text
        .replace("/etc/resolv.conf", &dir.join("resolv.conf").display().to_string())
        .replace("/etc/coredns/NodeHosts", &dir.join("NodeHosts").display().to_string())
        .replace("/etc/coredns/custom/", &format!("{}/", dir.join("custom").display()));
    let mut out = Vec::new();
    let mut depth = 0usize;
    for line in text.lines() {
        let trimmed = line.trim();
        let first = trimmed.split_whitespace().next().unwrap_or("");
        if depth == 0 && trimmed.ends_with('{') && !trimmed.starts_with('(') {
            let keys: Vec<String> = trimmed
                .trim_end_matches('{')
                .split_whitespace()
                .map(|k| format!("{}:{port}", k.rsplit_once(':').map_or(k, |(zone, _)| zone)))
                .collect();
            out.push(format!("{} {{\n    bind 127.0.0.1", keys.join(" ")));
        } else if depth == 1 && matches!(first, "health" | "ready" | "prometheus") {
            let block = if trimmed.ends_with('{') { " {" } else { "" };
            out.push(format!("    {first} 127.0.0.1:0{block}"));
        } else if depth == 1 && first == "kubernetes" {
            let snapshot = format!("snapshot {}", demo_cluster().display());
            if trimmed.ends_with('{') {
                out.push(format!("{line}\n        {snapshot}"));
            } else {
                out.push(format!("{line} {{\n        {snapshot}\n    }}"));
            }
        } else {
            out.push(line.to_string());
        }
        if !trimmed.starts_with('#') {
            depth += trimmed.matches('{').count();
            depth = depth.saturating_sub(trimmed.matches('}').count());
        }
    }
    out.join("\n") + "\n"
}

/// `dig @server ARGS...` (one try, short timeout), stdout.
fn dig(server: &Server, args: &[&str]) -> String {
    let port = server.port();
    let mut all = vec!["@127.0.0.1", "-p", &port, "+tries=1", "+time=3"];
    all.extend_from_slice(args);
    run("dig", &all)
}

/// Checks `name`'s file unchanged, serves it, asks a cluster name and a
/// forwarded name; `more` asks what is particular to the distribution.
fn distro(name: &str, more: impl Fn(&Server, &Stub)) {
    let file = distros().join(format!("{name}.Corefile"));
    let (status, stderr) = check(&file);
    assert!(status.success(), "{name}: check failed:\n{stderr}");
    let dir = temp_dir(&format!("distro-{name}"));
    std::fs::create_dir_all(dir.join("custom")).expect("custom dir");
    let stub = Stub::start();
    std::fs::write(dir.join("resolv.conf"), format!("nameserver {}\n", stub.addr)).expect("resolv.conf");
    std::fs::write(dir.join("NodeHosts"), "172.18.0.2 node-1\n").expect("NodeHosts");
    let text = std::fs::read_to_string(&file).expect("read distro file");
    let server = Server::start(&dir, &for_test(&text, &dir, free_port()));
    let cluster = dig(&server, &["kubernetes.default.svc.cluster.local", "A"]);
    assert!(cluster.contains("status: NOERROR"), "{name}: {cluster}");
    assert!(cluster.contains("\t10.96.0.1\n"), "{name}: {cluster}");
    let forwarded = dig(&server, &["+short", "www.example.org", "A"]);
    assert_eq!(forwarded.trim(), "192.0.2.1", "{name}");
    assert!(stub.count() >= 1, "{name}: the upstream was asked");
    more(&server, &stub);
}

fn nothing(_: &Server, _: &Stub) {}

#[test]
fn kubeadm() {
    distro("kubeadm", nothing);
}

#[test]
fn minikube() {
    distro("minikube", |s, _| {
        assert_eq!(
            dig(s, &["+short", "host.minikube.internal", "A"]).trim(),
            "192.168.49.1"
        );
    });
}

#[test]
fn k3s() {
    distro("k3s", |s, _| {
        // NodeHosts names the nodes; custom/ is empty (globs match nothing).
        assert_eq!(dig(s, &["+short", "node-1", "A"]).trim(), "172.18.0.2");
    });
}

#[test]
fn rke1() {
    distro("rke1", nothing);
}

#[test]
fn rke2() {
    distro("rke2", nothing);
}

#[test]
fn eks() {
    distro("eks", nothing);
}

#[test]
fn aks() {
    distro("aks", |s, stub| {
        let before = stub.count();
        let nx = dig(s, &["a.b.c.d.internal.cloudapp.net", "A"]);
        assert!(nx.contains("status: NXDOMAIN"), "{nx}");
        let nx = dig(s, &["x.reddog.microsoft.com", "AAAA"]);
        assert!(nx.contains("status: NXDOMAIN"), "{nx}");
        assert_eq!(stub.count(), before, "template answered without the upstream");
    });
}

#[test]
fn openshift() {
    distro("openshift", |s, _| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
        let txt = dig(s, &["+short", "CH", "TXT", "hostname.bind"]);
        assert_eq!(txt.trim(), format!("\"{}\"", host.trim()));
    });
}

#[test]
fn kubespray() {
    distro("kubespray", nothing);
}

#[test]
fn kops_ipv4() {
    distro("kops-ipv4", nothing);
}

#[test]
fn kops_ipv6() {
    distro("kops-ipv6", |s, _| {
        // dns64 translates for IPv6 clients only unless `allow_ipv4` (as
        // CoreDNS): this test's client is on 127.0.0.1, so the AAAA stays
        // empty and the A is answered (tests/dns64.rs covers ::1 clients).
        let aaaa = dig(s, &["+short", "www.example.org", "AAAA"]);
        assert_eq!(aaaa.trim(), "");
        let a = dig(s, &["+short", "www.example.org", "A"]);
        assert_eq!(a.trim(), "192.0.2.1");
    });
}

#[test]
fn microk8s() {
    distro("microk8s", nothing);
}

#[test]
fn talos() {
    distro("talos", nothing);
}

#[test]
fn gardener() {
    distro("gardener", |s, _| {
        // rewrite: a name doubled by the search path is answered as the service.
        let doubled = dig(s, &["kubernetes.default.svc.cluster.local.svc.cluster.local", "A"]);
        assert!(doubled.contains("status: NOERROR"), "{doubled}");
        assert!(doubled.contains("10.96.0.1"), "{doubled}");
    });
}

#[test]
fn k0s() {
    distro("k0s", nothing);
}

#[test]
fn coredns_helm() {
    distro("coredns-helm", nothing);
}

#[test]
fn ovhcloud() {
    distro("ovhcloud", nothing);
}

/// A file added to zones/distros/ must get a test above.
#[test]
fn every_distribution_file_is_tested() {
    let tested = [
        "aks",
        "coredns-helm",
        "eks",
        "gardener",
        "k0s",
        "k3s",
        "kops-ipv4",
        "kops-ipv6",
        "kubeadm",
        "kubespray",
        "microk8s",
        "minikube",
        "openshift",
        "ovhcloud",
        "rke1",
        "rke2",
        "talos",
    ];
    let mut found: Vec<String> = std::fs::read_dir(distros())
        .expect("zones/distros")
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".Corefile").map(str::to_string))
        .collect();
    found.sort();
    assert_eq!(found, tested);
    for name in tested {
        let text = std::fs::read_to_string(distros().join(format!("{name}.Corefile"))).expect("read");
        assert!(
            text.starts_with("# Source: "),
            "{name}: the first comment names the source"
        );
    }
}
