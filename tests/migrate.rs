//! `clusterdns migrate`: every input in `tests/migrate/` (the default
//! Corefiles kubeadm installed for each Kubernetes release since 1.11, the
//! Corefiles of corefile-migration's own upgrade tests, and kube-dns
//! ConfigMaps from Kubernetes, its documentation and kubeadm's tests;
//! `tests/migrate/README.md` names each source) migrates, through
//! the built binary, to a Corefile `clusterdns check` accepts, and
//! migrating that again changes nothing. Then one row per rule gives the
//! exact rewrite and its `# migrate:` note, and the inputs that cannot be
//! migrated are refused with every error at its `FILE:LINE:COL`, among
//! them the rows of corefile-migration's tests clusterdns refuses
//! (`tests/migrate/refused/`, each with the errors expected).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{check, temp_dir};

/// At least this many inputs are migrated and checked.
const INPUTS_FLOOR: usize = 22;

fn inputs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/migrate");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/migrate")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "Corefile" || x == "yaml" || x == "json")
        })
        .collect();
    files.sort();
    files
}

fn migrate_bin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("migrate")
        .args(args)
        .output()
        .expect("run clusterdns migrate")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn every_kubeadm_default_and_kube_dns_configmap_migrates_to_a_corefile_check_accepts() {
    let dir = temp_dir("migrate");
    let files = inputs();
    assert!(
        files.len() >= INPUTS_FLOOR,
        "only {} inputs in tests/migrate",
        files.len()
    );
    for file in &files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let out = migrate_bin(&[&file.display().to_string()]);
        assert!(
            out.status.success(),
            "{name}: migrate exit {:?}\n{}",
            out.status,
            text(&out.stderr)
        );
        let migrated = text(&out.stdout);
        let conf = dir.join(format!("{name}.migrated"));
        std::fs::write(&conf, &migrated).expect("write");
        let (status, stderr) = check(&conf);
        assert_eq!(
            status.code(),
            Some(0),
            "{name}: check refused the migrated Corefile:\n{stderr}\n{migrated}"
        );
        let again = migrate_bin(&[&conf.display().to_string()]);
        assert!(
            again.status.success(),
            "{name}: migrating the result failed:\n{}",
            text(&again.stderr)
        );
        assert_eq!(text(&again.stdout), migrated, "{name}: migrating the result changed it");
        let notes = migrated.matches("# migrate:").count();
        let old = ["kubeadm-1.11", "kubeadm-1.12", "kubeadm-1.13", "kubeadm-1.14"];
        if old.iter().any(|o| name.starts_with(o)) {
            assert!(
                notes > 0,
                "{name}: a Corefile for CoreDNS before 1.5 migrated with no change"
            );
        }
        if name.starts_with("kubeadm-1.16") || name.starts_with("kubeadm-1.17") || name.starts_with("kubeadm-1.19") {
            assert_eq!(
                notes, 0,
                "{name}: a Corefile CoreDNS 1.14 loads was changed:\n{migrated}"
            );
        }
    }
}

#[test]
fn the_current_kubeadm_corefile_is_left_as_it_is() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/migrate/kubeadm-1.32.Corefile");
    let input = std::fs::read_to_string(&file).expect("read");
    let out = migrate_bin(&[&file.display().to_string()]);
    assert!(out.status.success());
    // The same lines; only the indentation is made four spaces a level.
    let trimmed = |t: &str| t.lines().map(|l| l.trim().to_string()).collect::<Vec<_>>();
    assert_eq!(trimmed(&text(&out.stdout)), trimmed(&input));
    assert!(text(&out.stderr).contains("0 change(s)"), "{}", text(&out.stderr));
}

