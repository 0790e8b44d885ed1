//! Loading whole Corefiles: the demo, kubeadm's default, and broken files
//! whose every error must be reported with its position.

use std::path::PathBuf;

use super::*;
use crate::kubernetes::{PodMode, Source};

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

/// Loads `text` as `/tmp/Corefile`: the config, or every error as text.
pub(crate) fn loaded(text: &str) -> Result<crate::config::Config, Vec<String>> {
    crate::config::load_str(std::path::Path::new("/tmp/Corefile"), text, 53)
        .map_err(|e| e.0.iter().map(ToString::to_string).collect())
}

/// Each `(body, want)`: loading `body` gives exactly one error, starting with `want`.
pub(crate) fn one_error_each<T>(cases: &[(&str, &str)], load: impl Fn(&str) -> Result<T, Vec<String>>) {
    for (body, want) in cases {
        let Err(errors) = load(body) else {
            panic!("{body}: loaded without errors")
        };
        assert_eq!(errors.len(), 1, "{body}: {errors:?}");
        assert!(
            errors[0].starts_with(want),
            "{body}:\n{}\nshould start with\n{want}",
            errors[0]
        );
    }
}

/// The one server block `.:53 { BODY }` of a Corefile at /tmp/Corefile,
/// or every error as `FILE:LINE:COL: message`.
pub(crate) fn server_block(body: &str) -> Result<Server, Vec<String>> {
    let text = format!(".:53 {{\n{body}\n}}\n");
    load_str(std::path::Path::new("/tmp/Corefile"), &text, 53)
        .map(|mut c| c.servers.remove(0))
        .map_err(|ConfigErrors(e)| e.iter().map(ToString::to_string).collect())
}

