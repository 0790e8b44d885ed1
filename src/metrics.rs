//! Every metric name, label and value in one file.
//!
//! This release counts requests and responses by transport and rcode with
//! plain atomics (no label lookup per query) and renders the Prometheus
//! text format itself. The full CoreDNS-compatible set (`coredns_dns_*`
//! with CoreDNS's labels and buckets) is tracked in the operability issue;
//! until then everything here is named `clusterdns_*` so no CoreDNS
//! dashboard is fed numbers with the wrong meaning.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hickory_proto::op::ResponseCode;

/// The transport a query arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

impl Transport {
    pub fn label(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }
}

const RCODES: [ResponseCode; 6] = [
    ResponseCode::NoError,
    ResponseCode::FormErr,
    ResponseCode::ServFail,
    ResponseCode::NXDomain,
    ResponseCode::NotImp,
    ResponseCode::Refused,
];
const RCODE_NAMES: [&str; 7] = [
    "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "OTHER",
];
/// Slot for every other rcode (BADVERS, ...).
const OTHER: usize = RCODES.len();

/// An rcode as dig and CoreDNS print it: `NOERROR`, `NXDOMAIN`, ...
pub fn rcode_name(rcode: ResponseCode) -> String {
    match u16::from(rcode) {
        n @ 0..=5 => RCODE_NAMES[usize::from(n)].to_string(),
        16 => "BADVERS".into(),
        n => format!("RCODE{n}"),
    }
}

/// Process-wide counters.
#[derive(Default)]
pub struct Metrics {
    responses: [[AtomicU64; OTHER + 1]; 2],
    truncated: [AtomicU64; 2],
    dropped: [AtomicU64; 2],
    tcp_rejected: AtomicU64,
}

fn idx(t: Transport) -> usize {
    t as usize
}

impl Metrics {
    pub fn answered(&self, t: Transport, rcode: ResponseCode, truncated: bool) {
        let slot = RCODES.iter().position(|r| *r == rcode).unwrap_or(OTHER);
        self.responses[idx(t)][slot].fetch_add(1, Relaxed);
        if truncated {
            self.truncated[idx(t)].fetch_add(1, Relaxed);
        }
    }

    pub fn dropped(&self, t: Transport) {
        self.dropped[idx(t)].fetch_add(1, Relaxed);
    }

    /// A TCP connection refused because the connection cap was reached.
    pub fn tcp_rejected(&self) {
        self.tcp_rejected.fetch_add(1, Relaxed);
    }

    /// Responses sent with `rcode` over `t` so far.
    pub fn responses(&self, t: Transport, rcode: ResponseCode) -> u64 {
        let slot = RCODES.iter().position(|r| *r == rcode).unwrap_or(OTHER);
        self.responses[idx(t)][slot].load(Relaxed)
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self, synced: bool) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# HELP clusterdns_responses_total Responses sent, by transport and rcode."
        );
        let _ = writeln!(s, "# TYPE clusterdns_responses_total counter");
        for t in [Transport::Udp, Transport::Tcp] {
            for (i, counter) in self.responses[idx(t)].iter().enumerate() {
                let rcode = RCODE_NAMES[i];
                let _ = writeln!(
                    s,
                    "clusterdns_responses_total{{proto=\"{}\",rcode=\"{rcode}\"}} {}",
                    t.label(),
                    counter.load(Relaxed)
                );
            }
        }
        let pairs = [
            (
                "clusterdns_truncated_total",
                "Responses sent with TC set.",
                &self.truncated,
            ),
            (
                "clusterdns_dropped_total",
                "Packets dropped without a reply (not a query, too short).",
                &self.dropped,
            ),
        ];
        for (name, help, counters) in pairs {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter");
            for t in [Transport::Udp, Transport::Tcp] {
                let _ = writeln!(
                    s,
                    "{name}{{proto=\"{}\"}} {}",
                    t.label(),
                    counters[idx(t)].load(Relaxed)
                );
            }
        }
        let _ = writeln!(
            s,
            "# HELP clusterdns_tcp_rejected_total TCP connections closed at the connection cap."
        );
        let _ = writeln!(
            s,
            "# TYPE clusterdns_tcp_rejected_total counter\nclusterdns_tcp_rejected_total {}",
            self.tcp_rejected.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP clusterdns_kubernetes_synced Whether every watched kind has been listed once."
        );
        let _ = writeln!(
            s,
            "# TYPE clusterdns_kubernetes_synced gauge\nclusterdns_kubernetes_synced {}",
            u8::from(synced)
        );
        let _ = writeln!(
            s,
            "# HELP coredns_build_info A metric with a constant '1' value labeled by version, revision, and goversion."
        );
        let _ = writeln!(s, "# TYPE coredns_build_info gauge");
        let _ = writeln!(
            s,
            "coredns_build_info{{version=\"{}\",revision=\"\",goversion=\"none\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        s
    }
}
