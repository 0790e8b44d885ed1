//! The `coredns_dns_*` series of each server block and zone
//! ([`ZoneStats`]): what one answered query reports ([`Served`]), counted
//! into this thread's stripe, summed over the stripes at scrape time. The
//! [`Registry`] keeps every zone's stats across reloads, so counters stay
//! monotonic, and the plugins each block enables.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use hickory_proto::op::ResponseCode;

use super::catalogue::{self as c, DURATION_BUCKETS, EXPANSIONS, FAMILIES, PLUGINS, PROTOS, RCODE_NAMES, SIZES, TYPES};
use super::hist::{bump, duration_slot, size_slot, Hist, STRIPE, STRIPES};
use super::labels::{rcode_slot, type_name, Expansion, Plugin, Transport, OTHER};
use super::render::histogram;

/// One stripe of a zone's counters.
#[derive(Default, Debug)]
struct Stripe {
    /// `[proto][family][type]`.
    requests: [[[AtomicU64; TYPES.len() + 1]; 2]; 2],
    /// `[plugin][rcode]`.
    responses: [[AtomicU64; OTHER + 1]; PLUGINS.len()],
    duration: Hist<DURATION_BUCKETS>,
    request_size: [Hist<{ SIZES.len() }>; 2],
    response_size: [Hist<{ SIZES.len() }>; 2],
    do_requests: AtomicU64,
    truncated: [AtomicU64; 2],
    /// Search-path expansions answered NXDOMAIN, by [`Expansion`].
    expansions: [AtomicU64; 3],
    nxdomain: AtomicU64,
    /// Padding: stripes of different threads never share a cache line.
    _pad: [u64; 8],
}

impl Stripe {
    /// [`ZoneStats::record`] into this stripe; `OWNED`: this thread is its
    /// only writer.
    #[inline]
    fn record<const OWNED: bool>(&self, q: &Served) {
        let (proto, family) = (q.transport as usize, usize::from(q.ipv6));
        bump(
            &self.requests[proto][family][usize::from(q.qtype).min(TYPES.len())],
            1,
            OWNED,
        );
        bump(&self.responses[q.plugin as usize][rcode_slot(q.rcode)], 1, OWNED);
        self.duration.add(duration_slot(q.nanos), q.nanos, OWNED);
        self.request_size[proto].add(size_slot(q.request_size), q.request_size as u64, OWNED);
        self.response_size[proto].add(size_slot(q.response_size), q.response_size as u64, OWNED);
        if q.dnssec_ok {
            bump(&self.do_requests, 1, OWNED);
        }
        if q.truncated {
            bump(&self.truncated[proto], 1, OWNED);
        }
        if q.rcode == ResponseCode::NXDomain {
            bump(&self.nxdomain, 1, OWNED);
            if let Some(e) = q.expansion {
                bump(&self.expansions[e as usize], 1, OWNED);
            }
        }
    }
}

/// What one answered query reports.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    pub transport: Transport,
    pub ipv6: bool,
    pub qtype: u8,
    pub dnssec_ok: bool,
    pub request_size: usize,
    pub response_size: usize,
    pub rcode: ResponseCode,
    pub plugin: Plugin,
    pub truncated: bool,
    pub expansion: Option<Expansion>,
    pub nanos: u64,
}

/// The `coredns_dns_*` series of one server and zone.
#[derive(Debug)]
pub struct ZoneStats {
    pub server: String,
    pub zone: String,
    /// The block's `view` name ("" without one).
    pub view: String,
    stripes: Box<[Stripe]>,
}