#[test]
fn every_distributions_default_corefile_comes_back_unchanged() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("zones/distros");
    // The same lines, blank ones aside, with the spacing made uniform.
    let trimmed = |t: &str| {
        t.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("zones/distros") {
        let file = entry.expect("entry").path();
        let input = std::fs::read_to_string(&file).expect("read");
        let m = clusterdns::migrate::migrate(&file, &input, "cluster.local")
            .unwrap_or_else(|e| panic!("{}: {e:?}", file.display()));
        assert_eq!(m.changes, 0, "{}:\n{}", file.display(), m.text);
        assert_eq!(trimmed(&m.text), trimmed(&input), "{}", file.display());
        seen += 1;
    }
    assert!(seen >= 15, "only {seen} distributions");
}

struct Row {
    name: &'static str,
    input: &'static str,
    output: &'static str,
}

/// One row per rule: the input Corefile and the exact migrated text.
const ROWS: &[Row] = &[
    Row {
        name: "proxy_becomes_forward_and_its_options_are_carried_or_removed",
        input: r#".:53 {
    proxy . 1.1.1.1 8.8.8.8 {
        except example.org
        fail_timeout 10s
        max_fails 3
        health_check /health:8080
        spray
        policy first
        protocol dns force_tcp
    }
    loop
}
"#,
        output: r#".:53 {
    # migrate: `proxy` is now `forward`: CoreDNS 1.4.0 deprecated proxy and 1.5.0 removed it
    forward . 1.1.1.1 8.8.8.8 {
        except example.org
        # migrate: removed `fail_timeout 10s`: a proxy option forward does not have (forward checks its upstreams itself)
        # migrate: removed `max_fails 3`: a proxy option forward does not have (forward checks its upstreams itself)
        # migrate: removed `health_check /health:8080`: a proxy option forward does not have (forward checks its upstreams itself)
        # migrate: removed `spray`: a proxy option forward does not have (forward checks its upstreams itself)
        # migrate: `policy first` is `policy sequential` in forward
        policy sequential
        # migrate: `protocol dns force_tcp` is `force_tcp` in forward
        force_tcp
        # migrate: added `max_concurrent 1000` to `forward`: a CoreDNS 1.7.0 default; bounds the queries in flight upstream
        max_concurrent 1000
    }
    loop
}
"#,
    },
    Row {
        name: "proxy_least_conn_and_https_google_are_removed",
        input: r#".:53 {
    proxy . 1.1.1.1 {
        policy least_conn
        protocol https_google bootstrap 8.8.8.8
    }
    loop
}
"#,
        output: r#".:53 {
    # migrate: `proxy` is now `forward`: CoreDNS 1.4.0 deprecated proxy and 1.5.0 removed it
    forward . 1.1.1.1 {
        # migrate: removed `policy least_conn`: forward has no such policy and uses its default, random
        # migrate: removed `protocol https_google bootstrap 8.8.8.8`: CoreDNS 1.2.1 dropped Google's HTTPS JSON API; the upstreams are now asked in plain DNS
        # migrate: added `max_concurrent 1000` to `forward`: a CoreDNS 1.7.0 default; bounds the queries in flight upstream
        max_concurrent 1000
    }
    loop
}
"#,
    },
    Row {
        name: "proxy_protocol_dns_is_forwards_default",
        input: r#".:53 {
    proxy . /etc/resolv.conf {
        protocol dns
        policy round_robin
    }
    loop
}
"#,
        output: r#".:53 {
    # migrate: `proxy` is now `forward`: CoreDNS 1.4.0 deprecated proxy and 1.5.0 removed it
    forward . /etc/resolv.conf {
        # migrate: removed `protocol dns`: plain DNS is forward's default
        policy round_robin
        # migrate: added `max_concurrent 1000` to `forward`: a CoreDNS 1.7.0 default; bounds the queries in flight upstream
        max_concurrent 1000
    }
    loop
}
"#,
    },
    Row {
        name: "kubernetes_upstream_resyncperiod_and_extra_endpoints_are_removed",
        input: r#".:53 {
    ready
    kubernetes cluster.local {
        upstream 8.8.8.8 # for ExternalName targets
        resyncperiod 30s
        endpoint https://10.0.0.1:6443 https://10.0.0.2:6443
        pods verified
    }
}
"#,
        output: r#".:53 {
    ready
    kubernetes cluster.local {
        # migrate: removed `upstream 8.8.8.8`: CoreDNS 1.4.0 deprecated it and 1.7.0 removed it; external names are resolved through this server's own chain
        # for ExternalName targets
        # migrate: removed `resyncperiod 30s`: CoreDNS 1.5.0 deprecated it and 1.7.0 removed it; the watches keep the cache current (clusterdns's `resync` relists on a timer if wanted)
        # migrate: kept only the first of `endpoint https://10.0.0.1:6443 https://10.0.0.2:6443`: CoreDNS 1.4.0 stopped using the others
        endpoint https://10.0.0.1:6443
        pods verified
    }
}
"#,
    },
    Row {
        name: "kubernetes_transfer_moves_to_the_transfer_directive",
        input: r#".:53 {
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        transfer to 1.2.3.4 5.6.7.8
    }
}
"#,
        output: r#".:53 {
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa
    # migrate: moved `transfer to 1.2.3.4 5.6.7.8` to a `transfer` directive below
    # migrate: `transfer cluster.local` from kubernetes' `transfer to 1.2.3.4 5.6.7.8`: CoreDNS 1.8.0 moved zone transfers to the transfer plugin
    transfer cluster.local {
        to 1.2.3.4 5.6.7.8
    }
}
"#,
    },
    Row {
        name: "federation_is_removed",
        input: r#".:53 {
    ready
    kubernetes cluster.local
    federation cluster.local {
        foo foo.example.com
    }
}
"#,
        output: r#".:53 {
    ready
    kubernetes cluster.local
    # migrate: removed `federation`: CoreDNS 1.7.0 removed it with Kubernetes Federation v1 (kubefed), and clusterdns has none; names under a federation now answer NXDOMAIN
}
"#,
    },
    Row {
        name: "several_proxies_split_into_stub_domain_blocks",
        input: r#".:53 {
    proxy mystub-1.example.org 1.2.3.4
    proxy mystub-2.example.org 5.6.7.8
    forward . /etc/resolv.conf {
        max_concurrent 1000
    }
    loop
}
"#,
        output: r#".:53 {
    # migrate: `proxy` is now `forward`: CoreDNS 1.4.0 deprecated proxy and 1.5.0 removed it
    # migrate: moved `forward mystub-1.example.org 1.2.3.4` to a server block of its own, `mystub-1.example.org:53`, below: CoreDNS 1.5.0 takes one forward a block
    # migrate: `proxy` is now `forward`: CoreDNS 1.4.0 deprecated proxy and 1.5.0 removed it
    # migrate: moved `forward mystub-2.example.org 5.6.7.8` to a server block of its own, `mystub-2.example.org:53`, below: CoreDNS 1.5.0 takes one forward a block
    forward . /etc/resolv.conf {
        max_concurrent 1000
    }
    loop
}

