//! `clusterdns doctor`: the node and pod settings that break cluster DNS
//! in production, each finding with its severity and its fix. The same
//! checks run at start-up (logged as warnings, exported as
//! `clusterdns_doctor_findings{check,severity}`).
//!
//! Every file is read under `root` (normally `/`), so tests feed a fake
//! `/proc` tree.

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub check: &'static str,
    pub severity: Severity,
    pub message: String,
    pub fix: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:8} {}: {}\n         fix: {}",
            self.severity.label().to_uppercase(),
            self.check,
            self.message,
            self.fix
        )
    }
}

/// The receive buffer each UDP socket asks for (see `query::udp`).
pub const WANTED_RMEM: u64 = 4 << 20;

/// What to inspect.
pub struct Inputs {
    pub root: PathBuf,
    /// resolv.conf files the `forward` directives read.
    pub upstream_resolv: Vec<PathBuf>,
    /// A pod's resolv.conf to analyse (`--resolv`).
    pub pod_resolv: Option<PathBuf>,
    /// Pods known on the node or cluster, when known (sizes the neighbour table).
    pub pods: Option<usize>,
    /// Sockets the configuration may hold at once (TCP connection caps of
    /// every listener + the in-flight cap), when known.
    pub sockets: Option<u64>,
}

fn read(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path.trim_start_matches('/'))).ok()
}

fn number(root: &Path, path: &str) -> Option<u64> {
    read(root, path)?.split_whitespace().next()?.parse().ok()
}

/// Runs every check.
pub fn check(inputs: &Inputs) -> Vec<Finding> {
    let checks: [fn(&Inputs, &mut Vec<Finding>); 9] = [
        udp_rmem_max,
        udp_rcvbuf_errors,
        conntrack_fill,
        open_files,
        neighbour_table,
        somaxconn,
        ephemeral_ports,
        upstream_loop,
        search_amplification,
    ];
    let mut out = Vec::new();
    for check in checks {
        check(inputs, &mut out);
    }
    out
}

fn finding(check: &'static str, severity: Severity, message: String, fix: String) -> Finding {
    Finding {
        check,
        severity,
        message,
        fix,
    }
}

/// The UDP receive buffer the kernel lets a socket have.
fn udp_rmem_max(inputs: &Inputs, out: &mut Vec<Finding>) {
    let root = inputs.root.as_path();
    if let Some(max) = number(root, "/proc/sys/net/core/rmem_max") {
        if max < WANTED_RMEM {
            out.push(finding(
                "udp_rmem_max",
                Severity::Warning,
                format!("net.core.rmem_max is {max} bytes; each UDP socket asks for {WANTED_RMEM}, so a burst of queries overflows the socket and is dropped"),
                format!("sysctl -w net.core.rmem_max={} (and persist it in /etc/sysctl.d)", 2 * WANTED_RMEM),
            ));
        }
    }
}

/// UDP datagrams the node already dropped for a full buffer.
fn udp_rcvbuf_errors(inputs: &Inputs, out: &mut Vec<Finding>) {
    let root = inputs.root.as_path();
    if let Some(errors) = read(root, "/proc/net/snmp").and_then(|t| udp_counter(&t, "RcvbufErrors")) {
        if errors > 0 {
            out.push(finding(
                "udp_rcvbuf_errors",
                Severity::Warning,
                format!("{errors} UDP datagrams were dropped on this node because a receive buffer was full"),
                "raise net.core.rmem_max and add DNS replicas; watch clusterdns_udp_kernel_drops".into(),
            ));
        }
    }
}

/// How full the conntrack table is.
fn conntrack_fill(inputs: &Inputs, out: &mut Vec<Finding>) {
    let root = inputs.root.as_path();
    let count = number(root, "/proc/sys/net/netfilter/nf_conntrack_count");
    let max = number(root, "/proc/sys/net/netfilter/nf_conntrack_max");
    if let (Some(count), Some(max)) = (count, max.filter(|m| *m > 0)) {
        let fill = count as f64 / max as f64;
        if fill >= 0.5 {
            out.push(finding(
                "conntrack_fill",
                if fill >= 0.8 { Severity::Critical } else { Severity::Warning },
                format!("the conntrack table is {:.0}% full ({count} of {max}); when it is full new DNS flows are dropped (timeouts of 5 s in pods)", fill * 100.0),
                format!("sysctl -w net.netfilter.nf_conntrack_max={}; or run NodeLocal DNS (deploy/kubernetes/node-local) so pod DNS skips conntrack", max * 4),
            ));
        }
    }
}

