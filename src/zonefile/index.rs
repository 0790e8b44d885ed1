//! A loaded zone's index: the records by owner and type, the SOA and the
//! apex NS set kept apart as CoreDNS keeps them, DNAME owners with their
//! targets, and every name that exists; [`super::parse()`] builds it and
//! [`super::lookup`] reads it.

use std::collections::{HashMap, HashSet};

use hickory_proto::rr::{Name, Record, RecordType};

/// The record sets of one owner name, by type.
pub type Node = HashMap<RecordType, Vec<Record>>;

/// A loaded zone.
#[derive(Debug)]
pub struct Zone {
    pub(super) origin: Name,
    pub(super) soa: Record,
    /// The NS set at the apex (answered for NS and in the authority section).
    pub(super) apex_ns: Vec<Record>,
    /// Every other record: owner → type → set.
    pub(super) nodes: HashMap<Name, Node>,
    /// DNAME owners and their targets (one per owner: the first).
    pub(super) dnames: HashMap<Name, Name>,
    /// Every name that exists: owners and empty non-terminals up to the apex.
    pub(super) names: HashSet<Name>,
    /// A signed zone's owners in canonical order (RFC 4034 6.1), for the
    /// NSEC before a name; empty when the zone has no NSEC record.
    pub(super) canonical: Vec<Name>,
}

impl Zone {
    /// The zone's apex, lowercased.
    pub fn origin(&self) -> &Name {
        &self.origin
    }

    /// The apex SOA record.
    pub fn soa(&self) -> &Record {
        &self.soa
    }

    /// The serial of the apex SOA.
    pub fn serial(&self) -> u32 {
        match &self.soa.data {
            hickory_proto::rr::RData::SOA(s) => s.serial,
            _ => 0,
        }
    }

    /// Every record of the zone: the SOA first, then the apex NS set, then
    /// the rest (an AXFR's order, without the closing SOA).
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        std::iter::once(&self.soa)
            .chain(self.apex_ns.iter())
            .chain(self.nodes.values().flat_map(|n| n.values().flatten()))
    }

    /// The apex NS set.
    pub fn apex_ns(&self) -> &[Record] {
        &self.apex_ns
    }

    /// Every owner of records but the apex's SOA and NS, in canonical
    /// order (RFC 4034 section 6.1), as a transfer lists them.
    pub fn owners(&self) -> Vec<&Name> {
        let mut owners: Vec<&Name> = self.nodes.keys().collect();
        owners.sort_unstable();
        owners
    }

    /// The records `owner` owns (the apex's SOA and NS apart), by type.
    pub fn owned(&self, owner: &Name) -> Vec<&Record> {
        let Some(node) = self.nodes.get(owner) else {
            return Vec::new();
        };
        let mut types: Vec<&RecordType> = node.keys().collect();
        types.sort_unstable_by_key(|t| u16::from(**t));
        types.into_iter().flat_map(|t| &node[t]).collect()
    }

    /// The records of `name` and `rtype` (apex NS and SOA included).
    pub(super) fn get(&self, name: &Name, rtype: RecordType) -> &[Record] {
        if name == &self.origin {
            match rtype {
                RecordType::SOA => return std::slice::from_ref(&self.soa),
                RecordType::NS => return &self.apex_ns,
                _ => {}
            }
        }
        self.nodes
            .get(name)
            .and_then(|n| n.get(&rtype))
            .map_or(&[], Vec::as_slice)
    }

    /// Whether `name` owns records (not the apex's SOA and NS).
    pub(super) fn owns(&self, name: &Name) -> bool {
        self.nodes.contains_key(name)
    }

    /// Whether `name` exists: it owns records or is an empty non-terminal.
    pub(super) fn exists(&self, name: &Name) -> bool {
        self.names.contains(name)
    }

    /// The NS set of a zone cut at `name` (never the apex).
    pub(super) fn cut(&self, name: &Name) -> Option<&[Record]> {
        if name == &self.origin {
            return None;
        }
        let ns = self.get(name, RecordType::NS);
        (!ns.is_empty()).then_some(ns)
    }
}
