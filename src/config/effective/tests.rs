//! `clusterdns check`'s printout: every option of a Corefile using many of
//! them appears with its value (defaults written out), in plugin order, and
//! the printout loads again to the same printout (also for the shipped
//! distribution Corefiles).

use std::path::{Path, PathBuf};

use crate::config::{load, load_str};

/// A Corefile with most options of most directives.
const MANY: &str = r#".:53 example.org:53 {
    forward . 10.0.0.1:53 10.0.0.2 {
        except skip.example.org
        force_tcp
        expire 20s
        max_idle_conns 5
        read_timeout 3s
        max_fails 4
        health_check 750ms no_rec domain probe.example.
        policy sequential
        max_concurrent 100
        next NXDOMAIN SERVFAIL
    }
    kubernetes cluster.local in-addr.arpa {
        snapshot cluster.yaml
        namespaces app kube-system
        labels env=prod
        pods verified
        endpoint_pod_names
        ttl 30
        noendpoints
        fallthrough in-addr.arpa
        ignore empty_service
    }
    cache 300 example.org {
        success 1000 600 5
        denial 200 60
        prefetch 3 2m 20%
        serve_stale 1h verify
        servfail 2s
        disable denial sub.example.org
        keepttl
    }
    log example.org {combined} {
        class denial error
    }
    errors
    dnstap tls://collector.example:6000 full 4 2 {
        identity dns-1
        version v9
        extra "from cluster a"
        skipverify
    }
    dnstap /run/tap.sock
    dnstap listen tcp://127.0.0.1:6001 full {
        identity dns-1
        version v9
    }
    hosts hostsfile example.org {
        10.1.1.1 inline.example.org
        ttl 60
        no_reverse
        reload 15s
        fallthrough
    }
    file example.db example.org {
        reload 30s
    }
    loop {
        exit
    }
    loadbalance
    autopath @kubernetes
    acl {
        block type AAAA net 10.9.0.0/16
        allow net 10.0.0.0/8
    }
    any
    timeouts {
        read 2s
        idle 1m
    }
    limits {
        connections 500
        in_flight 900
    }
    dns64 64:ff9b:1::/48 {
        translate_all
    }
    transfer cluster.local {
        to 10.0.0.7 [fd00::7]:5353
        to *
        source 10.0.0.1
    }
    k8s_external example.org {
        apex ns
        ttl 10
        headless
    }
    template IN TXT example.org {
        match "^t[.]"
        answer "{{ .Name }} 60 IN TXT \"hi\""
        rcode NOERROR
        fallthrough
    }
    rewrite continue name suffix .svc.example.org .svc.cluster.local answer auto
    rewrite stop type AAAA A
    rewrite edns0 local set 0xffee {client_ip}
    bufsize 1400
    chaos v1.2 "A Person" b@x
    local {
        localhost_prefix off
    }
    reload 10s 4s
    health 127.0.0.1:8080 {
        lameduck 5s
    }
    ready 127.0.0.1:8181
    prometheus 127.0.0.1:9153
    bind 127.0.0.1
}
"#;

/// The files the Corefiles name, in a folder of this process shared by
/// its tests (which run at once): each written beside and renamed into
/// place, so that no test reads one another is rewriting.
fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clusterdns-effective-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let zone = std::fs::read_to_string(repo().join("zones/example.db")).unwrap_or_default();
    let cluster = std::fs::read_to_string(repo().join("zones/cluster.yaml")).unwrap_or_default();
    let files = [
        ("hostsfile", "10.2.2.2 filed.example.org\n"),
        ("example.db", zone.as_str()),
        ("cluster.yaml", cluster.as_str()),
    ];
    for (name, text) in files {
        let beside = dir.join(format!("{name}.{:?}", std::thread::current().id()));
        let _ = std::fs::write(&beside, text);
        let _ = std::fs::rename(&beside, dir.join(name));
    }
    dir
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The printout without its first line (which names the file).
fn body(printed: &str) -> String {
    printed.lines().skip(1).collect::<Vec<_>>().join("\n")
}

/// Prints `path`'s configuration, loads the printout and prints again.
fn round_trip(path: &Path, text: &str) -> String {
    let config = load_str(path, text, 53).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let printed = config.to_string();
    let again = load_str(path, &printed, 53).unwrap_or_else(|e| panic!("printout does not load: {e}\n{printed}"));
    assert_eq!(
        body(&again.to_string()),
        body(&printed),
        "printout of {} changes when loaded",
        path.display()
    );
    printed
}

