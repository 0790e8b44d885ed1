//! The `dnstap` plugin's counters, over every `dnstap` directive: messages
//! dropped (queue full, or no collector connected), messages written to a
//! collector, and connections made to one.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::catalogue as c;

#[derive(Debug, Default)]
pub struct Dnstap {
    /// `coredns_dnstap_dropped_total`.
    pub dropped: AtomicU64,
    /// `clusterdns_dnstap_sent_total`.
    pub sent: AtomicU64,
    /// `clusterdns_dnstap_connects_total`: handshakes completed.
    pub connects: AtomicU64,
}

impl Dnstap {
    pub(super) fn render(&self, s: &mut String) {
        c::DNSTAP_DROPPED.single(s, self.dropped.load(Relaxed));
        c::DNSTAP_SENT.single(s, self.sent.load(Relaxed));
        c::DNSTAP_CONNECTS.single(s, self.connects.load(Relaxed));
    }
}
