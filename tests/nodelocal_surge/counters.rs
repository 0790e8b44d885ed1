//! The kernel's drop counters of the surge test's namespaces (`nstat`),
//! read before and after the load: which of them moved tells whether a
//! lost query was dropped at the client's sockets (pod namespace), at the
//! servers' (node namespace), or by a server itself (its late drops).

use super::common::netns::Lab;

/// The kernel's UDP and TCP counters of namespace `ns` that tell where a
/// datagram or a connection was dropped.
pub fn drop_counters(lab: &Lab, ns: &str) -> Vec<(String, u64)> {
    let text = lab.sh(ns, "nstat -asz").1;
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (name, value) = (f.next()?, f.next()?.parse().ok()?);
            let wanted = [
                "UdpRcvbufErrors",
                "UdpInErrors",
                "UdpNoPorts",
                "UdpMemErrors",
                "TcpExtListenDrops",
                "TcpExtListenOverflows",
                "TcpExtTCPAbortOnClose",
                "TcpAttemptFails",
                "TcpEstabResets",
                "IcmpOutDestUnreachs",
            ];
            wanted.contains(&name).then(|| (name.to_string(), value))
        })
        .collect()
}

/// What changed between two [`drop_counters`] readings.
pub fn counter_diff(before: &[(String, u64)], after: &[(String, u64)]) -> String {
    let moved: Vec<String> = after
        .iter()
        .filter_map(|(n, v)| {
            let b = before.iter().find(|(m, _)| m == n).map_or(0, |(_, b)| *b);
            (*v > b).then(|| format!("{n}+{}", v - b))
        })
        .collect();
    moved.join(" ")
}

/// How much counter `name` moved between two [`drop_counters`] readings.
pub fn moved(before: &[(String, u64)], after: &[(String, u64)], name: &str) -> u64 {
    let of = |r: &[(String, u64)]| r.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
    of(after).saturating_sub(of(before))
}

/// The late drops a stopped server logged ("stopped (N queries answered,
/// M UDP queries dropped as too late)").
pub fn logged_late_drops(log: &str) -> u64 {
    log.lines()
        .filter_map(|l| {
            l.split_once("answered, ")?
                .1
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// A running server's `clusterdns_udp_late_dropped_total` on its /metrics page.
pub fn scraped_late_drops(page: &str) -> u64 {
    page.lines()
        .find_map(|l| {
            l.strip_prefix("clusterdns_udp_late_dropped_total ")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}