#[test]
fn every_option_is_printed_with_its_value() {
    let dir = dir();
    let printed = round_trip(&dir.join("Corefile"), MANY);
    let d = dir.display();
    let want = [
        ".:53 example.org.:53 {".to_string(),
        "    timeouts {\n        read 2s\n        write 5s\n        idle 1m\n        maxtcpqueries -1\n    }".into(),
        "    limits {\n        connections 500\n        pipeline 64\n        in_flight 900\n        client_share 10\n        limited_clients 8\n    }".into(),
        "    reload 10s 4s".into(),
        "    bufsize 1400".into(),
        "    bind 127.0.0.1".into(),
        "    ready 127.0.0.1:8181 {\n        monitor until-ready\n    }".into(),
        "    health 127.0.0.1:8080 {\n        lameduck 5s\n    }".into(),
        "    prometheus 127.0.0.1:9153".into(),
        "    errors".into(),
        "    log example.org. {combined} {\n        class denial error\n    }".into(),
        "    dnstap tls://collector.example:6000 full 4 2 {\n        identity dns-1\n        version v9\n        extra \"from cluster a\"\n        skipverify\n    }".into(),
        format!("    dnstap unix:///run/tap.sock {{\n        identity {}\n        version clusterdns-", crate::dnstap::setup::tests_hostname()),
        "    dnstap listen tcp://127.0.0.1:6001 full 1 1 {\n        identity dns-1\n        version v9\n    }".into(),
        "    local {\n        localhost_prefix off\n    }".into(),
        "    dns64 {\n        prefix 64:ff9b:1::/48\n        translate_all\n    }".into(),
        "    any".into(),
        "    chaos v1.2 \"A Person\" b@x".into(),
        "    loadbalance round_robin".into(),
        "    rewrite continue name suffix .svc.example.org. .svc.cluster.local. answer auto".into(),
        "    rewrite stop type AAAA A".into(),
        "    rewrite stop edns0 local set 0xffee {client_ip}".into(),
        "    autopath @kubernetes".into(),
        "    acl . example.org. {\n        block type AAAA net 10.9.0.0/16\n        allow type * net 10.0.0.0/8\n    }".into(),
        "    cache example.org. {\n        success 1000 600 5\n        denial 200 60 5\n        prefetch 3 2m 20%\n        serve_stale 1h verify 0s 0s 0s\n        servfail 2s\n        disable denial sub.example.org.\n        keepttl\n    }".into(),
        "    template IN TXT example.org. {\n        match ^t[.]\n        answer \"{{ .Name }} 60 IN TXT \\\"hi\\\"\"\n        rcode NOERROR\n        fallthrough\n    }".into(),
        "    transfer cluster.local. {\n        to 10.0.0.7:53 [fd00::7]:5353 *\n        source 10.0.0.1\n    }".into(),
        format!("    hosts {d}/hostsfile example.org. {{\n        10.1.1.1 inline.example.org.\n        ttl 60\n        no_reverse\n        reload 15s\n        fallthrough\n    }}"),
        "    k8s_external example.org. {\n        apex ns\n        ttl 10\n        headless\n    }".into(),
        format!("    kubernetes cluster.local. in-addr.arpa. {{\n        snapshot {d}/cluster.yaml\n        namespaces app kube-system\n        labels env=prod\n        pods verified\n        endpoint_pod_names\n        ttl 30\n        noendpoints\n        fallthrough in-addr.arpa.\n        ignore empty_service\n        startup_timeout 5s\n    }}"),
        format!("    file {d}/example.db example.org. {{\n        reload 30s\n    }}"),
        "    loop {\n        exit\n    }".into(),
        "    forward . 10.0.0.1:53 10.0.0.2:53 {\n        except skip.example.org.\n        force_tcp\n        expire 20s\n        max_idle_conns 5\n        read_timeout 3s\n        max_fails 4\n        max_connect_attempts 4\n        health_check 750ms no_rec domain probe.example.\n        policy sequential\n        max_concurrent 100\n        next NXDOMAIN SERVFAIL\n    }".into(),
    ];
    let mut at = 0;
    for w in &want {
        let found = printed[at..].find(w.as_str());
        assert!(
            found.is_some(),
            "missing (or out of plugin order):\n{w}\nin:\n{printed}"
        );
        at += found.unwrap_or(0) + w.len();
    }
}

#[test]
fn defaults_are_written_out() {
    let dir = dir();
    let text = ".:53 {\n    forward . 10.0.0.1\n    cache\n    hosts hostsfile\n    dns64\n    k8s_external example.org\n    kubernetes cluster.local\n    health\n    reload\n    log\n}\n";
    let printed = round_trip(&dir.join("Corefile"), text);
    for want in [
        "    forward . 10.0.0.1:53 {\n        expire 10s\n        max_idle_conns 0\n        read_timeout 2s\n        max_fails 2\n        max_connect_attempts 2\n        health_check 500ms domain .\n        policy random\n        max_concurrent 0\n    }",
        "    timeouts {\n        read 3s\n        write 5s\n        idle 10s\n        maxtcpqueries -1\n    }",
        "    limits {\n        connections 10000\n        pipeline 64\n        in_flight 10000\n        client_share 10\n        limited_clients 8\n    }",
        "    reload 30s 15s",
        "    health 0.0.0.0:8080 {\n        lameduck 0s\n    }",
        "    log {common} {\n        class all\n    }",
        "    dns64 {\n        prefix 64:ff9b::/96\n    }",
        "    k8s_external example.org. {\n        apex dns\n        ttl 5\n    }",
        "        pods disabled\n        ttl 5\n",
        "        watch_timeout 290s\n",
        "        startup_timeout 5s\n",
        "        reload 5s\n",
        "        ttl 3600\n",
    ] {
        assert!(printed.contains(want), "missing:\n{want}\nin:\n{printed}");
    }
}