/// The open-file limit against the sockets the configuration may hold.
fn open_files(inputs: &Inputs, out: &mut Vec<Finding>) {
    let root = inputs.root.as_path();
    let open_files = read(root, "/proc/self/limits").and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("Max open files"))?;
        line.trim_start_matches("Max open files")
            .split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
    });
    if let (Some(need), Some(limit)) = (inputs.sockets, open_files) {
        if limit < need {
            out.push(finding(
                "open_files",
                Severity::Warning,
                format!("the open-file limit is {limit}, but the TCP connection caps and the cap on forwarded queries in flight allow up to {need} sockets; past the limit new connections and forwarded queries fail"),
                "raise the limit (the container runtime's nofile ulimit, LimitNOFILE= for systemd) or lower `limits { connections N in_flight N }`".to_string(),
            ));
        }
    }
}

/// The neighbour (ARP) table against the pods on the node.
fn neighbour_table(inputs: &Inputs, out: &mut Vec<Finding>) {
    let root = inputs.root.as_path();
    if let Some(t3) = number(root, "/proc/sys/net/ipv4/neigh/default/gc_thresh3") {
        let needed = inputs.pods.map_or(4096, |p| (p as u64 * 2).max(4096));
        if t3 < needed {
            let t1 = number(root, "/proc/sys/net/ipv4/neigh/default/gc_thresh1").unwrap_or(0);
            let t2 = number(root, "/proc/sys/net/ipv4/neigh/default/gc_thresh2").unwrap_or(0);
            out.push(finding(
                "neighbour_table",
                Severity::Warning,
                format!("gc_thresh1/2/3 are {t1}/{t2}/{t3}; with many pods the neighbour (ARP) table overflows ('neighbour table overflow' in dmesg) and DNS packets to pods are lost"),
                format!("sysctl -w net.ipv4.neigh.default.gc_thresh1={} net.ipv4.neigh.default.gc_thresh2={} net.ipv4.neigh.default.gc_thresh3={needed}", needed / 4, needed / 2),
            ));
        }
    }
}

/// The TCP listen backlog the kernel allows.
fn somaxconn(inputs: &Inputs, out: &mut Vec<Finding>) {
    let root = inputs.root.as_path();
    if let Some(somaxconn) = number(root, "/proc/sys/net/core/somaxconn") {
        if somaxconn < 1024 {
            out.push(finding(
                "somaxconn",
                Severity::Info,
                format!("net.core.somaxconn is {somaxconn}; the TCP listener asks for a backlog of 1024, so bursts of TCP connections (NodeLocal DNS, force_tcp) are refused early"),
                "sysctl -w net.core.somaxconn=4096".into(),
            ));
        }
    }
}

/// The ephemeral ports forwarded UDP queries draw from.
fn ephemeral_ports(inputs: &Inputs, out: &mut Vec<Finding>) {
    let root = inputs.root.as_path();
    if let Some(range) = read(root, "/proc/sys/net/ipv4/ip_local_port_range") {
        let mut p = range.split_whitespace().filter_map(|v| v.parse::<u32>().ok());
        if let (Some(lo), Some(hi)) = (p.next(), p.next()) {
            let ports = hi.saturating_sub(lo) + 1;
            if ports < 16384 {
                out.push(finding(
                    "ephemeral_ports",
                    Severity::Warning,
                    format!("only {ports} ephemeral ports ({lo}-{hi}); each forwarded UDP query uses a fresh source port, so high forward rates run out"),
                    "sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"".into(),
                ));
            }
        }
    }
}

/// An upstream resolv.conf naming a local stub (a forwarding loop).
fn upstream_loop(inputs: &Inputs, out: &mut Vec<Finding>) {
    for path in &inputs.upstream_resolv {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let local: Vec<IpAddr> = nameservers(&text).into_iter().filter(|ip| ip.is_loopback()).collect();
        if !local.is_empty() {
            out.push(finding(
                "upstream_loop",
                Severity::Critical,
                format!("{} names a local stub resolver ({}) as upstream: inside a pod that is the pod itself, so forwarding loops (CoreDNS crash-loops here)", path.display(), local.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")),
                "point forward at the node's real resolvers (kubelet --resolv-conf=/run/systemd/resolve/resolv.conf) or list upstream IPs in the Corefile".into(),
            ));
        }
    }
}

/// The queries a pod's search list and ndots cost an outside name.
fn search_amplification(inputs: &Inputs, out: &mut Vec<Finding>) {
    if let Some(path) = &inputs.pod_resolv {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let search: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("search"))
            .flat_map(str::split_whitespace)
            .collect();
        let ndots = text
            .lines()
            .filter_map(|l| l.strip_prefix("options"))
            .flat_map(str::split_whitespace)
            .find_map(|o| o.strip_prefix("ndots:")?.parse::<u32>().ok())
            .unwrap_or(1);
        let walk = (search.len() + 1) * 2;
        out.push(finding(
            "search_amplification",
            if ndots >= 5 && search.len() >= 3 { Severity::Warning } else { Severity::Info },
            format!("{}: ndots:{ndots} with {} search domains: an outside name with fewer than {ndots} dots costs up to {walk} queries (A and AAAA per domain, then the name), {} of them NXDOMAIN", path.display(), search.len(), walk - 2),
            "use fully qualified names (a trailing dot) for outside names, lower ndots in the pod's dnsConfig (e.g. 2), or enable autopath (pods verified)".into(),
        ));
    }
}

