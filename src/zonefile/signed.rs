//! A signed zone's answer to a query with DO set, as CoreDNS's `file`
//! gives it: every record set of the answer with the RRSIGs the zone holds
//! for it (those of a wildcard renamed to the name asked), a delegation
//! with its DS set, and a denial with the NSEC records that prove it
//! (RFC 4035 section 3.1.3): NODATA the NSEC of the name (or of the
//! wildcard that matched), NXDOMAIN the NSEC before the name in canonical
//! order and the one before the wildcard at its closest encloser, a
//! wildcard answer the NSEC before the name. The zone's own records are
//! served as they are: nothing is signed here.

use std::collections::HashSet;

use hickory_proto::rr::{Name, Record, RecordType};

use super::dnssec::covered;
use super::index::Zone;
use super::lookup::{Found, Outcome};

impl Zone {
    /// `found`, this zone's answer to `qname`, with the zone's
    /// DNSSEC records added (see the file's head).
    pub fn add_dnssec(&self, qname: &Name, found: &mut Found) {
        let qname = qname.to_lowercase();
        let mut extra = Vec::new();
        if found.outcome == Outcome::Delegation {
            if let Some(cut) = found.authority.first().map(|ns| ns.name.to_lowercase()) {
                found.authority.extend_from_slice(self.get(&cut, RecordType::DS));
            }
        }
        if found.answer.is_empty() {
            self.denial(&qname, found, &mut extra);
        } else if found.wildcard.is_some() {
            // No closer name exists: the NSEC before the name says so.
            extra.extend(self.nsec_before(&qname));
        }
        let wildcard = found.wildcard.clone();
        for section in [&mut found.answer, &mut found.authority, &mut found.additional] {
            for (owner, kind) in sets(section) {
                match &wildcard {
                    // Made from the wildcard: its RRSIGs, renamed as its records are.
                    Some(w) if owner == qname => section.extend(self.sigs(w, kind).into_iter().map(|mut r| {
                        r.name = qname.clone();
                        r
                    })),
                    _ => section.extend(self.sigs(&owner, kind)),
                }
            }
        }
        found.authority.append(&mut extra);
    }

    /// The NSEC records (and their RRSIGs) that prove a negative answer.
    fn denial(&self, qname: &Name, found: &Found, out: &mut Vec<Record>) {
        match found.outcome {
            Outcome::NoData => {
                let owner = found.wildcard.as_ref().unwrap_or(qname);
                out.extend(self.with_sigs(owner, RecordType::NSEC));
            }
            // An empty non-terminal: the NSEC before it.
            Outcome::Success if !self.owns(qname) => out.extend(self.nsec_before(qname)),
            Outcome::NameError => {
                let deny = self.before(qname);
                out.extend(deny.iter().flat_map(|d| self.with_sigs(d, RecordType::NSEC)));
                let Some(wildcard) = self.wildcard_at(qname) else {
                    return;
                };
                let other = self.before(&wildcard).filter(|w| Some(w) != deny.as_ref());
                out.extend(other.iter().flat_map(|w| self.with_sigs(w, RecordType::NSEC)));
            }
            _ => {}
        }
    }

    /// The records of `owner` `kind` and the RRSIGs over them.
    fn with_sigs(&self, owner: &Name, kind: RecordType) -> Vec<Record> {
        let mut out = self.get(owner, kind).to_vec();
        if !out.is_empty() {
            out.extend(self.sigs(owner, kind));
        }
        out
    }

    /// The RRSIGs `owner` holds over its `kind` records.
    fn sigs(&self, owner: &Name, kind: RecordType) -> Vec<Record> {
        self.get(&owner.to_lowercase(), RecordType::RRSIG)
            .iter()
            .filter(|r| covered(r) == Some(kind))
            .cloned()
            .collect()
    }

    /// The NSEC (with its RRSIGs) of the last owner before `name`.
    fn nsec_before(&self, name: &Name) -> Vec<Record> {
        self.before(name)
            .map(|d| self.with_sigs(&d, RecordType::NSEC))
            .unwrap_or_default()
    }

    /// The last owner at or before `name` in canonical order (RFC 4034 6.1).
    fn before(&self, name: &Name) -> Option<Name> {
        let at = self.canonical.partition_point(|o| o <= name);
        at.checked_sub(1).map(|i| self.canonical[i].clone())
    }

    /// The wildcard at `qname`'s closest encloser: its nearest ancestor
    /// that owns records (CoreDNS's), else the apex.
    fn wildcard_at(&self, qname: &Name) -> Option<Name> {
        let encloser = (self.origin.num_labels() + 1..qname.num_labels())
            .rev()
            .map(|labels| qname.trim_to(usize::from(labels)))
            .find(|n| self.owns(n))
            .unwrap_or_else(|| self.origin.clone());
        Name::from_labels([&b"*"[..]])
            .and_then(|w| w.append_domain(&encloser))
            .ok()
    }
}

/// The record sets of `section` (owner, type) in order, RRSIGs left out.
fn sets(section: &[Record]) -> Vec<(Name, RecordType)> {
    let mut seen = HashSet::new();
    section
        .iter()
        .filter(|r| r.record_type() != RecordType::RRSIG)
        .map(|r| (r.name.to_lowercase(), r.record_type()))
        .filter(|set| seen.insert(set.clone()))
        .collect()
}
