//! Numbers the kernel keeps about us, read from /proc at scrape time:
//! `process_*` as Prometheus client libraries export them, and the
//! datagrams dropped on our UDP sockets.

use super::catalogue::PROCESS;

/// Sums the `drops` column of /proc/net/udp{,6} for sockets on `ports`.
pub(super) fn udp_drops(ports: &[u16]) -> u64 {
    let mut total = 0;
    for file in ["/proc/net/udp", "/proc/net/udp6"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = f
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if port.is_some_and(|p| ports.contains(&p)) {
                total += f.last().and_then(|d| d.parse::<u64>().ok()).unwrap_or(0);
            }
        }
    }
    total
}

/// Writes `process_*` from /proc/self.
pub(super) fn render(s: &mut String) {
    const TICKS: f64 = 100.0; // USER_HZ on Linux
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // fields after the command name (which may contain spaces)
    let rest: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, r)| r.split_whitespace().collect());
    let field = |i: usize| rest.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let cpu = (field(11) + field(12)) / TICKS;
    let boot = std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    let start = boot + field(19) / TICKS;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| status_kb(&status, key).unwrap_or(0) as f64 * 1024.0;
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3)?.parse::<f64>().ok())
        .unwrap_or(0.0);
    let values = [cpu, kb("VmRSS:"), kb("VmSize:"), fds as f64, max_fds, start];
    for (family, value) in PROCESS.iter().zip(values) {
        family.single(s, value);
    }
}

/// A `kB` line of `/proc/PID/status` (`VmRSS:`, `RssAnon:`...) in `status`.
pub fn status_kb(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
}