impl ZoneStats {
    fn new(server: &str, zone: &str, view: &str) -> ZoneStats {
        ZoneStats {
            server: server.to_string(),
            zone: zone.to_string(),
            view: view.to_string(),
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }

    /// Counts one answered query.
    #[inline(always)]
    pub fn record(&self, q: &Served) {
        let (stripe, owned) = STRIPE.with(|i| *i);
        let s = &self.stripes[stripe];
        // one copy of the counting per kind of stripe: no counter tests
        // `owned` again
        if owned {
            s.record::<true>(q);
        } else {
            s.record::<false>(q);
        }
    }

    fn sum(&self, f: impl Fn(&Stripe) -> &AtomicU64) -> u64 {
        self.stripes.iter().map(|s| f(s).load(Relaxed)).sum()
    }

    fn labels(&self) -> String {
        format!(
            "server=\"{}\",zone=\"{}\",view=\"{}\"",
            self.server, self.zone, self.view
        )
    }

    /// The summed buckets, overflow and sum of one histogram of a stripe.
    fn hist<const N: usize>(&self, pick: impl Fn(&Stripe) -> &Hist<N>) -> (Vec<u64>, u64, u64) {
        let counts = (0..N).map(|k| self.sum(|s| &pick(s).buckets[k])).collect();
        (counts, self.sum(|s| &pick(s).over), self.sum(|s| &pick(s).sum))
    }
}

/// Every server block zone's stats, kept across reloads so counters stay
/// monotonic, and the plugins each block enables.
#[derive(Default)]
pub struct Registry {
    zones: Mutex<Vec<Arc<ZoneStats>>>,
    plugins: Mutex<Vec<(String, String, &'static str)>>,
}

impl Registry {
    /// The `server` labels of the blocks that enable `plugin`, each once.
    pub fn servers_with(&self, plugin: &str) -> Vec<String> {
        let mut servers: Vec<String> = self
            .plugins
            .lock()
            .map(|p| {
                p.iter()
                    .filter(|(.., n)| *n == plugin)
                    .map(|(s, ..)| s.clone())
                    .collect()
            })
            .unwrap_or_default();
        servers.sort_unstable();
        servers.dedup();
        servers
    }

    /// The stats of `server`/`zone` of blocks without a view, created on first use.
    pub fn zone(&self, server: &str, zone: &str) -> Arc<ZoneStats> {
        self.zone_in_view(server, zone, "")
    }

    /// The stats of `server`/`zone` in `view` (the `view` label).
    pub fn zone_in_view(&self, server: &str, zone: &str, view: &str) -> Arc<ZoneStats> {
        let Ok(mut zones) = self.zones.lock() else {
            return Arc::new(ZoneStats::new(server, zone, view));
        };
        if let Some(z) = (zones.iter()).find(|z| z.server == server && z.zone == zone && z.view == view) {
            return z.clone();
        }
        let z = Arc::new(ZoneStats::new(server, zone, view));
        zones.push(z.clone());
        z
    }

    fn zones(&self) -> Vec<Arc<ZoneStats>> {
        self.zones.lock().map(|z| z.clone()).unwrap_or_default()
    }

    /// All requests counted, every zone.
    pub(super) fn requests(&self) -> u64 {
        self.zones()
            .iter()
            .map(|z| {
                z.stripes
                    .iter()
                    .flat_map(|s| s.requests.iter().flatten().flatten())
                    .map(|a| a.load(Relaxed))
                    .sum::<u64>()
            })
            .sum()
    }

