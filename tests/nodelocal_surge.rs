//! Surge upgrades of the node-local cache with no lost query, in private
//! network namespaces: a "node" namespace runs two clusterdns `nodelocal`
//! instances side by side (link-local 169.254.20.10 and, transparent
//! mode, the kube-dns IP 10.96.0.10, on an existing interface), a "pod"
//! namespace sends a steady UDP load and a few persistent TCP connections
//! to both addresses (tests/common/surge.rs, run by this binary inside the
//! namespace). While it runs: hand-overs in a row (start B, wait until it
//! serves, SIGTERM A; then the reverse), then one where the old instance
//! is killed (`kill -9`) instead; the interface's addresses and the rules
//! are checked every 100 ms. Asserted: no query lost and no SERVFAIL over
//! the hand-overs, addresses and rules (exactly once each) present
//! throughout, and everything torn down after the last instance stops.
//! Printed for comparison: the loss of stop-then-start (no surge).
//! The hand-over's edge cases (a successor that dies before serving, an
//! unusable `lockdir`) are in nodelocal_surge/orphan.rs.
//!
//! Needs root (network namespaces), iptables and ip.

mod common;
#[path = "nodelocal_surge/counters.rs"]
mod counters;
#[path = "nodelocal_surge/orphan.rs"]
mod orphan;
#[path = "common/surge.rs"]
mod surge;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::netns::{wait_log, Lab};
use counters::{counter_diff, drop_counters, logged_late_drops, moved, scraped_late_drops};
use surge::Tally;

const LINK_LOCAL: &str = "169.254.20.10";
const KUBE_DNS: &str = "10.96.0.10";
const NAME: &str = "kubernetes.default.svc.cluster.local";
/// UDP queries a second (a debug build of the server on a shared 2-core
/// machine; `NODELOCAL_SURGE_RATE` sets another, as
/// loadtest/bench/nodelocal-surge.sh does with a release build).
const RATE: f64 = 3000.0;
const RATE_ENV: &str = "NODELOCAL_SURGE_RATE";
const TCP_CONNECTIONS: usize = 4;
const ENV: &str = "NODELOCAL_SURGE_CLIENT";
/// Requests the first instance has answered before the first step.
const FLOWING: f64 = 1000.0;
/// One test at a time: each runs servers and a load on the same 2 cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Without root or the tools: fails under `CI`, else says what it skips.
fn not_checked(why: &str) {
    assert!(std::env::var_os("CI").is_none(), "nodelocal surge: {why}");
    println!("nodelocal surge: NOT CHECKED: {why}");
}

/// The client, inside the pod namespace (see the module doc); not a test
/// of its own.
#[test]
#[ignore]
fn surge_client() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let targets: Vec<SocketAddr> = [LINK_LOCAL, KUBE_DNS]
        .iter()
        .map(|ip| SocketAddr::new(ip.parse().expect("ip"), 53))
        .collect();
    println!(
        "{}",
        surge::client(&targets, NAME, rate(), TCP_CONNECTIONS, std::path::Path::new(&spec))
    );
}

/// The UDP rate: [`RATE`], or `NODELOCAL_SURGE_RATE`'s.
fn rate() -> f64 {
    std::env::var(RATE_ENV)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(RATE)
}

/// How the rules are programmed in one run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// `rules auto` with no kube-proxy nftables table: iptables.
    Iptables,
    /// `rules auto` beside a `kube-proxy` nftables table: nftables.
    Nftables,
}

impl Mode {
    /// A shell command printing our rules, one per line with the target.
    fn list(self, ipt: &str) -> String {
        match self {
            Mode::Iptables => format!("{ipt}-save -t raw; {ipt}-save -t filter"),
            Mode::Nftables => "nft list table inet clusterdns-nodelocal".into(),
        }
    }

    /// Our rules in `text` (what [`Mode::list`] printed).
    fn count(self, text: &str) -> usize {
        match self {
            Mode::Iptables => text
                .lines()
                .filter(|l| l.starts_with("-A") && (l.contains("NOTRACK") || l.contains("ACCEPT")))
                .count(),
            Mode::Nftables => text.lines().filter(|l| l.trim_end().ends_with("notrack")).count(),
        }
    }

    /// Rules for the two addresses: node-cache's 12 each; 8 notrack each in nftables.
    fn expected(self) -> usize {
        match self {
            Mode::Iptables => 24,
            Mode::Nftables => 16,
        }
    }
}

fn corefile(lab: &Lab) -> String {
    format!(
        "cluster.local:53 in-addr.arpa:53 {{\n    bind {LINK_LOCAL} {KUBE_DNS}\n    kubernetes cluster.local in-addr.arpa {{\n        snapshot {}\n    }}\n    health {LINK_LOCAL}:8080\n    ready {LINK_LOCAL}:8181\n    prometheus {LINK_LOCAL}:9253\n    nodelocal {{\n        interface nl0\n        check 1s\n        rules auto\n        lockdir {}\n    }}\n}}\n",
        common::demo_cluster().display(),
        lab.dir.join("lockdir").display()
    )
}

