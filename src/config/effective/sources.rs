//! The printout of the directives that bring data in or send it out:
//! `kubernetes`, `forward`, `cache`, `dnstap` and `transfer`, every option with its
//! value or default.

use super::words::{duration, names, quote, with, Block};
use crate::config::cache::{Bounds, CacheConfig, StaleMode};
use crate::config::dnstap::{DnstapConfig, Endpoint};
use crate::config::forward::{ForwardConfig, Policy};
use crate::config::kubernetes::{KubernetesConfig, PodMode, Source};

fn bounds(kind: &str, x: &Bounds) -> String {
    format!("{kind} {} {} {}", x.capacity, x.max_ttl, x.min_ttl)
}

pub(super) fn cache(b: &mut Block, c: &CacheConfig) {
    let mut options = vec![bounds("success", &c.success), bounds("denial", &c.denial)];
    if let Some((hits, window, percent)) = c.prefetch {
        options.push(format!("prefetch {hits} {} {percent}%", duration(window)));
    }
    if let Some((d, mode)) = c.serve_stale {
        let mode = if mode == StaleMode::Verify {
            "verify"
        } else {
            "immediate"
        };
        // verify takes its timeout before the response TTL and recheck
        let timeout = if mode == "verify" {
            format!(" {}", duration(c.verify_timeout))
        } else {
            String::new()
        };
        options.push(format!(
            "serve_stale {} {mode}{timeout} {}s {}",
            duration(d),
            c.stale_ttl,
            duration(c.stale_recheck)
        ));
    }
    if c.prefer_positive {
        options.push("serve_stale_policy prefer_positive".into());
    }
    options.push(format!("servfail {}", duration(c.servfail)));
    for (kind, zones) in [("success", &c.disable_success), ("denial", &c.disable_denial)] {
        if let Some(z) = zones {
            options.push(with(&format!("disable {kind}"), &names(z)));
        }
    }
    options.extend(c.keepttl.then(|| "keepttl".to_string()));
    b.directive(with("cache", &names(&c.zones)), &options);
}