/// `errors` are exactly `want`, in order (each starting with its line).
pub(crate) fn assert_errors(errors: &[String], want: &[&str]) {
    assert_eq!(errors.len(), want.len(), "{errors:#?}");
    for (got, want) in errors.iter().zip(want) {
        assert!(got.starts_with(want), "{got}\n  should start with\n{want}");
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
fn kubeadm_default_loads_unchanged() {
    // kubeadm's default Corefile (v1.33), with its resolv.conf beside it.
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/zones/kubeadm.Corefile"))
        .expect("zones/kubeadm.Corefile")
        .replace("/etc/resolv.conf", "resolv.conf");
    let path = corefile("kubeadm", &text);
    let dir = path.parent().expect("dir");
    std::fs::write(
        dir.join("resolv.conf"),
        "search x\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n",
    )
    .expect("write");
    let cfg = load(&path, 53).expect("kubeadm's Corefile loads");
    let s = &cfg.servers[0];
    assert_eq!(s.forward.len(), 1);
    assert_eq!(s.forward[0].to.len(), 2);
    assert_eq!(s.forward[0].max_concurrent, 1000);
    let cache = s.cache.as_ref().expect("cache");
    assert_eq!((cache.success.max_ttl, cache.denial.max_ttl), (30, 30));
    let local = Name::from_ascii("web.default.svc.cluster.local.").expect("name");
    let outside = Name::from_ascii("example.org.").expect("name");
    assert!(!cache.caches(&local, false) && !cache.caches(&local, true));
    assert!(cache.caches(&outside, false) && cache.caches(&outside, true));
    assert_eq!(s.loop_detect, Some(false));
    assert!(s.loadbalance.is_some());
    assert_eq!(cfg.reload.map(|r| r.0.as_secs()), Some(30));
}

#[test]
fn forward_and_cache_options_are_checked() {
    let text = ".:53 {\n    forward . 10.0.0.1 tls://1.1.1.1 nofile {\n        policy fastest\n        read_timeout 0s\n        next BOGUS\n        health_check 1s sideways\n        force_tcp\n        prefer_udp\n    }\n    cache 30 {\n        serve_stale 1h sometimes\n        disable neither\n        prefetch 2 1m 500%\n    }\n    reload 1s\n    log {nonsense}\n    autopath @etcd\n}\n";
    let errors = errors_of("forward-errors", text);
    let want = [
        "Corefile:2:38: forward: failed to resolve 'nofile' through the system resolver",
        "Corefile:3:16: policy: 'fastest' is not one of random, round_robin, sequential",
        "Corefile:4:22: read_timeout: must be above 0",
        "Corefile:5:14: next: 'BOGUS' is not an rcode",
        "Corefile:6:25: health_check: unknown option 'sideways'",
        "Corefile:11:24: serve_stale: 'sometimes' is not immediate or verify",
        "Corefile:12:17: disable: 'neither' is not success or denial",
        "Corefile:13:23: prefetch: percentage must be 1%..100%",
        "Corefile:15:5: reload: interval must be at least 2s",
        "Corefile:17:14: autopath: '@etcd' is not a plugin with a search path",
    ];
    assert_errors(&errors, &want);
}

#[test]
fn every_error_is_reported_with_its_position() {
    let text = ".:53 {\n    kubernetes cluster.local {\n        snapshot c.yaml\n        pods sometimes\n        ttl 9999\n        bogus 1\n        labels app in web\n        watch_timeout 0s\n        watch_timeout soon\n    }\n    frobnicate name a b\n    errors extra\n    health :notaport\n}\n";
    let errors = errors_of("broken", text);
    let want = [
        "Corefile:4:14: pods: 'sometimes' is not one of disabled, insecure, verified",
        "Corefile:5:13: ttl: 9999 is out of range 0..3600",
        "Corefile:6:9: kubernetes: unknown option 'bogus'",
        "Corefile:7:16: labels: 'app in web': expected '(v1, v2, ...)' after in",
        "Corefile:8:23: watch_timeout: out of range 1s..1h",
        "Corefile:9:23: watch_timeout: 'soon' is not a duration (e.g. 5s)",
        "Corefile:11:5: unknown directive 'frobnicate'",
        "Corefile:12:12: errors: 'extra' is not a destination",
        "Corefile:13:12: ':notaport' is not a listen address",
    ];
    assert_errors(&errors, &want);
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
    assert!(cfg.servers[0].errors.is_some() && cfg.servers[0].kubernetes.is_some());
    assert_eq!(cfg.servers[1].port, 1054);
    assert!(cfg.servers[1].log.is_some());
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
    assert_eq!(
        crate::corefile::args::parse_duration("5s"),
        Some(Duration::from_secs(5))
    );
    assert_eq!(
        crate::corefile::args::parse_duration("1m30s"),
        Some(Duration::from_secs(90))
    );
    assert_eq!(
        crate::corefile::args::parse_duration("250ms"),
        Some(Duration::from_millis(250))
    );
    assert_eq!(crate::corefile::args::parse_duration("5"), None);
    assert_eq!(crate::corefile::args::parse_duration("s"), None);
}

#[test]
fn timeouts_and_limits_set_the_tcp_limits_and_are_checked() {
    let good = ".:53 {\n    timeouts {\n        read 1s\n        idle 1m\n    }\n    limits {\n        connections 500\n        pipeline 8\n        in_flight 2000\n    }\n}\n";
    let dir = std::env::temp_dir();
    let cfg = super::load_str(&dir.join("Corefile"), good, 53).expect("loads");
    let tcp = cfg.servers[0].tcp;
    assert_eq!(
        (tcp.read.as_secs(), tcp.write.as_secs(), tcp.idle.as_secs()),
        (1, 5, 60),
        "unset timeouts keep CoreDNS's defaults"
    );
    assert_eq!((tcp.connections, tcp.pipeline, cfg.in_flight), (500, 8, 2000));

    let bad = ".:53 {\n    timeouts\n    timeouts {\n        read 0s\n        linger 5s\n        idle\n    }\n    limits {\n        connections 0\n        pipeline many\n        sockets 4\n    }\n}\n";
    let errors = errors_of("tcp-limits", bad);
    let want = [
        "Corefile:2:5: timeouts: needs at least one of read, write, idle",
        "Corefile:4:14: timeouts: read must be between 1s and 24h",
        "Corefile:5:9: timeouts: unknown option 'linger'",
        "Corefile:6:9: 'idle' takes exactly 1 argument, got 0",
        "Corefile:9:21: limits: connections must be at least 1",
        "Corefile:10:18: 'pipeline': 'many' is not a number",
        "Corefile:11:9: limits: unknown option 'sockets'",
    ];
    assert_errors(&errors, &want);
}

#[test]
fn an_empty_import_glob_is_no_error_but_a_missing_file_is() {
    let path = corefile(
        "import-glob",
        ".:53 {\n import custom/*.override\n import nodir/*.conf\n ready\n}\nimport custom/*.server\n",
    );
    let dir = path.parent().expect("dir").to_path_buf();
    std::fs::create_dir_all(dir.join("custom")).expect("custom dir");
    let cfg = load(&path, 53).expect("globs matching nothing load");
    assert_eq!(cfg.servers.len(), 1);
    std::fs::write(dir.join("custom/a.override"), "chaos v1\n").expect("write");
    let cfg = load(&path, 53).expect("loads");
    assert!(cfg.servers[0].has("chaos"), "the override is imported");
    let errors = errors_of("import-missing", ".:53 {\n import custom/missing.conf\n}\n");
    assert_errors(
        &errors,
        &["Corefile:2:9: import 'custom/missing.conf': no snippet or file of that name"],
    );
}

#[test]
fn bind_takes_interfaces_and_except() {
    // plugin/bind/setup_test.go TestSetupBind/6 and /7: `lo` is its addresses.
    let s = server_block("    bind 1.2.3.4 lo").expect("loads");
    assert!(s.bind.contains(&"1.2.3.4".parse().expect("ip")) && s.bind.contains(&"127.0.0.1".parse().expect("ip")));
    let s = server_block("    bind lo {\n        except 127.0.0.1\n    }").expect("loads");
    assert!(
        !s.bind.is_empty() && !s.bind.contains(&"127.0.0.1".parse().expect("ip")),
        "{:?}",
        s.bind
    );
}

#[test]
fn a_zone_file_that_does_not_parse_is_an_error_at_its_directive() {
    let dir = std::env::temp_dir().join(format!("clusterdns-zoneparse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let soa = "@ 3600 IN SOA ns.example.org. admin.example.org. 1 7200 3600 1209600 3600\n";
    std::fs::write(dir.join("good.db"), soa).expect("write");
    std::fs::write(dir.join("bad.db"), format!("{soa}www 3600 IN A not-an-address\n")).expect("write");
    let text = "example.org:53 {\n    file good.db\n}\nexample.net:53 {\n    file bad.db example.net\n    file missing.db\n}\n";
    let got = match load_str(&dir.join("Corefile"), text, 53) {
        Ok(_) => Vec::new(),
        Err(ConfigErrors(e)) => e
            .iter()
            .map(|e| format!("{}:{}: {}", e.pos.line, e.pos.col, e.message))
            .collect(),
    };
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(
        got[0].starts_with("5:5: file: ") && got[0].contains("bad.db does not load"),
        "{got:#?}"
    );
}

/// Keys of one block on several ports are a block per port with the same
/// directives (CoreDNS's TestMultiZoneBlockConfigs); keys on one port stay
/// one block.
#[test]
fn keys_on_several_ports_are_a_block_per_port() {
    let cfg = loaded("example.org:1053 example.net:2053 example.com:1053 {\n    whoami\n}\n").expect("loads");
    let got: Vec<(u16, Vec<String>, usize)> = (cfg.servers.iter())
        .map(|s| {
            (
                s.port,
                s.zones.iter().map(ToString::to_string).collect(),
                s.plugins.len(),
            )
        })
        .collect();
    let zones = |z: &[&str]| z.iter().map(ToString::to_string).collect::<Vec<_>>();
    let plugins = cfg.servers[0].plugins.len();
    assert_eq!(
        got,
        [
            (1053, zones(&["example.org.", "example.com."]), plugins),
            (2053, zones(&["example.net."]), plugins)
        ]
    );
    assert_eq!(loaded("a.:1053 b.:1053 {\n}\n").expect("loads").servers.len(), 1);
}