/// The namespaces of one test (`tag` tells the tests apart).
fn lab(mode: Mode, tag: &str) -> Result<Lab, String> {
    let id = std::process::id() % 100_000;
    let m = if mode == Mode::Iptables { "i" } else { "n" };
    let lab = Lab::create(
        format!("cdns-s{m}{tag}node-{id}"),
        format!("cdns-s{m}{tag}pod-{id}"),
        common::temp_dir(&format!("nodelocal-surge-{m}{tag}")),
    )?;
    for (tool, package) in [("iptables", "iptables"), ("nft", "nftables")] {
        if !lab.sh(&lab.node, &format!("command -v {tool}")).0 {
            return Err(format!("{tool} is not installed (apt-get install -y {package})"));
        }
    }
    if mode == Mode::Nftables {
        // kube-proxy's nftables mode, as `rules auto` recognises it.
        lab.must(&lab.node, "nft add table ip kube-proxy");
    }
    let (n, p) = (lab.node.clone(), lab.pod.clone());
    lab.must(&n, &format!("ip link set lo up && ip link add vn type veth peer name vp netns {p} && ip addr add 10.200.0.1/24 dev vn && ip link set vn up && ip route add 10.96.0.0/16 dev vn && ip link add nl0 type veth peer name nl0p"));
    lab.must(&p, "ip link set lo up && ip addr add 10.200.0.2/24 dev vp && ip link set vp up && ip route add default via 10.200.0.1");
    Ok(lab)
}

/// Starts the client in the pod namespace for `secs`.
/// The running load and the file that stops it.
struct Client {
    child: std::process::Child,
    stop: PathBuf,
}

