//! `metadata` labels other plugins set, seen from outside: the
//! `kubernetes/...` labels of the query name (CoreDNS's
//! plugin/kubernetes/metadata.go) in the `log` line of a block serving
//! the demo cluster's snapshot, and `geoip`'s labels of the request's ECS
//! address (`geoip { edns-subnet }`) read by `template` (`.Meta`) without
//! any `view` in the server. `trace/traceid` is tests/trace.rs's.

mod common;

use common::dig::dig;
use common::{demo_cluster, needs, temp_dir, Server};

#[test]
fn kubernetes_labels_in_the_log_line() {
    let labels = [
        "kind",
        "namespace",
        "service",
        "endpoint",
        "port-name",
        "protocol",
        "parse-error",
    ];
    let format: Vec<String> = labels.iter().map(|l| format!("{{/kubernetes/{l}}}")).collect();
    let corefile = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    metadata\n    log . \"k8s {{name}} {}\"\n    \
         kubernetes cluster.local {{\n        snapshot {}\n    }}\n}}\n",
        format.join(" "),
        demo_cluster().display()
    );
    let dir = temp_dir("metadata-k8s");
    let server = Server::start(&dir, &corefile);
    let asked = [
        ("_dns._udp.kube-dns.kube-system.svc.cluster.local", "SRV"),
        ("kube-dns.kube-system.svc.cluster.local", "A"),
        ("10-0-0-1.default.pod.cluster.local", "A"),
        ("a.b.c.kube-dns.kube-system.svc.cluster.local", "A"),
    ];
    for (name, qtype) in asked {
        dig(&server, &[name, qtype]);
    }
    // a label set to "" (no such part of the name) is `-`, as in CoreDNS
    for line in [
        "k8s _dns._udp.kube-dns.kube-system.svc.cluster.local. svc kube-system kube-dns - dns udp -",
        "k8s kube-dns.kube-system.svc.cluster.local. svc kube-system kube-dns - - - -",
        "k8s 10-0-0-1.default.pod.cluster.local. pod default 10-0-0-1 - - - -",
        "k8s a.b.c.kube-dns.kube-system.svc.cluster.local. - - - - - - invalid request",
    ] {
        assert!(server.logged(line), "{line}");
    }
}

#[test]
fn template_reads_geoip_labels_of_the_ecs_address() {
    let Some(_) = needs("metadata", common::mmdb::python(), common::mmdb::INSTALL) else {
        return;
    };
    let dir = temp_dir("metadata-geoip");
    let db = dir.join("views.mmdb");
    common::mmdb::write("views", &db).expect("mmdb written");
    let corefile = format!(
        r#"example.com:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    geoip {} {{
        edns-subnet
    }}
    metadata
    template IN TXT {{
        answer "{{{{ .Name }}}} 60 IN TXT \"{{{{ .Meta \"geoip/country/code\" }}}}\""
    }}
}}
"#,
        db.display()
    );
    let server = Server::start(&dir, &corefile);
    let txt = |extra: &[&str]| {
        let args = [&["www.example.com", "TXT"][..], extra].concat();
        common::dig::short_from(&server, "127.0.0.1", &args)
    };
    // the client's address (127.0.0.1: NL), then the ECS address's (127.0.0.2: GB)
    assert_eq!(txt(&[]), "\"NL\"");
    assert_eq!(txt(&["+subnet=127.0.0.2/32"]), "\"GB\"");
    assert_eq!(txt(&["+subnet=127.0.0.2/32", "+tcp"]), "\"GB\"");
}

/// `forward/upstream`: the upstream asked, in the log line of a
/// forwarded query (`ADDRESS:PORT`); a cache hit asked none (`-`).
#[test]
fn forward_upstream_in_the_log_line() {
    let stub = common::stub::Stub::start();
    let corefile = format!(
        ".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    metadata\n    \
         log . \"fwd {{name}} {{/forward/upstream}}\"\n    cache\n    forward . {}\n}}\n",
        stub.addr
    );
    let dir = temp_dir("metadata-forward");
    let server = Server::start(&dir, &corefile);
    assert_eq!(dig(&server, &["www.example.net", "A"]).status, "NOERROR");
    let line = format!("fwd www.example.net. {}", stub.addr);
    assert!(server.logged(&line), "{line}");
    assert_eq!(dig(&server, &["www.example.net", "A"]).status, "NOERROR");
    assert!(server.logged("fwd www.example.net. -"), "the cache hit");
}
