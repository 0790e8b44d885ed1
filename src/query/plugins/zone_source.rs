//! A zone a plugin of the chain offers `transfer` ([`ZoneSource`]), and a
//! walk through it as it is at one transfer ([`ZoneWalk`]): the sender
//! (`query/transfer`) reads it as it reads the cluster's and the files'
//! zones, knowing nothing of the plugin.

use std::sync::Arc;

use hickory_proto::rr::{Name, Record, RecordType};

use crate::query::reply::prefixed;
use crate::store::Port;

/// One zone a plugin sends by AXFR.
pub trait ZoneSource: Send + Sync {
    /// The zone's name.
    fn name(&self) -> &Name;

    /// The serial to NOTIFY about; `None` while the zone has none yet.
    fn serial(&self) -> Option<u32>;

    /// A walk through the zone as it is now; `None` when it cannot be
    /// sent (SERVFAIL).
    fn walk(&self) -> Option<Box<dyn ZoneWalk + '_>>;

    /// For a source that stands for the zones found under its name at run
    /// time (`auto`'s directory): the one named `zone`, when found now.
    fn member(&self, _zone: &Name) -> Option<Arc<dyn ZoneSource>> {
        None
    }

    /// Whether it is sent to any client without a `transfer` directive
    /// (`erratic`'s made-up zone, as CoreDNS's erratic answers an AXFR).
    fn open(&self) -> bool {
        false
    }
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

/// The owners a walk of a Service's names lists for its ports (the
/// cluster's zone and a plugin's alike): `_<port>._<proto>.<base>` SRV, once per named port.
pub fn ports<'p>(names: &mut Vec<(Name, RecordType)>, base: &Name, all: impl Iterator<Item = &'p Port>) {
    let mut named: Vec<(&str, &str)> = all
        .filter(|p| !p.name.is_empty())
        .map(|p| (&*p.name, p.proto.label()))
        .collect();
    named.sort_unstable();
    named.dedup();
    for (port, proto) in named {
        let owner = prefixed(base, &[&format!("_{port}"), &format!("_{proto}")]);
        names.push((owner, RecordType::SRV));
    }
}