pub(super) fn kubernetes(b: &mut Block, k: &KubernetesConfig) {
    let mut options = Vec::new();
    match &k.source {
        Source::Snapshot(p) => options.push(format!("snapshot {}", p.display())),
        Source::Api {
            endpoint,
            kubeconfig,
            tls,
        } => {
            options.extend(endpoint.as_ref().map(|e| format!("endpoint {e}")));
            if let Some((path, context)) = kubeconfig {
                options.push(
                    format!("kubeconfig {} {}", path.display(), context.as_deref().unwrap_or(""))
                        .trim_end()
                        .to_string(),
                );
            }
            if let Some([cert, key, ca]) = tls {
                options.push(format!("tls {} {} {}", cert.display(), key.display(), ca.display()));
            }
            options.push(format!("watch_timeout {}", duration(k.watch_timeout)));
            if let Some(p) = &k.persist {
                options.push(format!("persist {} {}", p.path.display(), duration(p.max_age)));
            }
            options.extend(k.resync.map(|r| format!("resync {}", duration(r))));
        }
    }
    if !k.namespaces.is_empty() {
        options.push(format!("namespaces {}", k.namespaces.join(" ")));
    }
    options.extend(k.labels_text.as_ref().map(|l| format!("labels {l}")));
    options.extend(k.namespace_labels.as_ref().map(|s| format!("namespace_labels {s}")));
    let pods = match k.pods {
        PodMode::Disabled => "disabled",
        PodMode::Insecure => "insecure",
        PodMode::Verified => "verified",
    };
    options.push(format!("pods {pods}"));
    options.extend(k.endpoint_pod_names.then(|| "endpoint_pod_names".to_string()));
    options.push(format!("ttl {}", k.ttl));
    options.extend(k.noendpoints.then(|| "noendpoints".to_string()));
    options.extend(k.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
    options.extend(k.ignore_empty_service.then(|| "ignore empty_service".to_string()));
    options.extend(crate::config::kube_client::effective(&k.client, duration));
    options.extend((!k.multicluster.is_empty()).then(|| with("multicluster", &names(&k.multicluster))));
    b.directive(with("kubernetes", &names(&k.zones)), &options);
}

pub(super) fn forward(b: &mut Block, fw: &ForwardConfig) {
    let to: Vec<String> = fw.to.iter().map(ToString::to_string).collect();
    let mut options = Vec::new();
    if !fw.except.is_empty() {
        options.push(format!("except {}", names(&fw.except)));
    }
    options.extend(fw.force_tcp.then(|| "force_tcp".to_string()));
    options.extend(fw.prefer_udp.then(|| "prefer_udp".to_string()));
    options.push(format!("expire {}", duration(fw.expire)));
    if !fw.max_age.is_zero() {
        options.push(format!("max_age {}", duration(fw.max_age)));
    }
    options.push(format!("max_idle_conns {}", fw.max_idle_conns));
    options.push(format!("read_timeout {}", duration(fw.read_timeout)));
    options.push(format!("max_fails {}", fw.max_fails));
    let attempts = fw.max_connect_attempts.unwrap_or(2 * fw.to.len() as u32);
    options.push(format!("max_connect_attempts {attempts}"));
    let mut health = format!("health_check {}", duration(fw.health_check));
    if !fw.health_check_rd {
        health.push_str(" no_rec");
    }
    health.push_str(&format!(" domain {}", fw.health_check_domain));
    options.push(health);
    let policy = match fw.policy {
        Policy::Random => "random",
        Policy::RoundRobin => "round_robin",
        Policy::Sequential => "sequential",
    };
    options.push(format!("policy {policy}"));
    options.push(format!("max_concurrent {}", fw.max_concurrent));
    let rcodes = |r: &[hickory_proto::op::ResponseCode]| {
        r.iter()
            .map(|r| crate::metrics::rcode_name(*r))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !fw.next.is_empty() {
        options.push(format!("next {}", rcodes(&fw.next)));
    }
    options.extend(fw.next_on_nodata.then(|| "next_on_nodata".to_string()));
    if !fw.failover.is_empty() {
        options.push(format!("failover {}", rcodes(&fw.failover)));
    }
    options.extend(fw.failfast.then(|| "failfast_all_unhealthy_upstreams".to_string()));
    options.extend(fw.source_address.map(|a| format!("source_address {a}")));
    if !fw.resolver.is_empty() {
        let r: Vec<String> = fw.resolver.iter().map(ToString::to_string).collect();
        options.push(format!("resolver {}", r.join(" ")));
    }
    options.extend(tls_options(fw));
    b.directive(format!("forward {} {}", fw.from, to.join(" ")), &options);
}

/// `dnstap [listen] SOCKET [full] WRITEBUFFER QUEUE { identity; version; extra; tls; skipverify }`.
pub(super) fn dnstap(b: &mut Block, d: &DnstapConfig) {
    let socket = match &d.endpoint {
        Endpoint::Unix(path) => format!("unix://{}", path.display()),
        Endpoint::Tcp(addr) => format!("tcp://{addr}"),
        Endpoint::Tls(addr) => format!("tls://{addr}"),
    };
    let listen = if d.listen.is_some() { "listen " } else { "" };
    let mut head = format!("dnstap {listen}{}", quote(&socket));
    if d.full {
        head.push_str(" full");
    }
    let mut options = vec![
        format!("identity {}", quote(&d.identity)),
        format!("version {}", quote(&d.version)),
    ];
    options.extend(d.extra.as_ref().map(|e| format!("extra {}", quote(e))));
    if let Some(tls) = d.listen.as_ref().and_then(|l| l.tls.as_ref()) {
        let mut files = vec![tls.cert.display().to_string(), tls.key.display().to_string()];
        files.extend(tls.ca.as_ref().map(|ca| ca.display().to_string()));
        options.push(format!(
            "tls {}",
            files.iter().map(|f| quote(f)).collect::<Vec<_>>().join(" ")
        ));
    }
    options.extend(d.skip_verify.then(|| "skipverify".to_string()));
    // WRITEBUFFER and QUEUE follow `full`, so they are written only with it.
    if d.full {
        head.push_str(&format!(" {} {}", d.write_buffer, d.queue));
    }
    b.directive(head, &options);
}

/// `tls`, `tls_servername` and `doh_method`, shown when some upstream is
/// encrypted (they change nothing for plain ones).
fn tls_options(fw: &ForwardConfig) -> Vec<String> {
    use crate::config::forward_tls::{DohMethod, Via};
    let mut options = Vec::new();
    if fw.to.iter().all(|t| t.via == Via::Dns) {
        return options;
    }
    let files: Vec<String> = fw.tls.files.iter().map(|p| p.display().to_string()).collect();
    options.push(with("tls", &files.join(" ")));
    options.extend(fw.tls.servername.as_ref().map(|n| format!("tls_servername {n}")));
    if fw.to.iter().any(|t| matches!(t.via, Via::Https(_))) {
        let method = if fw.tls.doh_method == DohMethod::Get {
            "GET"
        } else {
            "POST"
        };
        options.push(format!("doh_method {method}"));
    }
    options
}

/// `transfer ZONES { to ...; source ... }`, every `to` address on one line.
pub(super) fn transfer(b: &mut Block, t: &crate::config::transfer::TransferConfig) {
    use crate::config::transfer::To;
    let to: Vec<String> =
        t.to.iter()
            .map(|to| match to {
                To::Any => "*".to_string(),
                To::Addr(a) => a.to_string(),
            })
            .collect();
    let mut options = vec![format!("to {}", to.join(" "))];
    options.extend(t.source.map(|s| format!("source {s}")));
    b.directive(with("transfer", &names(&t.zones)), &options);
}