# migrate: `forward mystub-1.example.org 1.2.3.4` from the `.:53` block, with `errors`, `cache 30` and `loop` as kubeadm writes a stub domain
mystub-1.example.org:53 {
    errors
    cache 30
    loop
    forward . 1.2.3.4 {
        # migrate: added `max_concurrent 1000` to `forward`: a CoreDNS 1.7.0 default; bounds the queries in flight upstream
        max_concurrent 1000
    }
}

# migrate: `forward mystub-2.example.org 5.6.7.8` from the `.:53` block, with `errors`, `cache 30` and `loop` as kubeadm writes a stub domain
mystub-2.example.org:53 {
    errors
    cache 30
    loop
    forward . 5.6.7.8 {
        # migrate: added `max_concurrent 1000` to `forward`: a CoreDNS 1.7.0 default; bounds the queries in flight upstream
        max_concurrent 1000
    }
}
"#,
    },
    Row {
        name: "new_defaults_are_added_to_a_corefile_that_needed_migrating",
        input: r#".:53 {
    health :8080
    kubernetes cluster.local {
        upstream
    }
    forward . /etc/resolv.conf
}
"#,
        output: r#".:53 {
    health :8080 {
        # migrate: added `lameduck 5s` to `health`: a CoreDNS 1.6.5 default; /health fails for 5s before shutdown
        lameduck 5s
    }
    # migrate: added `ready`: a CoreDNS 1.5.0 default; kubeadm's readinessProbe reads :8181/ready
    ready
    kubernetes cluster.local
    # migrate: removed `upstream`: CoreDNS 1.4.0 deprecated it and 1.7.0 removed it; external names are resolved through this server's own chain
    forward . /etc/resolv.conf {
        # migrate: added `max_concurrent 1000` to `forward`: a CoreDNS 1.7.0 default; bounds the queries in flight upstream
        max_concurrent 1000
    }
    # migrate: added `loop`: a CoreDNS 1.2.1 default where a block forwards; stops on a forwarding loop
    loop
}
"#,
    },
    Row {
        name: "comments_quotes_and_env_references_are_kept",
        input: r#"# the main block
.:53 {
    log   # every query
    # answers from hosts
    hosts {$HOSTS_FILE} {
        fallthrough
    }
    template IN A "example.org" {
        answer "{{ .Name }} 60 IN A 10.0.0.1"
    }
}
"#,
        output: r#"# the main block
.:53 {
    log # every query
    # answers from hosts
    hosts {$HOSTS_FILE} {
        fallthrough
    }
    template IN A "example.org" {
        answer "{{ .Name }} 60 IN A 10.0.0.1"
    }
}
"#,
    },
];