/// Starts the load; it runs until [`finish_client`].
fn start_client(lab: &Lab) -> Client {
    static STARTED: AtomicU64 = AtomicU64::new(0);
    let stop = lab
        .dir
        .join(format!("stop-client-{}", STARTED.fetch_add(1, Ordering::Relaxed)));
    let exe = std::env::current_exe().expect("test binary");
    let child = Command::new("ip")
        .args(["netns", "exec", &lab.pod])
        .arg(exe)
        .args([
            "--ignored",
            "--exact",
            "surge_client",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ENV, &stop)
        .env(RATE_ENV, rate().to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the client");
    Client { child, stop }
}

/// Stops the load and reads its tally.
fn finish_client(client: Client) -> Tally {
    std::fs::write(&client.stop, b"").expect("write the stop file");
    let out = client.child.wait_with_output().expect("client");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter_map(|l| l.split_once("LOST "))
        .for_each(|(_, l)| println!("client: lost {l}"));
    Tally::parse(&text).unwrap_or_else(|| panic!("no tally from the client:\n{text}"))
}

/// Samples the node every 100 ms until `done`: `(samples, bad samples,
/// the first bad one)`. Good: both addresses on nl0 and each of the
/// rules exactly once. `taken` counts the samples as they are taken.
fn watch_node(
    lab: &Lab,
    mode: Mode,
    ipt: &str,
    done: Arc<AtomicBool>,
    taken: Arc<AtomicU64>,
) -> std::thread::JoinHandle<(u64, u64, String)> {
    let node = lab.node.clone();
    let cmd = format!("ip -o addr show dev nl0; {}", mode.list(ipt));
    std::thread::spawn(move || {
        let (mut samples, mut bad, mut first) = (0, 0, String::new());
        while !done.load(Ordering::Relaxed) {
            let o = Command::new("ip")
                .args(["netns", "exec", &node, "sh", "-c", &cmd])
                .output();
            let text = o.map(|o| common::netns::out(&o)).unwrap_or_default();
            let addrs = [LINK_LOCAL, KUBE_DNS]
                .iter()
                .filter(|a| text.contains(&format!("inet {a}/32")))
                .count();
            let rules = mode.count(&text);
            samples += 1;
            taken.store(samples, Ordering::Relaxed);
            if addrs != 2 || rules != mode.expected() {
                bad += 1;
                if first.is_empty() {
                    first = format!("{addrs} addresses, {rules} rules:\n{text}");
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        (samples, bad, first)
    })
}

/// Starts an instance and waits until it serves.
fn start_serving(lab: &mut Lab, tag: &str) -> (usize, PathBuf, String) {
    let conf = corefile(lab);
    let (i, log) = lab.start(tag, &conf);
    let text = wait_log(&log, "rules installed through");
    (i, log, text)
}

/// Waits until `/ready` answers 200: the first instance,
/// alone, binds before its cluster state is loaded and answers SERVFAIL
/// for cluster names until then, as CoreDNS does.
fn wait_ready(lab: &Lab) {
    let cmd = format!("exec 3<>/dev/tcp/{LINK_LOCAL}/8181; printf 'GET /ready HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3");
    let ready = common::netns::eventually(|| {
        let o = Command::new("ip")
            .args(["netns", "exec", &lab.node, "bash", "-c", &cmd])
            .output();
        o.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("200 OK"))
    });
    assert!(ready, "the first instance is not ready");
}

/// Waits (a ceiling that only catches a hang) until the node has been
/// sampled twice more than `seen`: every step is checked, however slowly
/// the machine takes the samples.
fn sampled_twice_since(taken: &AtomicU64, seen: u64) {
    let twice = common::netns::eventually(|| taken.load(Ordering::Relaxed) >= seen + 2);
    assert!(twice, "the node was not sampled twice");
}

/// Waits until the server at `ip` has counted `n` requests: the load
/// flows before the first step it is there for.
fn load_flowing(lab: &Lab, ip: &str, n: f64) {
    let flowing =
        common::netns::eventually(|| common::sum_of(&lab.metrics(ip, 9253), "coredns_dns_requests_total", "") >= n);
    assert!(flowing, "the load did not reach {n} requests at {ip}");
}

fn kill9(lab: &mut Lab, i: usize) {
    let _ = lab.children[i].kill();
    let _ = lab.children[i].wait();
}

#[test]
fn surge_upgrades_lose_no_query() {
    let _serial = SERIAL.lock();
    for mode in [Mode::Iptables, Mode::Nftables] {
        surges(mode);
    }
}

fn surges(mode: Mode) {
    let mut lab = match lab(mode, "") {
        Ok(l) => l,
        Err(why) => return not_checked(&why),
    };
    let (mut old, _, text) = start_serving(&mut lab, "a0");
    wait_ready(&lab);
    let ipt = ["iptables-legacy", "iptables-nft"]
        .into_iter()
        .find(|b| text.contains(&format!("through {b}")))
        .unwrap_or("iptables");
    let through = if mode == Mode::Nftables {
        "through nftables"
    } else {
        "through iptables"
    };
    assert!(text.contains(through), "{mode:?}: {text}");
    // NODELOCAL_SURGE_HANDOVERS=0: the same load with no hand-over, the
    // control for what a saturated machine loses anyway.
    let surges: usize = std::env::var("NODELOCAL_SURGE_HANDOVERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);
    let done = Arc::new(AtomicBool::new(false));
    let taken = Arc::new(AtomicU64::new(0));
    let watcher = watch_node(&lab, mode, ipt, done.clone(), taken.clone());
    let counted = [drop_counters(&lab, &lab.node), drop_counters(&lab, &lab.pod)];
    let client = start_client(&lab);
    let t0 = std::time::Instant::now();
    let mut timeline = Vec::new();
    load_flowing(&lab, LINK_LOCAL, FLOWING);
    let handed = AtomicU64::new(0);
    // Queries the servers' overload policy dropped (a starved machine).
    let mut late = 0;
    for k in 1..=surges {
        let seen = taken.load(Ordering::Relaxed);
        let (new, log, _) = start_serving(&mut lab, &format!("s{k}"));
        timeline.push(format!("s{k} serving {:.1}", t0.elapsed().as_secs_f64()));
        assert!(lab.stop(old), "old instance exits cleanly");
        timeline.push(format!("old gone {:.1}", t0.elapsed().as_secs_f64()));
        let gone = std::fs::read_to_string(lab.dir.join(format!("{}.log", tag_of(k - 1)))).unwrap_or_default();
        assert!(gone.contains("handing over to instance"), "no hand-over:\n{gone}");
        late += logged_late_drops(&gone);
        if let Some(l) = gone.lines().find(|l| l.contains("lost at close")) {
            timeline.push(l.split_once("nodelocal: ").map_or(l, |(_, m)| m).to_string());
        }
        assert!(
            gone.contains("not tearing down"),
            "the old one must not tear down:\n{gone}"
        );
        handed.fetch_add(1, Ordering::Relaxed);
        old = new;
        let _ = log;
        sampled_twice_since(&taken, seen);
        std::thread::sleep(Duration::from_millis(700));
    }
    let tally = finish_client(client);
    late += scraped_late_drops(&lab.metrics(LINK_LOCAL, 9253));
    let after = [drop_counters(&lab, &lab.node), drop_counters(&lab, &lab.pod)];
    let buffers: u64 = (0..2).map(|i| moved(&counted[i], &after[i], "UdpRcvbufErrors")).sum();
    println!(
        "nodelocal surge ({mode:?}): timeline (s after the client started): {}; kernel counters moved: node [{}] pod [{}]; servers' late drops {late}",
        timeline.join(", "),
        counter_diff(&counted[0], &after[0]),
        counter_diff(&counted[1], &after[1])
    );
    let doctor = lab.doctor(&format!("s{surges}"));
    assert!(
        !doctor.contains("nodelocal_rules"),
        "{mode:?}: doctor finds rules missing: {doctor}"
    );
    done.store(true, Ordering::Relaxed);
    let (samples, bad, first) = watcher.join().expect("watcher");
    println!("nodelocal surge ({mode:?}): {surges} hand-overs under {} UDP qps + {TCP_CONNECTIONS} TCP connections: {tally:?}; node checked {samples} times, {bad} bad", rate());
    assert!(tally.sent as f64 >= FLOWING, "the load ran: {tally:?}");
    // Each query an overloaded machine drops is counted once: by a full
    // receive buffer (client's or servers') or by a server's late drop.
    // What no counter saw is the hand-over's: it must be none. What is
    // attributed so is reported, and bounded: at most 0.1% of the sent.
    let attributed = tally.lost.min(late + buffers);
    let unaccounted = tally.lost - attributed;
    println!(
        "nodelocal surge ({mode:?}): {attributed} lost queries attributed ({late} late drops, {buffers} receive-buffer drops) of {} sent",
        tally.sent
    );
    assert_eq!(
        (unaccounted, tally.servfail),
        (0, 0),
        "UDP across hand-overs ({late} late drops, {buffers} receive-buffer drops): {tally:?}"
    );
    assert!(
        attributed * 1000 <= tally.sent,
        "{attributed} lost queries attributed to drops, over 0.1% of {} sent: {tally:?}",
        tally.sent
    );
    assert_eq!(
        (tally.tcp_lost, tally.tcp_servfail),
        (0, 0),
        "TCP across hand-overs: {tally:?}"
    );
    assert!(
        samples >= 2 * surges as u64 && bad == 0,
        "{bad} of {samples} samples wrong; first: {first}"
    );

    // A crash of either instance while both serve: the survivor keeps
    // serving, with everything in place.
    let client = start_client(&lab);
    std::thread::sleep(Duration::from_millis(1000));
    let (new, _, _) = start_serving(&mut lab, "k1");
    kill9(&mut lab, old);
    std::thread::sleep(Duration::from_millis(1500));
    let (doomed, _, _) = start_serving(&mut lab, "k2");
    kill9(&mut lab, doomed);
    std::thread::sleep(Duration::from_millis(1000));
    let killed = finish_client(client);
    println!(
        "nodelocal surge ({mode:?}): kill -9 of the old instance, then of a new one, beside a serving one: {killed:?}"
    );
    // Lost: what the killed ones held queued, never a gap (under a second
    // of the load, however busy the machine).
    assert!(killed.lost < rate() as u64 && killed.servfail == 0, "{killed:?}");
    assert!(
        lab.sh(&lab.node, "ip -o addr show dev nl0").1.contains(LINK_LOCAL),
        "survivor keeps the address"
    );
    assert_eq!(
        mode.count(&lab.sh(&lab.node, &mode.list(ipt)).1),
        mode.expected(),
        "survivor keeps the rules"
    );

    // The baseline: stop, then start (what node-cache can do).
    let client = start_client(&lab);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(lab.stop(new), "last instance exits cleanly");
    let (last, _, _) = start_serving(&mut lab, "b1");
    let baseline = finish_client(client);
    println!("nodelocal surge ({mode:?}): stop-then-start baseline: {baseline:?}");

    assert!(lab.stop(last), "last instance exits cleanly");
    assert!(
        lab.rules(ipt, "raw").is_empty() && lab.rules(ipt, "filter").is_empty(),
        "iptables rules left after the last one stopped"
    );
    let left = lab.sh(&lab.node, &Mode::Nftables.list(ipt)).1;
    assert_eq!(
        Mode::Nftables.count(&left),
        0,
        "nftables rules left after the last one stopped: {left}"
    );
    assert!(
        !lab.sh(&lab.node, "ip -o addr show dev nl0").1.contains("inet "),
        "addresses left after the last one stopped"
    );
    let leases: Vec<_> = std::fs::read_dir(lab.dir.join("lockdir"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        leases.iter().all(|n| !n.starts_with("instance-")),
        "leases left (the killed ones' are removed by whoever looks next): {leases:?}"
    );
    assert!(
        baseline.lost + baseline.tcp_lost > 0,
        "stop-then-start lost nothing: the test could not tell a hand-over from none: {baseline:?}"
    );
}

fn tag_of(k: usize) -> String {
    if k == 0 {
        "a0".into()
    } else {
        format!("s{k}")
    }
}
