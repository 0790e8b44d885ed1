//! A zone of the zone plugin as `transfer` sends it ([`ZoneSource`]):
//! as CoreDNS sends a zone file's zone, the SOA, the apex NS set, every
//! other owner's records in canonical name order (the apex's own first),
//! the SOA again, all from the zone loaded when the transfer starts. An
//! IXFR naming the serial loaded gets the SOA alone; any other serial, the
//! whole zone.

use std::sync::Arc;

use hickory_proto::rr::{Name, Record};

use crate::query::plugins::file::zone::{Found, Loaded};
use crate::query::plugins::zone_source::{ZoneSource, ZoneWalk};
use crate::zonefile::Zone;

/// One origin of a line and the zone loaded for it (`None`: not loaded,
/// or not transferred in yet).
pub struct FileSource {
    pub origin: Name,
    pub loaded: Loaded,
}

impl ZoneSource for FileSource {
    fn name(&self) -> &Name {
        &self.origin
    }

    fn serial(&self) -> Option<u32> {
        self.loaded.load().as_ref().as_ref().map(Zone::serial)
    }

    fn walk(&self) -> Option<Box<dyn ZoneWalk + '_>> {
        let walk = FileWalk::new(self.loaded.load_full())?;
        Some(Box::new(walk))
    }
}

/// The zones found under `zone` at run time (`auto`'s): sent one at a
/// time, each by its own name ([`ZoneSource::member`]); no serial of its
/// own, so no NOTIFY for them.
pub struct FoundSource {
    pub zone: Name,
    pub found: Found,
}

impl ZoneSource for FoundSource {
    fn name(&self) -> &Name {
        &self.zone
    }

    fn serial(&self) -> Option<u32> {
        None
    }

    fn walk(&self) -> Option<Box<dyn ZoneWalk + '_>> {
        None
    }

    fn member(&self, zone: &Name) -> Option<Arc<dyn ZoneSource>> {
        let found = self.found.load();
        let (origin, zone) = found.iter().find(|(origin, _)| origin == zone)?;
        let member = FoundMember {
            origin: origin.clone(),
            zone: zone.clone(),
        };
        Some(Arc::new(member))
    }
}

/// One zone found, as it was when its transfer began.
struct FoundMember {
    origin: Name,
    zone: Arc<Option<Zone>>,
}

impl ZoneSource for FoundMember {
    fn name(&self) -> &Name {
        &self.origin
    }

    fn serial(&self) -> Option<u32> {
        self.zone.as_ref().as_ref().map(Zone::serial)
    }

    fn walk(&self) -> Option<Box<dyn ZoneWalk + '_>> {
        Some(Box::new(FileWalk::new(self.zone.clone())?))
    }
}

/// A walk through a loaded zone, one owner a step.
struct FileWalk {
    zone: Arc<Option<Zone>>,
    owners: Vec<Name>,
    soa: Record,
    serial: u32,
    /// 0: the head (SOA, apex NS); 1..=owners: that owner; then the tail.
    step: usize,
}

impl FileWalk {
    fn new(zone: Arc<Option<Zone>>) -> Option<FileWalk> {
        let loaded = zone.as_ref().as_ref()?;
        let owners = loaded.owners().into_iter().cloned().collect();
        let (soa, serial) = (loaded.soa().clone(), loaded.serial());
        Some(FileWalk {
            zone,
            owners,
            soa,
            serial,
            step: 0,
        })
    }
}

impl ZoneWalk for FileWalk {
    fn serial(&self) -> u32 {
        self.serial
    }

    fn soa(&self) -> Record {
        self.soa.clone()
    }

    fn current(&self, held: u32) -> bool {
        self.serial == held
    }

    fn next(&mut self, out: &mut Vec<Record>) -> bool {
        let zone = match self.zone.as_ref() {
            Some(z) => z,
            None => return false,
        };
        let step = self.step;
        self.step += 1;
        match step {
            0 => {
                out.push(self.soa.clone());
                out.extend(zone.apex_ns().iter().cloned());
            }
            i if i <= self.owners.len() => out.extend(zone.owned(&self.owners[i - 1]).into_iter().cloned()),
            i if i == self.owners.len() + 1 => out.push(self.soa.clone()),
            _ => return false,
        }
        true
    }
}
