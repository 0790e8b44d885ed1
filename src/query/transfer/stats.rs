//! The `transfer` counters of one server block, per zone it transfers:
//! `clusterdns_transfer_requests_total` and
//! `clusterdns_transfer_notifies_total` (rendered at scrape time).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::metrics::catalogue::{TRANSFER_NOTIFIES, TRANSFER_REQUESTS};

/// What became of a transfer request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Transferred,
    /// IXFR of the serial the server holds: the SOA alone.
    Current,
    /// The client is not in `to`.
    Refused,
}

const REQUESTS: [&str; 3] = ["transferred", "current", "refused"];
const NOTIFIES: [&str; 2] = ["accepted", "failed"];

/// Counters of one block's `transfer`, one row per zone.
#[derive(Debug)]
pub struct TransferStats {
    server: String,
    zones: Vec<String>,
    requests: Box<[[AtomicU64; 3]]>,
    notifies: Box<[[AtomicU64; 2]]>,
}

impl TransferStats {
    pub fn new(server: String, zones: Vec<String>) -> TransferStats {
        let n = zones.len();
        TransferStats {
            server,
            zones,
            requests: (0..n).map(|_| Default::default()).collect(),
            notifies: (0..n).map(|_| Default::default()).collect(),
        }
    }

    pub fn request(&self, zone: usize, what: Request) {
        if let Some(row) = self.requests.get(zone) {
            row[what as usize].fetch_add(1, Relaxed);
        }
    }

    pub fn notify(&self, zone: usize, accepted: bool) {
        if let Some(row) = self.notifies.get(zone) {
            row[usize::from(!accepted)].fetch_add(1, Relaxed);
        }
    }
}

/// The `clusterdns_transfer_*` families of every block with `transfer`.
pub fn render(all: &[Arc<TransferStats>], s: &mut String) {
    if all.is_empty() {
        return;
    }
    TRANSFER_REQUESTS.head(s);
    for stats in all {
        for (zone, row) in stats.zones.iter().zip(stats.requests.iter()) {
            line(s, TRANSFER_REQUESTS.name, &stats.server, zone, &REQUESTS, row);
        }
    }
    TRANSFER_NOTIFIES.head(s);
    for stats in all {
        for (zone, row) in stats.zones.iter().zip(stats.notifies.iter()) {
            line(s, TRANSFER_NOTIFIES.name, &stats.server, zone, &NOTIFIES, row);
        }
    }
}

fn line(s: &mut String, name: &str, server: &str, zone: &str, results: &[&str], row: &[AtomicU64]) {
    for (result, n) in results.iter().zip(row) {
        let n = n.load(Relaxed);
        let _ = writeln!(
            s,
            "{name}{{server=\"{server}\",zone=\"{zone}\",result=\"{result}\"}} {n}"
        );
    }
}
