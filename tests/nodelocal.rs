//! Node-local mode (`nodelocal`) end to end in private network namespaces:
//! a "node" namespace runs the cluster DNS (a clusterdns serving the demo
//! cluster on 10.10.0.2, reached through kube-proxy-like DNAT rules for
//! the kube-dns and kube-dns-upstream Service IPs) and the node-local
//! clusterdns; a "pod" namespace is joined to it by a veth pair and asks
//! with dig. Checked: node-cache's rules after start, answers on the
//! link-local address and (transparent mode) the kube-dns IP without
//! conntrack entries, a rule and an address deleted by hand restored
//! within `check`, teardown at SIGTERM (and none with `teardown off`),
//! the NET_ADMIN error, and the interface: an existing one (veth), and a
//! created `dummy` one where the kernel has the dummy link type.
//!
//! Needs root (network namespaces), iptables and dig; conntrack for the
//! conntrack checks. What is missing fails the test under CI and is
//! skipped elsewhere (`common::needs`), the conntrack checks alone while
//! the rest still runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::netns::{eventually, out, wait_log, Lab};

const LINK_LOCAL: &str = "169.254.20.10";
const KUBE_DNS: &str = "10.96.0.10";
const POD: &str = "10.200.0.2";

/// node-cache's rules for one address as `iptables -S` prints them,
/// written out independently of src/nodelocal/rules.rs.
fn expected(ip: &str) -> (Vec<String>, Vec<String>) {
    let mut raw = Vec::new();
    let mut filter = Vec::new();
    for p in ["tcp", "udp"] {
        raw.push(format!("-A PREROUTING -d {ip}/32 -p {p} -m {p} --dport 53 -j NOTRACK"));
        raw.push(format!("-A OUTPUT -s {ip}/32 -p {p} -m {p} --sport 53 -j NOTRACK"));
        raw.push(format!("-A OUTPUT -d {ip}/32 -p {p} -m {p} --dport 53 -j NOTRACK"));
        filter.push(format!("-A INPUT -d {ip}/32 -p {p} -m {p} --dport 53 -j ACCEPT"));
        filter.push(format!("-A OUTPUT -s {ip}/32 -p {p} -m {p} --sport 53 -j ACCEPT"));
    }
    raw.push(format!("-A OUTPUT -d {ip}/32 -p tcp -m tcp --dport 8080 -j NOTRACK"));
    raw.push(format!("-A OUTPUT -s {ip}/32 -p tcp -m tcp --sport 8080 -j NOTRACK"));
    (raw, filter)
}

/// The test's `lockdir` (the default, under /run, is shared by every
/// instance on the machine).
fn lockdir() -> PathBuf {
    std::env::temp_dir().join(format!("clusterdns-e2e-nodelocal-{}/lockdir", std::process::id()))
}

/// A node-local Corefile; its `lockdir` is in this test's directory.
fn node_corefile(interface: &str, extra: &str) -> String {
    let lockdir = lockdir();
    format!(
        "cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {{\n    bind {LINK_LOCAL} {KUBE_DNS}\n    forward . 10.96.0.11 {{\n        force_tcp\n    }}\n    cache 30\n    health {LINK_LOCAL}:8080\n    prometheus {LINK_LOCAL}:9253\n    nodelocal {{\n        interface {interface}\n        addresses {LINK_LOCAL} {KUBE_DNS}\n        check 1s\n        lockdir {}\n        {extra}\n    }}\n}}\n",
        lockdir.display()
    )
}

