//! What the engine sends: a dnsperf query file, or the **pods** profile —
//! simulated pods resolving Services and outside names through the
//! kubelet's resolv.conf (`search <ns>.svc.cluster.local svc.cluster.local
//! cluster.local`, `options ndots:5`), A and AAAA together as glibc does,
//! popularity Zipf-distributed. Each lookup becomes the queries its search
//! walk costs, so the amplification comes out of the profile.

use crate::engine::{qtype, query};
use crate::synth::{self, Shape};

/// A workload: the queries in send order, and what they model.
#[derive(Debug, Clone)]
pub struct Workload {
    pub queries: Vec<Vec<u8>>,
    /// Lookups the queries stand for (0 for a plain query file).
    pub lookups: usize,
    pub description: String,
}

impl Workload {
    /// Queries per lookup (1 for a query file).
    pub fn amplification(&self) -> f64 {
        if self.lookups == 0 {
            1.0
        } else {
            self.queries.len() as f64 / self.lookups as f64
        }
    }
}

/// Parses dnsperf's query-file format: `NAME TYPE` per line, `#` comments.
pub fn names_file(text: &str) -> Result<Workload, String> {
    let mut queries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default();
        let t = words.next().unwrap_or("A");
        let t = qtype(t).ok_or(format!("line {}: unknown query type '{t}'", i + 1))?;
        queries.push(query(name, t));
    }
    if queries.is_empty() {
        return Err("the query file has no queries".into());
    }
    let description = format!("{} queries from a file", queries.len());
    Ok(Workload {
        queries,
        lookups: 0,
        description,
    })
}

/// A small deterministic generator (xorshift), so runs are repeatable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipf(s = 1) sampling over `n` ranks by inverting the cumulative weights.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut acc = 0.0;
        let cdf: Vec<f64> = (1..=n.max(1))
            .map(|k| {
                acc += 1.0 / k as f64;
                acc
            })
            .collect();
        let total = acc;
        Zipf(cdf.into_iter().map(|c| c / total).collect())
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.0.partition_point(|c| *c < u).min(self.0.len() - 1)
    }
}

/// The mix of lookups pods make (shares of 100).
pub const MIX: [(&str, u32); 4] = [
    ("short name, own namespace", 45),
    ("<svc>.<ns>, another namespace", 20),
    ("FQDN without a trailing dot", 5),
    ("outside name", 30),
];

/// The queries glibc sends for `name` from a pod in `ns` with the
/// kubelet's resolv.conf (ndots:5), given which names exist.
fn walk(name: &str, ns: &str, exists: &dyn Fn(&str) -> bool, out: &mut Vec<Vec<u8>>) {
    let dots = name.matches('.').count();
    let search = [
        format!("{ns}.svc.cluster.local"),
        "svc.cluster.local".into(),
        "cluster.local".into(),
    ];
    let mut candidates: Vec<String> = Vec::new();
    if dots >= 5 {
        candidates.push(name.to_string());
    }
    candidates.extend(search.iter().map(|s| format!("{name}.{s}")));
    if dots < 5 {
        candidates.push(name.to_string());
    }
    for c in candidates {
        out.push(query(&c, 1));
        out.push(query(&c, 28));
        if exists(&c) {
            return;
        }
    }
}

/// The pods profile over a synthetic cluster of `shape`: `lookups`
/// lookups, each expanded into its queries.
pub fn pods(shape: &Shape, lookups: usize, seed: u64) -> Workload {
    let services: Vec<(String, String)> = (0..shape.services).map(|i| synth::service_name(shape, i)).collect();
    pods_over(&services, shape.namespaces, lookups, seed, "a synthetic cluster")
}

/// The `(namespace, name)` of every Service in a `kubectl get ... -o json` dump.
pub fn services_of_dump(text: &str) -> Result<Vec<(String, String)>, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the dump is not JSON (kubectl -o json): {e}"))?;
    let items = v["items"].as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
    let out: Vec<(String, String)> = items
        .iter()
        .filter(|i| i["kind"] == "Service")
        .filter_map(|i| {
            Some((
                i["metadata"]["namespace"].as_str()?.to_string(),
                i["metadata"]["name"].as_str()?.to_string(),
            ))
        })
        .collect();
    if out.is_empty() {
        return Err("the dump has no Services".into());
    }
    Ok(out)
}

