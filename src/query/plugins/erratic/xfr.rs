//! `erratic`'s zone transfer, as CoreDNS's erratic answers an AXFR: for
//! any zone asked, a small zone of its own (SOA, two NS, their AAAA, the
//! SOA again), to any client, without a `transfer` directive
//! ([`ZoneSource::open`]). It is a testing aid for AXFR clients: the
//! records are made up. `drop`, `delay` and `truncate` leave it alone.

use std::net::Ipv6Addr;
use std::sync::Arc;

use hickory_proto::rr::rdata::{AAAA, NS, SOA};
use hickory_proto::rr::{Name, RData, Record};

use crate::query::plugins::zone_source::{ZoneSource, ZoneWalk};

/// The serial of the zone erratic sends (CoreDNS's).
const SERIAL: u32 = 2018050825;

/// Every zone, made up when asked ([`ZoneSource::member`]).
pub struct ErraticZones {
    zone: Name,
}

impl ErraticZones {
    /// The made-up zones under `zone` (the root: every name).
    pub fn new(zone: Name) -> ErraticZones {
        ErraticZones { zone }
    }
}

impl ZoneSource for ErraticZones {
    fn name(&self) -> &Name {
        &self.zone
    }

    fn serial(&self) -> Option<u32> {
        None // nothing to NOTIFY about
    }

    fn walk(&self) -> Option<Box<dyn ZoneWalk + '_>> {
        Some(Box::new(Walk::of(&self.zone)?))
    }

    fn member(&self, zone: &Name) -> Option<Arc<dyn ZoneSource>> {
        self.zone
            .zone_of(zone)
            .then(|| Arc::new(ErraticZones::new(zone.clone())) as Arc<dyn ZoneSource>)
    }

    fn open(&self) -> bool {
        true
    }
}

/// The whole made-up zone, in one step.
struct Walk {
    records: Vec<Record>,
    sent: bool,
}

impl Walk {
    fn of(zone: &Name) -> Option<Walk> {
        let name = |label: &str| Name::from_ascii(label).ok()?.append_domain(zone).ok();
        let (a, b) = (name("a")?, name("b")?);
        let soa = SOA::new(
            Name::from_ascii("sns.dns.icann.org.").ok()?,
            Name::from_ascii("noc.dns.icann.org.").ok()?,
            SERIAL,
            7200,
            3600,
            1209600,
            3600,
        );
        let record = |owner: &Name, data: RData| Record::from_rdata(owner.clone(), 0, data);
        let records = vec![
            record(zone, RData::SOA(soa)),
            record(zone, RData::NS(NS(a.clone()))),
            record(zone, RData::NS(NS(b.clone()))),
            record(&a, RData::AAAA(AAAA(Ipv6Addr::new(0x2001, 0xbd8, 0, 0, 0, 0, 0, 0x53)))),
            record(&b, RData::AAAA(AAAA(Ipv6Addr::new(0x2001, 0x500, 0, 0, 0, 0, 0, 0x54)))),
        ];
        Some(Walk { records, sent: false })
    }
}

impl ZoneWalk for Walk {
    fn serial(&self) -> u32 {
        SERIAL
    }

    fn soa(&self) -> Record {
        self.records[0].clone()
    }

    fn current(&self, _held: u32) -> bool {
        false // an IXFR gets the whole zone, as an AXFR
    }

    fn next(&mut self, out: &mut Vec<Record>) -> bool {
        if std::mem::replace(&mut self.sent, true) {
            return false;
        }
        out.extend(self.records.iter().cloned());
        out.push(self.records[0].clone());
        true
    }
}
