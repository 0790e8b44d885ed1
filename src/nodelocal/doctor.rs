//! `clusterdns doctor` on a node-local node: is the interface there and
//! up with its addresses, are node-cache's rules in place, and does DNS
//! to the node-local addresses really skip conntrack.

use std::process::Stdio;

use super::firewall::Firewall;
use super::link::Netlink;
use crate::config::nodelocal::NodeLocalConfig;
use crate::doctor::{Finding, Severity};

fn finding(check: &'static str, severity: Severity, message: String, fix: &str) -> Finding {
    Finding {
        check,
        severity,
        message,
        fix: fix.to_string(),
    }
}

/// Every node-local finding for `cfg` on this node.
pub async fn check(cfg: &NodeLocalConfig) -> Vec<Finding> {
    let mut out = Vec::new();
    let restart = "restart the node-local pod (it sets the interface up); see its log for the error";
    match Netlink::connect() {
        Err(e) => out.push(finding(
            "nodelocal_interface",
            Severity::Warning,
            format!("cannot read interfaces over netlink: {e}"),
            "run doctor inside the node-local pod (host network)",
        )),
        Ok(netlink) => match netlink.state(&cfg.interface).await {
            Ok(None) => out.push(finding(
                "nodelocal_interface",
                Severity::Critical,
                format!(
                    "interface {} does not exist: pods pointed at {} get no answer",
                    cfg.interface,
                    crate::corefile::args::spaced(&cfg.addresses, "")
                ),
                restart,
            )),
            Ok(Some(state)) => {
                if !state.up {
                    out.push(finding(
                        "nodelocal_interface",
                        Severity::Critical,
                        format!("interface {} is down", cfg.interface),
                        restart,
                    ));
                }
                let missing: Vec<_> = cfg.addresses.iter().filter(|ip| !state.has(ip)).collect();
                if !missing.is_empty() {
                    out.push(finding(
                        "nodelocal_addresses",
                        Severity::Critical,
                        format!(
                            "interface {} lacks {}",
                            cfg.interface,
                            crate::corefile::args::spaced(&missing, "")
                        ),
                        restart,
                    ));
                }
            }
            Err(e) => out.push(finding(
                "nodelocal_interface",
                Severity::Warning,
                format!("cannot read interface {}: {}: {}", cfg.interface, e.step, e.source),
                "run doctor inside the node-local pod (host network)",
            )),
        },
    }
    if cfg.iptables {
        rules_present(cfg, &mut out).await;
    }
    conntrack_bypassed(cfg, &mut out).await;
    out
}

async fn rules_present(cfg: &NodeLocalConfig, out: &mut Vec<Finding>) {
    let Some(firewall) = Firewall::choose(cfg).await else {
        return;
    };
    let missing = match firewall.missing().await {
        Ok(m) => m,
        Err(e) => {
            out.push(finding(
                "nodelocal_rules",
                Severity::Warning,
                format!("cannot list the rules: {e}"),
                "run doctor inside the node-local pod (it has NET_ADMIN)",
            ));
            return;
        }
    };
    if !missing.is_empty() {
        out.push(finding(
            "nodelocal_rules",
            Severity::Critical,
            format!(
                "{} of node-cache's {} rules are missing through {firewall} (e.g. {}): DNS to the node-local address is tracked by conntrack",
                missing.len(),
                firewall.count(),
                missing.iter().take(2).cloned().collect::<Vec<_>>().join("; ")
            ),
            "the node-local pod restores them within its `check` interval; if they stay missing, see its log (coredns_nodecache_setup_errors_total)",
        ));
    }
}

/// Counts conntrack entries for DNS to the node-local addresses: with the
/// NOTRACK rules in place there are none.
async fn conntrack_bypassed(cfg: &NodeLocalConfig, out: &mut Vec<Finding>) {
    let mut tracked = 0usize;
    for ip in &cfg.addresses {
        for proto in ["udp", "tcp"] {
            let port = cfg.port.to_string();
            let args = ["-L", "-p", proto, "--dst", &ip.to_string(), "--dport", &port];
            let run = tokio::process::Command::new("conntrack")
                .args(args)
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output();
            match tokio::time::timeout(std::time::Duration::from_secs(10), run).await {
                Ok(Ok(o)) if o.status.success() => {
                    tracked += String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .filter(|l| !l.trim().is_empty())
                        .count();
                }
                Ok(Ok(o)) => {
                    let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
                    out.push(finding(
                        "nodelocal_conntrack",
                        Severity::Info,
                        format!("cannot read the conntrack table: {err}"),
                        "conntrack is not loaded on this node, or run doctor with NET_ADMIN",
                    ));
                    return;
                }
                _ => {
                    out.push(finding(
                        "nodelocal_conntrack",
                        Severity::Info,
                        "cannot verify that DNS skips conntrack: the conntrack tool is not installed".into(),
                        "install conntrack (conntrack-tools) to verify",
                    ));
                    return;
                }
            }
        }
    }
    if tracked > 0 {
        out.push(finding(
            "nodelocal_conntrack",
            Severity::Warning,
            format!("{tracked} conntrack entries for DNS to {}: those queries are tracked (each takes a conntrack slot; a full table drops DNS)", crate::corefile::args::spaced(&cfg.addresses, "")),
            "check that the raw-table NOTRACK rules come before any other raw rule (`iptables -t raw -S`); entries made before the rules went in expire by themselves",
        ));
    }
}