/// The pods profile over `services` (Zipf over their order).
pub fn pods_over(
    services: &[(String, String)],
    namespaces: usize,
    lookups: usize,
    seed: u64,
    source: &str,
) -> Workload {
    let mut rng = Rng(seed | 1);
    let zipf = Zipf::new(services.len());
    let outside = Zipf::new(1000);
    let known: std::collections::HashSet<String> = services
        .iter()
        .map(|(ns, svc)| format!("{svc}.{ns}.svc.cluster.local"))
        .collect();
    let mut all_ns: Vec<&str> = services.iter().map(|(ns, _)| ns.as_str()).collect();
    all_ns.sort_unstable();
    all_ns.dedup();
    let exists = |name: &str| known.contains(name);
    let mut queries = Vec::with_capacity(lookups * 4);
    for _ in 0..lookups {
        let target = zipf.sample(&mut rng);
        let (target_ns, svc) = services[target].clone();
        let roll = (rng.next() % 100) as u32;
        let (name, client_ns) = if roll < MIX[0].1 {
            (svc, target_ns)
        } else if roll < MIX[0].1 + MIX[1].1 {
            let other = all_ns[rng.next() as usize % all_ns.len().max(1)].to_string();
            (format!("{svc}.{target_ns}"), other)
        } else if roll < MIX[0].1 + MIX[1].1 + MIX[2].1 {
            (format!("{svc}.{target_ns}.svc.cluster.local"), target_ns)
        } else {
            (format!("www.site{}.example.com", outside.sample(&mut rng)), target_ns)
        };
        walk(&name, &client_ns, &exists, &mut queries);
    }
    Workload {
        description: format!(
            "pods profile: {lookups} lookups over {} Services in {} namespaces of {source} (Zipf), kubelet resolv.conf ndots:5, A+AAAA",
            services.len(),
            namespaces.max(all_ns.len())
        ),
        queries,
        lookups,
    }
}

/// A zone file with the synthetic cluster's Service names (for Knot, NSD
/// or BIND serving the same names; `loadtest export-zone`).
pub fn zone_file(shape: &Shape) -> String {
    let mut z = String::from(
        "$ORIGIN cluster.local.\n$TTL 30\n@ IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5\n@ IN NS ns.dns.cluster.local.\nns.dns IN A 10.96.0.10\n",
    );
    for i in 0..shape.services {
        let (ns, name) = synth::service_name(shape, i);
        z.push_str(&format!("{name}.{ns}.svc IN A {}\n", synth::cluster_ip(i, 0)));
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_walks_cost_what_glibc_sends() {
        let exists = |n: &str| n == "web.shop.svc.cluster.local";
        let mut q = Vec::new();
        walk("web", "shop", &exists, &mut q);
        assert_eq!(q.len(), 2, "own namespace: first candidate");
        q.clear();
        walk("web.shop", "other", &exists, &mut q);
        assert_eq!(q.len(), 4, "another namespace: second candidate");
        q.clear();
        walk("www.example.com", "shop", &exists, &mut q);
        assert_eq!(q.len(), 8, "outside name: three NXDOMAIN pairs then the name");
        q.clear();
        walk("web.shop.svc.cluster.local", "shop", &exists, &mut q);
        assert_eq!(q.len(), 8, "4 dots < ndots 5: the search list first");
    }

    #[test]
    fn pods_profile_amplifies_and_names_files_parse() {
        let shape = Shape {
            namespaces: 10,
            services: 100,
            endpoints: 1,
        };
        let w = pods(&shape, 10_000, 7);
        let a = w.amplification();
        assert!((3.0..6.0).contains(&a), "amplification {a}");
        let dump = crate::synth::dump(&shape);
        let from_dump = pods_over(&services_of_dump(&dump).expect("dump"), 0, 10_000, 7, "dump");
        assert_eq!(
            from_dump.queries, w.queries,
            "a dump of the same cluster gives the same workload"
        );
        let f = names_file("# dnsperf\nweb.shop.svc.cluster.local A\nexample.com AAAA\n").expect("parse");
        assert_eq!(f.queries.len(), 2);
        assert!(names_file("x BOGUS").is_err());
    }
}
