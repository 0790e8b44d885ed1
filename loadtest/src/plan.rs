//! `loadtest plan`: today's load from a running server's `/metrics`
//! (scraped twice), and with a capacity report, the replicas needed at 1×,
//! 2× and 5× growth with 50% headroom.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// GETs `url` (`http://host:port/path`), the body.
pub fn fetch(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("http://").ok_or(format!("{url}: only http:// URLs"))?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let addr = std::net::ToSocketAddrs::to_socket_addrs(host)
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or(format!("{host}: no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).map_err(|e| format!("{url}: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
    s.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok(text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or(text))
}

/// Sums of every series of a family, grouped by one label's value.
pub fn by_label(text: &str, family: &str, label: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with(&format!("{family}{{"))) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else { continue };
        let key = series
            .split(&format!("{label}=\""))
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or("")
            .to_string();
        *out.entry(key).or_insert(0.0) += v;
    }
    out
}

/// Current rates between two scrapes.
#[derive(Debug, Default)]
pub struct Load {
    pub qps: f64,
    pub by_type: BTreeMap<String, f64>,
    pub by_proto: BTreeMap<String, f64>,
    pub by_rcode: BTreeMap<String, f64>,
    /// Search-path expansions' share of all requests.
    pub expansion_share: f64,
}

fn rates(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>, secs: f64) -> BTreeMap<String, f64> {
    b.iter()
        .map(|(k, v)| (k.clone(), (v - a.get(k).copied().unwrap_or(0.0)).max(0.0) / secs))
        .collect()
}

/// Scrapes `url` twice, `interval` apart.
pub fn current(url: &str, interval: Duration) -> Result<Load, String> {
    let first = fetch(url)?;
    let t = Instant::now();
    std::thread::sleep(interval);
    let second = fetch(url)?;
    let secs = t.elapsed().as_secs_f64();
    let rate = |family: &str, label: &str| {
        rates(
            &by_label(&first, family, label),
            &by_label(&second, family, label),
            secs,
        )
    };
    let by_type = rate("coredns_dns_requests_total", "type");
    let by_proto = rate("coredns_dns_requests_total", "proto");
    let by_rcode = rate("coredns_dns_responses_total", "rcode");
    let exp = rate("clusterdns_search_expansion_nxdomain_total", "suffix");
    let qps: f64 = by_type.values().sum();
    let expansion_share = if qps > 0.0 {
        exp.values().sum::<f64>() / qps
    } else {
        0.0
    };
    Ok(Load {
        qps,
        by_type,
        by_proto,
        by_rcode,
        expansion_share,
    })
}

/// The plan as text.
pub fn report(load: &Load, knee_qps: Option<f64>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "current load: {:.1} qps", load.qps);
    let share = |m: &BTreeMap<String, f64>| {
        m.iter()
            .filter(|(_, v)| **v > 0.0)
            .map(|(k, v)| format!("{k} {:.1}%", v / load.qps.max(1e-9) * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(s, "  by type:     {}", share(&load.by_type));
    let _ = writeln!(s, "  by protocol: {}", share(&load.by_proto));
    let _ = writeln!(s, "  by rcode:    {}", share(&load.by_rcode));
    let _ = writeln!(
        s,
        "  search-path expansions: {:.1}% of all queries (NXDOMAIN a pod's ndots:5 walk costs)",
        load.expansion_share * 100.0
    );
    if let Some(knee) = knee_qps {
        let _ = writeln!(
            s,
            "capacity: one replica sustains {knee:.0} qps (knee); planned at 50% of it"
        );
        for (g, n) in crate::capacity::replicas(load.qps, knee, &[1.0, 2.0, 5.0]) {
            let _ = writeln!(s, "  {g}x growth ({:.0} qps): {n} replica(s)", load.qps * g);
        }
    }
    s
}
