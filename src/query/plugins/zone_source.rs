//! A zone a plugin of the chain offers `transfer` ([`ZoneSource`]), and a
//! walk through it as it is at one transfer ([`ZoneWalk`]): the sender
//! (`query/transfer`) reads it as it reads the cluster's and the files'
//! zones, knowing nothing of the plugin.

use hickory_proto::rr::{Name, Record};

/// One zone a plugin sends by AXFR.
pub trait ZoneSource: Send + Sync {
    /// The zone's name.
    fn name(&self) -> &Name;

    /// The serial to NOTIFY about; `None` while the zone has none yet.
    fn serial(&self) -> Option<u32>;

    /// A walk through the zone as it is now; `None` when it cannot be
    /// sent (SERVFAIL).
    fn walk(&self) -> Option<Box<dyn ZoneWalk + '_>>;
}

/// A walk through one zone: the SOA, its records a step at a time, the
/// SOA again.
pub trait ZoneWalk: Send {
    /// The serial of the zone walked.
    fn serial(&self) -> u32;

    /// Its SOA record.
    fn soa(&self) -> Record;

    /// Whether an IXFR from `held` gets the SOA alone.
    fn current(&self, held: u32) -> bool;

    /// Appends the records of the next step to `out`; false when the walk
    /// is over (nothing appended).
    fn next(&mut self, out: &mut Vec<Record>) -> bool;
}
