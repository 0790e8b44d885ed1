//! How `clusterdns check` prints `forward`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{duration, names, with, Block};
use crate::query::forward::setup::ForwardConfig;

pub(crate) fn forward(b: &mut Block, fw: &ForwardConfig) {
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
    options.push(format!("policy {}", fw.policy.name()));
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

/// `tls`, `tls_servername` and `doh_method`, shown when some upstream is
/// encrypted (they change nothing for plain ones).
fn tls_options(fw: &ForwardConfig) -> Vec<String> {
    use crate::query::forward::setup::tls::{DohMethod, Via};
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