/// Builds the namespaces; `Err` names what this machine lacks.
fn lab() -> Result<Lab, String> {
    let id = std::process::id() % 100_000;
    let lab = Lab::create(
        format!("cdns-node-{id}"),
        format!("cdns-pod-{id}"),
        common::temp_dir("nodelocal"),
    )?;
    let (n, p) = (lab.node.clone(), lab.pod.clone());
    for tool in ["iptables", "dig"] {
        if !lab.sh(&n, &format!("command -v {tool}")).0 {
            return Err(format!("{tool} is not installed"));
        }
    }
    if let (false, e) = lab.sh(&n, "iptables -t raw -S") {
        return Err(format!(
            "the kernel has no raw table (CONFIG_IP_NF_RAW or nf_tables): {}",
            e.trim()
        ));
    }
    lab.must(&n, &format!("ip link set lo up && ip link add vn type veth peer name vp netns {p} && ip addr add 10.200.0.1/24 dev vn && ip link set vn up && ip addr add 10.10.0.2/32 dev lo && ip route add 10.96.0.0/16 dev vn"));
    lab.must(&p, &format!("ip link set lo up && ip addr add {POD}/24 dev vp && ip link set vp up && ip route add default via 10.200.0.1"));
    // An existing interface for `interface`: one end of a veth pair, down.
    lab.must(&n, "ip link add nl0 type veth peer name nl0p");
    // kube-proxy's part: Service IPs DNATed to the cluster DNS, and a
    // conntrack-state rule (as kube-proxy installs) after which ours must come.
    lab.must(&n, &format!("iptables -t nat -A PREROUTING -d {KUBE_DNS} -p udp --dport 53 -j DNAT --to-destination 10.10.0.2 && iptables -t nat -A PREROUTING -d {KUBE_DNS} -p tcp --dport 53 -j DNAT --to-destination 10.10.0.2 && iptables -t nat -A OUTPUT -d 10.96.0.11 -p tcp --dport 53 -j DNAT --to-destination 10.10.0.2 && iptables -A INPUT -m conntrack --ctstate INVALID -j DROP"));
    Ok(lab)
}

/// The pod's conntrack entries in the node namespace; `None` when this
/// kernel or machine cannot list them.
fn pod_flows(lab: &Lab) -> Option<usize> {
    let (ok, text) = lab.sh(&lab.node, &format!("conntrack -L -s {POD}"));
    ok.then(|| text.lines().filter(|l| l.contains(&format!("src={POD}"))).count())
}

