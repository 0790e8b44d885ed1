//! The topology zone of each endpoint of a slice, kept only under the
//! `kubernetes` option `zonal` (for `<zone>.pin|prefer._zone.` names).
//!
//! Packed: a slice's endpoints share a handful of zones, so the distinct
//! zone names are held once (shared `Arc<str>`, interned per snapshot) and
//! each endpoint holds a 2-byte index into them. A slice with neither
//! zones nor hostnames pays one null pointer for both
//! ([`super::records::Endpoints`]); one with zones 24 bytes for the box of
//! both (when it has no hostnames), 8 for the zones' box, 32 for the two
//! lists, 16 per distinct zone and 2 per endpoint. An EndpointSlice holds at most 1,000 endpoints, so the
//! index never runs out; a zone past `u16::MAX - 1` distinct ones would
//! read as none.

use std::sync::Arc;

/// The index that stands for "no zone".
const NONE: u16 = u16::MAX;

/// Each endpoint's zone, in the slice's endpoint order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zones {
    names: Box<[Arc<str>]>,
    of: Box<[u16]>,
}

impl Zones {
    /// Packs one zone per endpoint (`None`: it has none); `None` when no
    /// endpoint has a zone.
    pub fn new(zones: Vec<Option<Arc<str>>>) -> Option<Box<Zones>> {
        if zones.iter().all(Option::is_none) {
            return None;
        }
        let mut names: Vec<Arc<str>> = Vec::new();
        let of = zones
            .into_iter()
            .map(|zone| {
                let Some(zone) = zone else { return NONE };
                let at = names.iter().position(|n| *n == zone).unwrap_or_else(|| {
                    names.push(zone);
                    names.len() - 1
                });
                u16::try_from(at).ok().filter(|i| *i != NONE).unwrap_or(NONE)
            })
            .collect();
        Some(Box::new(Zones {
            names: names.into_boxed_slice(),
            of,
        }))
    }

    /// The zone of endpoint `i`, if it has one.
    pub fn get(&self, i: usize) -> Option<&Arc<str>> {
        let at = *self.of.get(i)?;
        self.names.get(usize::from(at))
    }

    /// One zone per endpoint, `""` for none (a [`super::Record`]'s form).
    pub fn texts(&self) -> Vec<String> {
        (0..self.of.len())
            .map(|i| self.get(i).map_or_else(String::new, |z| z.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The price in the module doc: a slice without zones or hostnames
    /// pays one pointer for both (a [`super::super::records::Slice`] is
    /// 56 bytes, its endpoints 32, a multi-cluster slice 72, a Service 72).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_slice_pays_one_pointer_for_zones() {
        assert_eq!(std::mem::size_of::<Option<Box<Zones>>>(), 8);
        assert_eq!(std::mem::size_of::<super::super::records::Endpoints>(), 32);
        assert_eq!(std::mem::size_of::<super::super::records::Slice>(), 64);
        assert_eq!(std::mem::size_of::<super::super::mcs::McsSlice>(), 80);
        assert_eq!(std::mem::size_of::<super::super::records::Service>(), 120);
    }

    /// What a slice's zones become in the store comes back out in its
    /// export (the `persist` file is written from it), interned once.
    #[test]
    fn zones_survive_the_store_and_its_export() {
        use crate::store::{Record, Writer};
        let mut w = Writer::new(&[]);
        let ip = |s: &str| s.parse().expect("ip");
        let zones = vec!["zone-a".to_string(), String::new()];
        w.apply(Record::Slice {
            namespace: "db".into(),
            name: "pg-1".into(),
            service: "pg".into(),
            ports: vec![],
            endpoints: vec![(ip("10.0.0.1"), None), (ip("10.0.0.2"), None)],
            zones: zones.clone(),
            trigger: None,
        });
        let exported: Vec<Vec<String>> = w
            .export()
            .records()
            .filter_map(|r| match r {
                Record::Slice { zones, .. } => Some(zones),
                _ => None,
            })
            .collect();
        assert_eq!(exported, [zones]);
    }

    #[test]
    fn zones_pack_and_read_back() {
        assert_eq!(Zones::new(vec![None, None]), None);
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("us-west-2a"), Arc::from("us-west-2b"));
        let z = Zones::new(vec![Some(a.clone()), None, Some(b.clone()), Some(a.clone())]).expect("zones");
        assert_eq!(z.names.len(), 2, "each distinct zone once");
        assert_eq!(z.get(0), Some(&a));
        assert_eq!(z.get(1), None);
        assert_eq!(z.get(3), Some(&a));
        assert_eq!(z.get(9), None);
        assert_eq!(z.texts(), ["us-west-2a", "", "us-west-2b", "us-west-2a"]);
    }
}