#[test]
fn each_rule_rewrites_exactly_with_its_note() {
    let mut failed = Vec::new();
    for row in ROWS {
        match clusterdns::migrate::migrate(Path::new("Corefile"), row.input, "cluster.local") {
            Ok(m) if m.text == row.output => {}
            Ok(m) => failed.push(format!("{}: got\n{}\nwant\n{}", row.name, m.text, row.output)),
            Err(e) => failed.push(format!("{}: refused: {e:?}", row.name)),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// Inputs that cannot be migrated: every error at its place, in order.
const REFUSED: &[(&str, &str, &[&str])] = &[
    (
        "Corefile",
        ".:53 {\n    proxy . 1.1.1.1 {\n        protocol grpc insecure\n    }\n    route53 example.org.:Z1\n    loop\n}\n",
        &[
            "Corefile:3:9: cannot migrate proxy option `protocol grpc insecure`: forward has no equivalent",
            "Corefile:5:5: route53: not supported; clusterdns does not read zones from the AWS Route 53 API (",
        ],
    ),
    (
        "Corefile",
        ".:53 {\n    forward . 1.1.1.1\n    proxy . 8.8.8.8\n    loop\n}\n",
        &["Corefile:3:5: cannot migrate: a second `forward .` in one server block"],
    ),
    (
        "Corefile",
        ".:53 {\n    kubernetes cluster.local {\n        transfer 1.2.3.4\n    }\n}\n",
        &["Corefile:3:9: cannot migrate `transfer 1.2.3.4`: expected `transfer to ADDRESS...`"],
    ),
    (
        "Corefile",
        ".:53 {\n    errors\n",
        &["Corefile:2:5: unclosed '{': missing '}'"],
    ),
    (
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  Corefile: |\n    .:53 {\n        kubernetes cluster.local {\n            cidrs 10.0.0.0/24\n        }\n    }\n",
        &["cm.yaml:7:13: kubernetes: unknown option 'cidrs' (supported: "],
    ),
    (
        "kube-dns.yaml",
        "kind: ConfigMap\ndata:\n  stubDomains: |\n    {\"acme.local\": [\"1.2.3.4\"],\n     \"x\": 5}\n  other: x\n",
        &[
            "kube-dns.yaml:5:11: stubDomains: invalid type: integer `5`, expected a sequence",
            "kube-dns.yaml:6:3: cannot migrate kube-dns key 'other' (kube-dns reads stubDomains, upstreamNameservers, federations)",
        ],
    ),
    (
        "kube-dns.yaml",
        "data:\n  stubDomains: '{\"bad domain\": [\"1.2.3.4\"]}'\n",
        &["kube-dns.yaml:2:3: stubDomains: 'bad domain' is not a domain name"],
    ),
    ("secret.yaml", "apiVersion: v1\nkind: Secret\n", &["secret.yaml:1:1: a Secret, not a ConfigMap"]),
];

#[test]
fn what_cannot_be_migrated_is_refused_at_its_place() {
    for (file, input, want) in REFUSED {
        let errors = match clusterdns::migrate::migrate(Path::new(file), input, "cluster.local") {
            Ok(m) => panic!("{file}: migrated, expected errors:\n{input}\n→\n{}", m.text),
            Err(e) => e.iter().map(ToString::to_string).collect::<Vec<_>>(),
        };
        assert_eq!(errors.len(), want.len(), "{input}\n{errors:#?}");
        for (got, want) in errors.iter().zip(want.iter()) {
            // A message that goes on to list or explain: its start.
            let ok = if let Some(prefix) = want.strip_suffix("(supported: ").or(want.strip_suffix('(')) {
                got.starts_with(prefix)
            } else {
                got == want
            };
            assert!(ok, "got  {got}\nwant {want}");
        }
    }
}

#[test]
fn the_command_exits_64_and_prints_nothing_when_it_cannot_migrate() {
    let dir = temp_dir("migrate-refused");
    let file = dir.join("Corefile");
    std::fs::write(
        &file,
        ".:53 {\n    proxy . 1.1.1.1 {\n        protocol grpc\n    }\n}\n",
    )
    .expect("write");
    let out = migrate_bin(&[&file.display().to_string()]);
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:3:9: cannot migrate proxy option `protocol grpc`",
            file.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot be migrated: 1 error(s); nothing printed"),
        "{stderr}"
    );
    let usage = migrate_bin(&[]);
    assert_eq!(usage.status.code(), Some(64));
}

#[test]
fn a_coredns_configmap_and_the_cluster_domain_of_a_kube_dns_one() {
    let cm = "apiVersion: v1\nkind: ConfigMap\ndata:\n  Corefile: |\n    .:53 {\n        kubernetes cluster.local {\n            upstream\n        }\n        ready\n    }\n";
    let m = clusterdns::migrate::migrate(Path::new("cm.yaml"), cm, "cluster.local").expect("migrates");
    assert_eq!(m.input, "a CoreDNS ConfigMap");
    assert_eq!(
        m.text,
        ".:53 {\n    kubernetes cluster.local\n    # migrate: removed `upstream`: CoreDNS 1.4.0 deprecated it and 1.7.0 removed it; external names are resolved through this server's own chain\n    ready\n}\n"
    );
    let dir = temp_dir("migrate-domain");
    let file = dir.join("kube-dns.yaml");
    std::fs::write(&file, "data:\n  upstreamNameservers: '[\"10.0.0.53\"]'\n").expect("write");
    let out = migrate_bin(&["--domain", "corp.example.", &file.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = text(&out.stdout);
    for line in [
        "    kubernetes corp.example in-addr.arpa ip6.arpa {",
        "    # migrate: upstreamNameservers (line 2): forward . 10.0.0.53",
        "    forward . 10.0.0.53 {",
        "        disable success corp.example",
    ] {
        assert!(got.lines().any(|l| l == line), "missing {line:?} in\n{got}");
    }
}

/// The fenced block of `lang` that follows the line `after` in `doc`.
fn fence_after(doc: &str, after: &str, lang: &str) -> String {
    let rest = &doc[doc.find(after).unwrap_or_else(|| panic!("no {after:?} in the docs"))..];
    let open = format!("```{lang}\n");
    let start = rest.find(&open).expect("fence") + open.len();
    let len = rest[start..].find("```").expect("fence end");
    rest[start..start + len].to_string()
}

#[test]
fn the_docs_examples_are_what_migrate_prints() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/corefile.md")).expect("docs");
    let section = &doc[doc.find("## Migrating from kube-dns").expect("migrate section")..];
    let configmap = fence_after(section, "A kube-dns ConfigMap:", "yaml");
    let printed = fence_after(section, "prints:", "corefile");
    let m = clusterdns::migrate::migrate(Path::new("kube-dns.yaml"), &configmap, "cluster.local").expect("migrates");
    assert_eq!(m.text, printed);
    let corefile = fence_after(section, "with a stub domain added by hand", "text");
    let printed = fence_after(section, "becomes (`clusterdns migrate Corefile`)", "corefile");
    let m = clusterdns::migrate::migrate(Path::new("Corefile"), &corefile, "cluster.local").expect("migrates");
    assert_eq!(m.text, printed);
}

#[test]
fn kube_dns_host_names_are_left_out_with_a_note() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/migrate/kube-dns-kubeadm-hostnames.yaml");
    let input = std::fs::read_to_string(&file).expect("read");
    let m = clusterdns::migrate::migrate(Path::new("kube-dns.yaml"), &input, "cluster.local").expect("migrates");
    for line in [
        "# migrate: left out stubDomains \"foo.com\" (line 10): its nameservers [\"service.consul\"] are host names, and forward takes IP addresses",
        "    # migrate: left out nameserver \"ns.foo.com\": forward takes IP addresses, not host names (as kubeadm's translation did)",
        "    # migrate: upstreamNameservers (line 11): forward . 8.8.4.4",
        "    forward . 8.8.4.4 {",
        "# migrate: left out nameserver \"service.consul\": forward takes IP addresses, not host names (as kubeadm's translation did)",
        "bar.com:53 {",
        "    forward . 1.2.3.4:5300 {",
        "my.cluster.local:53 {",
    ] {
        assert!(m.text.lines().any(|l| l == line), "missing {line:?} in\n{}", m.text);
    }
    assert!(!m.text.contains("foo.com:53"), "{}", m.text);
}

/// A line of a `.errors` file: equal, or a prefix where it ends in `...`.
fn matches(got: &str, want: &str) -> bool {
    match want.strip_suffix("...") {
        Some(prefix) => got.starts_with(prefix),
        None => got == want,
    }
}

#[test]
fn corefile_migration_rows_clusterdns_refuses_say_why_at_their_place() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/migrate/refused");
    let mut seen = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/migrate/refused")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "Corefile"))
        .collect();
    files.sort();
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let want = std::fs::read_to_string(file.with_extension("errors")).expect("its .errors file");
        let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
            .args(["migrate", &name])
            .current_dir(&dir)
            .output()
            .expect("run clusterdns migrate");
        assert_eq!(out.status.code(), Some(64), "{name}: {}", text(&out.stdout));
        assert!(out.stdout.is_empty(), "{name}: printed {}", text(&out.stdout));
        let stderr = text(&out.stderr);
        let got: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("clusterdns migrate:"))
            .collect();
        let want: Vec<&str> = want.lines().collect();
        assert_eq!(got.len(), want.len(), "{name}:\n{stderr}");
        for (g, w) in got.iter().zip(&want) {
            assert!(matches(g, w), "{name}:\ngot  {g}\nwant {w}");
        }
        seen += 1;
    }
    assert!(seen >= 7, "only {seen} refused inputs");
}