fn nameservers(text: &str) -> Vec<IpAddr> {
    crate::query::forward::setup::resolv_conf(text)
        .into_iter()
        .map(|a| a.ip())
        .collect()
}

/// A counter of the `Udp:` lines of /proc/net/snmp.
fn udp_counter(snmp: &str, name: &str) -> Option<u64> {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next()?, udp.next()?);
    let i = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(i)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("clusterdns-doctor-{}-{}", std::process::id(), files.len()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let p = root.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        root
    }

    #[test]
    fn a_healthy_node_has_no_findings_and_a_sick_one_has_each() {
        let healthy = tree(&[
            ("/proc/sys/net/core/rmem_max", "16777216\n"),
            ("/proc/sys/net/netfilter/nf_conntrack_count", "10\n"),
            ("/proc/sys/net/netfilter/nf_conntrack_max", "262144\n"),
            ("/proc/sys/net/ipv4/neigh/default/gc_thresh3", "16384\n"),
            ("/proc/sys/net/core/somaxconn", "4096\n"),
            ("/proc/sys/net/ipv4/ip_local_port_range", "1024\t65535\n"),
            (
                "/proc/self/limits",
                "Max open files            1048576              1048576              files\n",
            ),
        ]);
        let inputs = |root: PathBuf| Inputs {
            root,
            upstream_resolv: Vec::new(),
            pod_resolv: None,
            pods: None,
            sockets: Some(30_000),
        };
        assert_eq!(check(&inputs(healthy)), Vec::new());
        let sick = tree(&[
            ("/proc/sys/net/core/rmem_max", "212992\n"),
            ("/proc/sys/net/netfilter/nf_conntrack_count", "950\n"),
            ("/proc/sys/net/netfilter/nf_conntrack_max", "1000\n"),
            ("/proc/sys/net/ipv4/neigh/default/gc_thresh3", "1024\n"),
            ("/proc/sys/net/core/somaxconn", "128\n"),
            ("/proc/sys/net/ipv4/ip_local_port_range", "32768 33767\n"),
            (
                "/proc/self/limits",
                "Max open files            1024                 4096                 files\n",
            ),
            (
                "/proc/net/snmp",
                "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 1 2 3 4 17\n",
            ),
        ]);
        let found = check(&inputs(sick));
        let checks: Vec<(&str, Severity)> = found.iter().map(|f| (f.check, f.severity)).collect();
        assert_eq!(
            checks,
            [
                ("udp_rmem_max", Severity::Warning),
                ("udp_rcvbuf_errors", Severity::Warning),
                ("conntrack_fill", Severity::Critical),
                ("open_files", Severity::Warning),
                ("neighbour_table", Severity::Warning),
                ("somaxconn", Severity::Info),
                ("ephemeral_ports", Severity::Warning),
            ]
        );
        assert!(found[0].fix.contains("net.core.rmem_max=8388608"));
        assert!(found[2].message.contains("95%"));
        assert!(found[3].message.contains("limit is 1024") && found[3].message.contains("30000"));
        assert!(found[4].fix.contains("gc_thresh3=4096"));
    }

    #[test]
    fn resolv_conf_loops_and_search_amplification() {
        let root = tree(&[
            ("/etc/upstream.conf", "nameserver 127.0.0.53\noptions edns0\n"),
            ("/etc/pod.conf", "nameserver 10.96.0.10\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"),
        ]);
        let found = check(&Inputs {
            root: root.join("nothing"),
            upstream_resolv: vec![root.join("etc/upstream.conf")],
            pod_resolv: Some(root.join("etc/pod.conf")),
            pods: None,
            sockets: None,
        });
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            (found[0].check, found[0].severity),
            ("upstream_loop", Severity::Critical)
        );
        assert!(found[0].message.contains("127.0.0.53"));
        assert_eq!(found[1].check, "search_amplification");
        assert!(found[1].message.contains("up to 8 queries"), "{}", found[1].message);
    }
}
