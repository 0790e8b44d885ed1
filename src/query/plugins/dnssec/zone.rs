//! `sign`'s work on one zone, as CoreDNS's sign plugin does it: the zone's
//! own DNSSEC records dropped (DS kept), the SOA serial set to the time of
//! signing, the keys' DNSKEY records and their CDNSKEY and CDS (SHA-1 and
//! SHA-256) added at the apex, an NSEC chain over the authoritative names
//! (TTL the SOA's minimum), and every authoritative set signed by every key
//! (at a delegation only DS and NSEC; glue below a cut not at all), valid
//! from three hours ago for 32 days.

use std::collections::{BTreeMap, BTreeSet};

use hickory_proto::rr::rdata::SOA;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::key::Key;
use super::sign::{canonical, sign_set, Window};
use crate::corefile::args::lower_wire;
use crate::zonefile::dnssec::{type_bitmap, unknown};
use crate::zonefile::Zone;

/// The validity of the signatures `sign` makes at `now`: 32 days.
pub fn window(now: u32) -> Window {
    Window::at(now, 32)
}

/// `zone` signed by `keys` at `now`, its records in canonical order.
pub fn sign_zone(zone: &Zone, keys: &[Key], now: u32) -> Vec<Record> {
    let origin = zone.origin().clone();
    let mut soa = zone.soa().clone();
    let minimum = match &mut soa.data {
        RData::SOA(s) => {
            *s = SOA::new(
                s.mname.clone(),
                s.rname.clone(),
                now,
                s.refresh,
                s.retry,
                s.expire,
                s.minimum,
            );
            s.minimum
        }
        _ => soa.ttl,
    };
    let mut owners: BTreeMap<Name, Vec<Record>> = BTreeMap::new();
    let dropped = [
        RecordType::RRSIG,
        RecordType::NSEC,
        RecordType::DNSKEY,
        RecordType::CDS,
        RecordType::CDNSKEY,
    ];
    for r in zone.records().skip(1).filter(|r| !dropped.contains(&r.record_type())) {
        owners.entry(r.name.clone()).or_default().push(r.clone());
    }
    let apex = owners.entry(origin.clone()).or_default();
    apex.insert(0, soa.clone());
    apex.extend(apex_keys(&origin, keys, soa.ttl));
    let cuts: Vec<Name> = (owners.iter())
        .filter(|(n, rs)| **n != origin && rs.iter().any(|r| r.record_type() == RecordType::NS))
        .map(|(n, _)| n.clone())
        .collect();
    let glue = |n: &Name| cuts.iter().any(|c| c != n && c.zone_of(n));
    let names: Vec<Name> = owners.keys().filter(|n| !glue(n)).cloned().collect();
    let at = window(now);
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut records = owners.remove(name).unwrap_or_default();
        let next = names.get(i + 1).unwrap_or(&origin);
        records.push(nsec(name, next, &records, minimum));
        let cut = cuts.contains(name);
        let mut sigs = Vec::new();
        for set in sets(&records) {
            let kind = set[0].record_type();
            if !cut || matches!(kind, RecordType::DS | RecordType::NSEC) {
                let ttls = (set[0].ttl, set[0].ttl);
                sigs.extend(sign_set(keys.iter(), &set, &canonical(&set), &origin, ttls, at));
            }
        }
        out.append(&mut records);
        out.append(&mut sigs);
    }
    out.extend(owners.into_values().flatten()); // glue, unsigned
    out
}

/// The DNSKEY, CDNSKEY and CDS (SHA-1, SHA-256) records of `keys` at `origin`.
fn apex_keys(origin: &Name, keys: &[Key], ttl: u32) -> Vec<Record> {
    let mut out = Vec::new();
    for k in keys {
        out.push(unknown(origin.clone(), ttl, RecordType::DNSKEY, k.rdata.clone()));
        out.push(unknown(origin.clone(), ttl, RecordType::CDNSKEY, k.rdata.clone()));
        let signed = [&lower_wire(origin)[..], &k.rdata].concat();
        let digests = [
            (1u8, &ring::digest::SHA1_FOR_LEGACY_USE_ONLY),
            (2, &ring::digest::SHA256),
        ];
        for (kind, how) in digests {
            let mut cds = k.tag.to_be_bytes().to_vec();
            cds.extend([k.algorithm(), kind]);
            cds.extend(ring::digest::digest(how, &signed).as_ref());
            out.push(unknown(origin.clone(), ttl, RecordType::CDS, cds));
        }
    }
    out
}

/// The NSEC of `name` (owning `records`) pointing at `next`.
fn nsec(name: &Name, next: &Name, records: &[Record], ttl: u32) -> Record {
    let mut rdata = lower_wire(next).to_vec();
    let mut codes: Vec<u16> = records.iter().map(|r| u16::from(r.record_type())).collect();
    codes.extend([u16::from(RecordType::RRSIG), u16::from(RecordType::NSEC)]);
    type_bitmap(&mut codes, &mut rdata);
    unknown(name.clone(), ttl, RecordType::NSEC, rdata)
}

/// `records` (one owner) grouped by type, in the order the types first appear.
fn sets(records: &[Record]) -> Vec<Vec<Record>> {
    let kinds: BTreeSet<u16> = records.iter().map(|r| u16::from(r.record_type())).collect();
    kinds
        .into_iter()
        .map(|k| {
            records
                .iter()
                .filter(|r| u16::from(r.record_type()) == k)
                .cloned()
                .collect()
        })
        .collect()
}