/// Both tables' expected rules for the link-local and kube-dns addresses, sorted.
fn expected_rules() -> (Vec<String>, Vec<String>) {
    let (mut raw, mut filter) = (Vec::new(), Vec::new());
    for ip in [LINK_LOCAL, KUBE_DNS] {
        let (r, f) = expected(ip);
        raw.extend(r);
        filter.extend(f);
    }
    raw.sort();
    filter.sort();
    (raw, filter)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn node_local_mode_in_network_namespaces() {
    let install = "run as root; tests/run installs iptables, nftables, conntrack and bind9-dnsutils";
    let Some(mut lab) = common::needs("nodelocal", lab(), install) else {
        return;
    };
    let conntrack = cluster_dns_and_control(&mut lab);
    let (i, log, ipt) = transparent_on_an_existing_interface(&mut lab, conntrack);
    restored_within_check(&lab, ipt, &log);
    torn_down_at_sigterm(&mut lab, ipt, i, &log);
    teardown_off_and_restart(&mut lab, ipt);
    without_net_admin(&lab);
    dummy_or_its_clear_error(&mut lab);
}

/// Starts the cluster DNS; the control query to the kube-dns IP (DNAT)
/// must leave a conntrack entry, or the bypass check could not fail.
/// `None`: conntrack cannot be listed here.
fn cluster_dns_and_control(lab: &mut Lab) -> Option<usize> {
    let conf = format!(
        ".:53 {{\n    bind 10.10.0.2\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        snapshot {}\n    }}\n}}\n",
        common::demo_cluster().display()
    );
    let (_, log) = lab.start("cluster", &conf);
    wait_log(&log, "listening on tcp 10.10.0.2:53");
    let answered = eventually(|| lab.dig(KUBE_DNS, "kubernetes.default.svc.cluster.local", false) == "10.96.0.1");
    assert!(answered, "the cluster DNS answers through DNAT");
    let listed = pod_flows(lab).ok_or_else(|| "conntrack -L does not work here".to_string());
    let install = "apt-get install conntrack (tests/run installs it); the kernel needs nf_conntrack_netlink";
    let conntrack = common::needs("nodelocal's conntrack bypass", listed, install);
    if let Some(n) = conntrack {
        assert!(
            n >= 1,
            "the control query left no conntrack entry: the conntrack check could not fail"
        );
    }
    conntrack
}

/// Link-local + transparent on an existing interface (a veth end, down):
/// node-cache's rules, above kube-proxy's; answers on both addresses over
/// UDP and TCP with no conntrack entry for the pod. Returns the server,
/// its log and the iptables it used.
fn transparent_on_an_existing_interface(lab: &mut Lab, conntrack: Option<usize>) -> (usize, PathBuf, &'static str) {
    let (i, log) = lab.start("node", &node_corefile("nl0", ""));
    let text = wait_log(&log, "NOTRACK/ACCEPT rules installed through");
    assert!(text.contains("24 of 24 NOTRACK/ACCEPT rules installed"), "{text}");
    let ipt = ["iptables-legacy", "iptables-nft"]
        .into_iter()
        .find(|b| text.contains(&format!("through {b}")))
        .unwrap_or("iptables");
    // the image's `iptables` commands (links to LOCKDIR/xtables) run the
    // backend chosen
    let multi = if ipt == "iptables-legacy" {
        "xtables-legacy-multi"
    } else {
        "xtables-nft-multi"
    };
    let link = std::fs::read_link(lockdir().join("xtables")).unwrap_or_default();
    assert!(
        link.ends_with(multi),
        "{}/xtables -> {}, not {multi}",
        lockdir().display(),
        link.display()
    );
    let (raw, filter) = expected_rules();
    assert_eq!(sorted(lab.rules(ipt, "raw")), raw, "raw table");
    assert_eq!(sorted(lab.rules(ipt, "filter")), filter, "filter table");
    let input = lab.must(&lab.node, &format!("{ipt} -S INPUT"));
    assert!(
        input.trim_end().ends_with("-j DROP"),
        "ACCEPT rules go above kube-proxy's: {input}"
    );
    assert!(
        lab.must(&lab.node, "ip -o link show nl0").contains(",UP"),
        "interface brought up"
    );
    if conntrack.is_some() {
        lab.must(&lab.node, "conntrack -F");
    }
    for tcp in [false, true] {
        assert_eq!(
            lab.dig(LINK_LOCAL, "kubernetes.default.svc.cluster.local", tcp),
            "10.96.0.1"
        );
        assert_eq!(lab.dig(KUBE_DNS, "web.shop.svc.cluster.local", tcp), "10.96.12.34");
    }
    if conntrack.is_some() {
        let all = lab.sh(&lab.node, "conntrack -L").1;
        assert_eq!(pod_flows(lab), Some(0), "the pod's DNS must skip conntrack: {all}");
    }
    let served = lab.metrics(LINK_LOCAL, 9253);
    assert!(
        served.contains("coredns_dns_requests_total{server=\"dns://169.254.20.10:53\""),
        "{served}"
    );
    (i, log, ipt)
}

/// A rule and an address deleted by hand are put back by `check` (1 s),
/// logged and counted; doctor finds nothing wrong.
fn restored_within_check(lab: &Lab, ipt: &str, log: &Path) {
    lab.must(&lab.node, &format!("{ipt} -t raw -D PREROUTING -d {KUBE_DNS} -p udp --dport 53 -j NOTRACK && ip addr del {LINK_LOCAL}/32 dev nl0"));
    let (raw, _) = expected_rules();
    assert!(eventually(|| sorted(lab.rules(ipt, "raw")) == raw), "rule not restored");
    let address_back = eventually(|| lab.sh(&lab.node, "ip -o addr show dev nl0").1.contains(LINK_LOCAL));
    assert!(address_back, "address not restored");
    // the check puts a rule back, then counts it: read the counters until they
    // say so (bounded), not in the same instant the rule reappeared
    let want = [
        "clusterdns_nodelocal_restored_total{what=\"rule\"} 1",
        "clusterdns_nodelocal_restored_total{what=\"address\"} 1",
        "coredns_nodecache_setup_errors_total{errortype=\"iptables\"} 0",
    ];
    let counted = eventually(|| {
        let m = lab.metrics(LINK_LOCAL, 9253);
        want.iter().all(|series| m.contains(series))
    });
    let m = lab.metrics(LINK_LOCAL, 9253);
    for series in want {
        assert!(counted && m.contains(series), "no {series} in:\n{m}");
    }
    wait_log(
        log,
        "rule was missing, added back: -t raw PREROUTING -p udp -d 10.96.0.10",
    );
    let doctor = lab.doctor("node");
    assert!(
        !doctor.contains("nodelocal_"),
        "doctor on a healthy node-local node: {doctor}"
    );
}

/// SIGTERM: rules and addresses gone, the existing interface kept, and the
/// kube-dns IP answered by the cluster DNS through DNAT again.
fn torn_down_at_sigterm(lab: &mut Lab, ipt: &str, i: usize, log: &Path) {
    assert!(lab.stop(i), "clean exit");
    wait_log(log, "torn down");
    assert!(
        lab.rules(ipt, "raw").is_empty() && lab.rules(ipt, "filter").is_empty(),
        "rules left after teardown"
    );
    assert!(
        !lab.sh(&lab.node, "ip -o addr show dev nl0").1.contains("inet "),
        "addresses left after teardown"
    );
    assert!(
        lab.sh(&lab.node, "ip -o link show nl0").0,
        "an existing interface is kept"
    );
    assert_eq!(
        lab.dig(KUBE_DNS, "web.shop.svc.cluster.local", false),
        "10.96.12.34",
        "rolled back to DNAT"
    );
    let doctor = lab.doctor("node");
    assert!(
        doctor.contains("nodelocal_addresses") && doctor.contains("nodelocal_rules"),
        "doctor after teardown: {doctor}"
    );
}

/// `teardown off` leaves everything; a restart finds it all in place and
/// its teardown removes it.
fn teardown_off_and_restart(lab: &mut Lab, ipt: &str) {
    let (i, log) = lab.start("keep", &node_corefile("nl0", "teardown off"));
    wait_log(&log, "NOTRACK/ACCEPT rules installed");
    assert!(lab.stop(i));
    wait_log(&log, "teardown off: leaving interface nl0");
    assert_eq!(sorted(lab.rules(ipt, "raw")), expected_rules().0, "rules kept");
    assert!(lab.sh(&lab.node, "ip -o addr show dev nl0").1.contains(KUBE_DNS));
    let (i, log) = lab.start("again", &node_corefile("nl0", ""));
    let text = wait_log(&log, "NOTRACK/ACCEPT rules installed");
    assert!(
        text.contains("0 of 24 NOTRACK/ACCEPT rules installed") && text.contains("24 already there"),
        "{text}"
    );
    assert!(lab.stop(i));
    assert!(lab.rules(ipt, "raw").is_empty(), "teardown after a restart");
}

/// Without NET_ADMIN: a clear error at once, nothing changed.
fn without_net_admin(lab: &Lab) {
    let conf = lab.dir.join("nocap.Corefile");
    std::fs::write(&conf, node_corefile("nl0", "")).expect("write Corefile");
    let nocap = Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.node,
            "setpriv",
            "--inh-caps=-net_admin",
            "--bounding-set=-net_admin",
        ])
        .arg(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("-conf")
        .arg(&conf)
        .output()
        .expect("setpriv");
    let text = out(&nocap);
    assert!(
        !nocap.status.success() && text.contains("lacks the NET_ADMIN capability"),
        "{text}"
    );
    assert!(
        !lab.sh(&lab.node, "ip -o addr show dev nl0").1.contains("inet "),
        "nothing set up without NET_ADMIN"
    );
}

/// A missing interface: a dummy link, deleted at teardown, where the
/// kernel has the type; a clear error where it does not.
fn dummy_or_its_clear_error(lab: &mut Lab) {
    let dummy = lab
        .sh(&lab.node, "ip link add probe0 type dummy && ip link del probe0")
        .0;
    let (i, log) = lab.start("dummy", &node_corefile("nodelocaldns", ""));
    if dummy {
        let text = wait_log(&log, "NOTRACK/ACCEPT rules installed");
        assert!(text.contains("interface nodelocaldns created (dummy)"), "{text}");
        assert_eq!(
            lab.dig(LINK_LOCAL, "kubernetes.default.svc.cluster.local", false),
            "10.96.0.1"
        );
        assert!(lab.stop(i));
        assert!(
            !lab.sh(&lab.node, "ip link show nodelocaldns").0,
            "dummy link deleted at teardown"
        );
    } else {
        println!("nodelocal: NOT CHECKED: this kernel has no `dummy` link type; checked its clear error instead (and an existing interface above)");
        let text = wait_log(&log, "no `dummy` link type");
        assert!(
            text.contains("interface nodelocaldns: cannot create a dummy link"),
            "{text}"
        );
        assert!(!lab.stop(i), "exits with an error");
    }
}