    /// Replaces the `coredns_plugin_enabled` set (at start and reload).
    pub fn set_plugins(&self, enabled: Vec<(String, String, &'static str)>) {
        if let Ok(mut p) = self.plugins.lock() {
            *p = enabled;
        }
    }

    pub(super) fn render(&self, s: &mut String) {
        let zones = self.zones();
        render_counts(s, &zones);
        render_histograms(s, &zones);
        c::DNS_DO_REQUESTS.head(s);
        for z in &zones {
            let _ = writeln!(
                s,
                "{}{{{}}} {}",
                c::DNS_DO_REQUESTS.name,
                z.labels(),
                z.sum(|s| &s.do_requests)
            );
        }
        c::PLUGIN_ENABLED.head(s);
        for (server, zone, name) in self.plugins.lock().map(|p| p.clone()).unwrap_or_default() {
            let _ = writeln!(
                s,
                "{}{{server=\"{server}\",zone=\"{zone}\",view=\"\",name=\"{name}\"}} 1",
                c::PLUGIN_ENABLED.name
            );
        }
        render_ours(s, &zones);
    }
}

/// `coredns_dns_requests_total` and `coredns_dns_responses_total`: the
/// series counted at least once.
fn render_counts(s: &mut String, zones: &[Arc<ZoneStats>]) {
    c::DNS_REQUESTS.head(s);
    for z in zones {
        for (p, proto) in PROTOS.iter().enumerate() {
            for (f, family) in FAMILIES.iter().enumerate() {
                for t in 0..=TYPES.len() {
                    let n = z.sum(|s| &s.requests[p][f][t]);
                    if n > 0 {
                        let _ = writeln!(
                            s,
                            "{}{{{},proto=\"{proto}\",family=\"{family}\",type=\"{}\"}} {n}",
                            c::DNS_REQUESTS.name,
                            z.labels(),
                            type_name(t)
                        );
                    }
                }
            }
        }
    }
    c::DNS_RESPONSES.head(s);
    for z in zones {
        for (p, plugin) in PLUGINS.iter().enumerate() {
            for (r, rcode) in RCODE_NAMES.iter().enumerate() {
                let n = z.sum(|s| &s.responses[p][r]);
                if n > 0 {
                    let _ = writeln!(
                        s,
                        "{}{{{},rcode=\"{rcode}\",plugin=\"{plugin}\"}} {n}",
                        c::DNS_RESPONSES.name,
                        z.labels()
                    );
                }
            }
        }
    }
}

/// The request-duration and the request- and response-size histograms.
fn render_histograms(s: &mut String, zones: &[Arc<ZoneStats>]) {
    c::DNS_DURATION.head(s);
    let bounds: Vec<f64> = (0..DURATION_BUCKETS).map(c::duration_bound).collect();
    for z in zones {
        let (counts, over, sum) = z.hist(|s| &s.duration);
        histogram(
            s,
            c::DNS_DURATION.name,
            &z.labels(),
            &bounds,
            &counts,
            over,
            sum as f64 / 1e9,
        );
    }
    type Pick = fn(&Stripe, usize) -> &Hist<{ SIZES.len() }>;
    let sizes: [(c::Family, Pick); 2] = [
        (c::DNS_REQUEST_SIZE, |s, p| &s.request_size[p]),
        (c::DNS_RESPONSE_SIZE, |s, p| &s.response_size[p]),
    ];
    for (family, pick) in sizes {
        family.head(s);
        for z in zones {
            for (p, proto) in PROTOS.iter().enumerate() {
                let (counts, over, sum) = z.hist(|s| pick(s, p));
                let labels = format!("{},proto=\"{proto}\"", z.labels());
                histogram(s, family.name, &labels, &SIZES, &counts, over, sum as f64);
            }
        }
    }
}

/// `clusterdns_truncated_responses_total`, the search-expansion NXDOMAIN
/// counts and all NXDOMAIN answers.
fn render_ours(s: &mut String, zones: &[Arc<ZoneStats>]) {
    c::TRUNCATED.head(s);
    for z in zones {
        for (p, proto) in PROTOS.iter().enumerate() {
            let n = z.sum(|s| &s.truncated[p]);
            let _ = writeln!(s, "{}{{{},proto=\"{proto}\"}} {n}", c::TRUNCATED.name, z.labels());
        }
    }
    c::SEARCH_EXPANSION_NXDOMAIN.head(s);
    for z in zones {
        for (e, suffix) in EXPANSIONS.iter().enumerate() {
            let n = z.sum(|s| &s.expansions[e]);
            let name = c::SEARCH_EXPANSION_NXDOMAIN.name;
            let _ = writeln!(s, "{name}{{{},suffix=\"{suffix}\"}} {n}", z.labels());
        }
    }
    c::NXDOMAIN.head(s);
    for z in zones {
        let _ = writeln!(s, "{}{{{}}} {}", c::NXDOMAIN.name, z.labels(), z.sum(|s| &s.nxdomain));
    }
}
