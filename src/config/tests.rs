//! Loading whole Corefiles: the demo, kubeadm's default, and broken files
//! whose every error must be reported with its position.

use std::path::PathBuf;

use super::*;

/// Writes `text` to a fresh file in a fresh directory and returns its path.
fn corefile(tag: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clusterdns-config-{tag}-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("Corefile");
    std::fs::write(&path, text).expect("write test Corefile");
    path
}

fn errors_of(tag: &str, text: &str) -> Vec<String> {
    let path = corefile(tag, text);
    match load(&path, 53) {
        Ok(_) => Vec::new(),
        Err(e) => {
            e.0.iter()
                .map(|e| e.to_string().replace(&path.display().to_string(), "Corefile"))
                .collect()
        }
    }
}

#[test]
fn the_demo_corefile_loads() {
    let cfg = load(std::path::Path::new("zones/Corefile"), 53).expect("demo Corefile is valid");
    assert_eq!(cfg.servers.len(), 1);
    assert_eq!(cfg.servers[0].port, 1053);
    let k = cfg.servers[0].kubernetes.as_ref().expect("kubernetes directive");
    assert_eq!(k.pods, PodMode::Insecure);
    assert_eq!(k.ttl, 30);
    assert_eq!(k.source, Source::Snapshot(PathBuf::from("zones/cluster.yaml")));
    assert!(k.falls_through(&Name::from_ascii("1.0.0.10.in-addr.arpa.").expect("name")));
    assert!(!k.falls_through(&Name::from_ascii("x.cluster.local.").expect("name")));
    assert_eq!(cfg.ready.map(|a| a.port()), Some(8181));
}

#[test]
fn kubeadm_default_names_each_directive_not_yet_supported() {
    // kubeadm's default Corefile (v1.33).
    let text = r#".:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"#;
    let errors = errors_of("kubeadm", text);
    let want_lines = [
        "Corefile:13:5: directive 'forward'",
        "Corefile:16:5: directive 'cache'",
        "Corefile:20:5: directive 'loop'",
        "Corefile:21:5: directive 'reload'",
        "Corefile:22:5: directive 'loadbalance'",
    ];
    assert_eq!(errors.len(), want_lines.len(), "{errors:#?}");
    for (got, want) in errors.iter().zip(want_lines) {
        assert!(got.starts_with(want), "{got} should start with {want}");
    }
}

#[test]
fn every_error_is_reported_with_its_position() {
    let text = ".:53 {\n    kubernetes cluster.local {\n        snapshot c.yaml\n        pods sometimes\n        ttl 9999\n        bogus 1\n        labels app in web\n        watch_timeout 0s\n        watch_timeout soon\n    }\n    rewrite name a b\n    errors extra\n    health :notaport\n}\n";
    let errors = errors_of("broken", text);
    let want = [
        "Corefile:4:14: pods: 'sometimes' is not one of disabled, insecure, verified",
        "Corefile:5:13: ttl: 9999 is out of range 0..3600",
        "Corefile:6:9: kubernetes: unknown option 'bogus'",
        "Corefile:7:16: labels: 'app in web': expected '(v1, v2, ...)' after in",
        "Corefile:8:23: watch_timeout: out of range 1s..1h",
        "Corefile:9:23: watch_timeout: 'soon' is not a duration (e.g. 5s)",
        "Corefile:11:5: unknown directive 'rewrite'",
        "Corefile:12:12: 'errors' takes no arguments, got 1",
        "Corefile:13:12: ':notaport' is not a listen address",
    ];
    assert_eq!(errors.len(), want.len(), "{errors:#?}");
    for (got, want) in errors.iter().zip(want) {
        assert!(got.starts_with(want), "{got}\n  should start with\n{want}");
    }
}

#[test]
fn ports_imports_env_and_several_blocks() {
    std::env::set_var("CLUSTERDNS_TEST_ZONE", "cluster.local");
    let dir = corefile("imports", "").parent().map(PathBuf::from).unwrap_or_default();
    std::fs::write(dir.join("common.conf"), "errors\n").expect("write import");
    let text = "(k) {\n  kubernetes {$CLUSTERDNS_TEST_ZONE} {\n    snapshot x.yaml\n  }\n}\n{$CLUSTERDNS_TEST_ZONE} {\n  import k\n  import common.conf\n}\nexample.org:1054 {\n  log\n}\n";
    std::fs::write(dir.join("Corefile"), text).expect("write Corefile");
    let cfg = load(&dir.join("Corefile"), 5353).expect("valid");
    assert_eq!(cfg.servers[0].port, 5353, "-dns.port applies to keys without a port");
    assert_eq!(cfg.servers[0].zones[0].to_string(), "cluster.local.");
    assert!(cfg.servers[0].errors && cfg.servers[0].kubernetes.is_some());
    assert_eq!(cfg.servers[1].port, 1054);
    assert!(cfg.servers[1].log);
}

#[test]
fn same_zone_twice_on_a_port_is_an_error() {
    let errors = errors_of("dup", "a.local:53 {\n}\na.local:53 {\n}\n");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("served twice"));
}

#[test]
fn durations() {
    use std::time::Duration;
    assert_eq!(args::parse_duration("5s"), Some(Duration::from_secs(5)));
    assert_eq!(args::parse_duration("1m30s"), Some(Duration::from_secs(90)));
    assert_eq!(args::parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(args::parse_duration("5"), None);
    assert_eq!(args::parse_duration("s"), None);
}
