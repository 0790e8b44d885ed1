//! Every metric the server exposes, as fixed pre-registered counters.
//!
//! CoreDNS's names, labels and buckets exactly (`coredns_dns_*` per server
//! block zone, `coredns_cache_*`, `coredns_proxy_*`, ...), and ours as
//! `clusterdns_*`, all listed in [`catalogue`]: the one file to read for
//! what `/metrics` shows. Every series is a plain atomic in an array
//! registered when the configuration is built ([`ZoneStats`] per server
//! and zone): a query indexes arrays by enum ([`labels`]), never looks a
//! label up, and adds to a per-thread stripe ([`hist`]) so workers do not
//! fight over cache lines. The Prometheus text is written at scrape time
//! ([`render`]), each group of counters by its own file: [`zone`],
//! [`exposed`] (the plugins' own, per server block), [`tcp`], [`clients`],
//! [`memo`], [`watch`], [`nodelocal`], [`process`].
//! [`web`] reads `prometheus { tls FILE }`'s web configuration.

pub mod catalogue;
mod clients;
mod counts;
mod dnstap;
pub mod exposed;
pub mod fair;
mod hist;
mod labels;
mod memo;
mod nodelocal;
pub mod process;
mod render;
mod tcp;
mod transports;
mod watch;
pub mod web;
mod zone;

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

pub use catalogue::{KINDS, NODECACHE_ERRORS, RESTART_REASONS, RESTORED, SERVICE_KINDS};
pub use clients::{ClientSlots, Clients};
pub use counts::{Counts, Slots};
pub use dnstap::Dnstap;
pub use fair::Fair;
pub use hist::{Durations, Histogram};
pub use labels::{rcode_name, rcode_slot, type_slot, Expansion, Plugin, Transport, RCODE_LABELS};
pub use memo::{memo_stripe, revalidations, MemoStripe};
pub use nodelocal::{Health, NodeLocal};
pub use render::head;
pub use tcp::{Tcp, TcpClose};
pub use transports::{DohRefusal, DoqRefusal, Transports};
pub use watch::Watch;
pub use zone::{Registry, Served, ZoneStats};

use catalogue as c;

/// Query log lines dropped because the log queue was full (bumped by
/// `query::log`, which has no [`Metrics`] at hand; kept here so the query
/// path depends on `metrics` and never the other way round).
pub static LOG_DROPPED: AtomicU64 = AtomicU64::new(0);
/// Questions under `.localhost.` or (prefix on) `localhost.<anything>`
/// (bumped by `query::plugins::local`; kept here for the same reason).
pub static LOCALHOST_REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Process-wide counters.
#[derive(Default)]
pub struct Metrics {
    /// Per server block zone (`coredns_dns_*`).
    pub registry: Registry,
    dropped: [AtomicU64; 2],
    pub tcp: Tcp,
    /// Forwarded queries dropped because the in-flight cap was reached.
    pub overload_dropped: AtomicU64,
    /// UDP queries dropped because they waited in the receive queue too long.
    pub udp_late_dropped: AtomicU64,
    /// Panics caught at a task or worker boundary.
    pub panics: AtomicU64,
    /// Corefile reloads that failed (the old configuration kept running).
    pub reload_failed: AtomicU64,
    /// Queries handed to tasks and not answered yet.
    pub in_flight: AtomicU64,
    /// `coredns_autopath_success_total`.
    pub autopath_success: AtomicU64,
    pub health: Health,
    pub clients: Clients,
    /// Per-client fairness: shed by namespace, limited clients, top talkers.
    pub fair: Fair,
    /// UDP ports we listen on (for kernel drop counts from /proc/net/udp).
    pub udp_ports: Mutex<Vec<u16>>,
    /// `clusterdns doctor` findings at start-up: `(check, severity)`.
    pub doctor: Mutex<Vec<(&'static str, &'static str)>>,
    pub watch: Watch,
    pub nodelocal: NodeLocal,
    pub dnstap: Dnstap,
    /// `tls://` and `https://` listeners: certificate reloads, DoH refusals.
    pub transports: Transports,
}

impl Metrics {
    /// `coredns_shed_dropped_total` of every block with `shed`
    /// (`query::limits::shed`): clusterdns's drops before the chain.
    fn render_shed(&self, s: &mut String) {
        c::SHED_DROPPED.head(s);
        let queries = self.udp_late_dropped.load(Relaxed) + self.fair.shed_total();
        for server in self.registry.servers_with("shed") {
            for (reason, n) in [("query", queries), ("response", 0)] {
                let _ = writeln!(
                    s,
                    "{}{{server=\"{server}\",reason=\"{reason}\"}} {n}",
                    c::SHED_DROPPED.name
                );
            }
        }
    }

    /// Requests counted so far, over every zone and transport.
    pub fn requests_total(&self) -> u64 {
        self.registry.requests()
    }

    pub fn dropped(&self, t: Transport) {
        self.dropped[t as usize].fetch_add(1, Relaxed);
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self, synced: bool) -> String {
        let mut s = String::new();
        self.registry.render(&mut s);
        let dropped = [Transport::Udp, Transport::Tcp].map(|t| (t.label(), self.dropped[t as usize].load(Relaxed)));
        c::DROPPED.by(&mut s, dropped);
        self.tcp.render(&mut s);
        c::OVERLOAD_DROPPED.single(&mut s, self.overload_dropped.load(Relaxed));
        c::UDP_LATE_DROPPED.single(&mut s, self.udp_late_dropped.load(Relaxed));
        self.render_shed(&mut s);
        c::IN_FLIGHT.single(&mut s, self.in_flight.load(Relaxed));
        let ports = self.udp_ports.lock().map(|p| p.clone()).unwrap_or_default();
        c::UDP_KERNEL_DROPS.single(&mut s, process::udp_drops(&ports));
        self.fair.render(&mut s);
        self.clients.render(&mut s, self.registry.requests());
        c::DOCTOR_FINDINGS.head(&mut s);
        for (check, severity) in self.doctor.lock().map(|d| d.clone()).unwrap_or_default() {
            let name = c::DOCTOR_FINDINGS.name;
            let _ = writeln!(s, "{name}{{check=\"{check}\",severity=\"{severity}\"}} 1");
        }
        c::LOG_DROPPED.single(&mut s, LOG_DROPPED.load(Relaxed));
        let (kept, dropped) = revalidations();
        c::MEMO_REVALIDATIONS.by(&mut s, [("kept", kept), ("dropped", dropped)]);
        c::PANICS.single(&mut s, self.panics.load(Relaxed));
        c::LOCALHOST_REQUESTS.single(&mut s, LOCALHOST_REQUESTS.load(Relaxed));
        c::AUTOPATH_SUCCESS.single(&mut s, self.autopath_success.load(Relaxed));
        self.health.render(&mut s);
        c::RELOAD_FAILED.single(&mut s, self.reload_failed.load(Relaxed));
        c::SYNCED.single(&mut s, u8::from(synced));
        self.watch.render(&mut s);
        self.nodelocal.render(&mut s);
        self.dnstap.render(&mut s);
        self.transports.render(&mut s);
        process::render(&mut s);
        c::BUILD_INFO.head(&mut s);
        let version = env!("CARGO_PKG_VERSION");
        let _ = writeln!(
            s,
            "{}{{version=\"{version}\",revision=\"\",goversion=\"none\"}} 1",
            c::BUILD_INFO.name
        );
        s
    }
}