/// A CA certificate for `tls` (made with openssl; it signs nothing).
const TEST_CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBnzCCAUWgAwIBAgIUQ3HLQAcTtccBBqCz2xMFkY98MlMwCgYIKoZIzj0EAwIw\nJDEiMCAGA1UEAwwZY2x1c3RlcmRucyBjb25maWcgdGVzdCBDQTAgFw0yNjExMjcw\nMzI4MDlaGA8yMTI2MTEwMzAzMjgwOVowJDEiMCAGA1UEAwwZY2x1c3RlcmRucyBj\nb25maWcgdGVzdCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABOUb5nbpe3zS\ndD6z7Zi/zS24/pxNvQ++qnlgnIsTahUg9mXY951Lh5B17jqqRMaQ41S+2V+aOO7P\nwh/JGLuMShCjUzBRMB0GA1UdDgQWBBRNkmBFhzySmRL//kAX3BlfS1JlYTAfBgNV\nHSMEGDAWgBRNkmBFhzySmRL//kAX3BlfS1JlYTAPBgNVHRMBAf8EBTADAQH/MAoG\nCCqGSM49BAMCA0gAMEUCIDCc64F4/+hzXv/h7AuNsLoKDv6n7301c8MaKVd8W2r7\nAiEAukEms476jZxx0GWmur1DsE+UyQ86ekEx62uNt+RYWdg=\n-----END CERTIFICATE-----\n";

#[test]
fn encrypted_upstreams_print_with_their_tls_options() {
    let dir = dir();
    std::fs::write(dir.join("ca.pem"), TEST_CA).expect("write ca.pem");
    let text = ".:53 {\n    forward . tls://10.0.0.1%dns.example tls://[2001:db8::1%dns6.example]:8853 {\n        tls ca.pem\n    }\n    forward example.org https://10.0.0.2/dns-query {\n        tls ca.pem\n        tls_servername doh.example\n        doh_method GET\n    }\n}\n";
    let printed = round_trip(&dir.join("Corefile"), text);
    let ca = dir.join("ca.pem").display().to_string();
    for want in [
        "    forward . tls://10.0.0.1%dns.example:853 tls://[2001:db8::1%dns6.example]:8853 {".to_string(),
        format!("        tls {ca}\n    }}\n    forward example.org. https://10.0.0.2:443 {{"),
        format!("        tls {ca}\n        tls_servername doh.example\n        doh_method GET\n    }}"),
    ] {
        assert!(printed.contains(&want), "missing:\n{want}\nin:\n{printed}");
    }
}

#[test]
fn distribution_corefiles_print_and_load_again() {
    let dir = repo().join("zones/distros");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "Corefile"));
    assert!(
        files.len() >= 10,
        "distribution Corefiles not found in {}",
        dir.display()
    );
    let mut loaded = 0;
    for f in &files {
        let Ok(config) = load(f, 53) else {
            continue; // one that needs files of a real node (checked in tests/distros.rs)
        };
        loaded += 1;
        let printed = config.to_string();
        let again = load_str(f, &printed, 53)
            .unwrap_or_else(|e| panic!("{}: printout does not load: {e}\n{printed}", f.display()));
        assert_eq!(body(&again.to_string()), body(&printed), "{}", f.display());
        for s in &config.servers {
            if let Some(k) = &s.kubernetes {
                assert!(
                    printed.contains(&format!("        ttl {}\n", k.ttl)),
                    "{}: kubernetes ttl",
                    f.display()
                );
            }
            for fw in &s.forward {
                assert!(
                    printed.contains(&format!("        max_fails {}\n", fw.max_fails)),
                    "{}",
                    f.display()
                );
            }
        }
    }
    assert!(
        loaded * 2 >= files.len(),
        "only {loaded} of {} distribution Corefiles load here",
        files.len()
    );
}

#[test]
fn errors_log_formats_and_client_options_are_printed() {
    let dir = dir();
    let text = r#".:53 {
    errors {
        stacktrace
        consolidate 5m ".* i/o timeout$" warning
        consolidate 30s ^Failed show_first
    }
    log . "{remote} {/log/class} {/log/type} {common}"
    kubernetes cluster.local {
        snapshot cluster.yaml
        startup_timeout 10s
        apiserver_qps 50
        zonal
    }
}
"#;
    let printed = round_trip(&dir.join("Corefile"), text);
    for want in [
        "    errors {\n        stacktrace\n        consolidate 5m \".* i/o timeout$\" warning\n        consolidate 30s ^Failed error show_first\n    }",
        "    log . \"{remote} {/log/class} {/log/type} {remote}:{port} - {>id}",
        "        startup_timeout 10s\n",
        "        apiserver_qps 50\n        apiserver_burst 10\n",
        "        zonal",
    ] {
        assert!(printed.contains(want), "missing:\n{want}\nin:\n{printed}");
    }
}
