//! Interning: the names and port lists the snapshot holds are shared
//! `Arc`s, one per distinct value, so a thousand services in one
//! namespace hold its name once and most services share a port list.
//! A Service's name is held by its identity alone.
//! Strings nothing refers to any more are pruned as the set grows.

use std::net::IpAddr;
use std::sync::Arc;

use super::writer::Writer;
use crate::store::change::PortIn;
use crate::store::records::{Endpoints, Port, Ports};

impl Writer {
    pub(super) fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(existing) = self.strings.get(s) {
            return existing.clone();
        }
        let arc: Arc<str> = Arc::from(s);
        self.strings.insert(arc.clone());
        arc
    }

    /// Drops interned strings nothing else refers to any more.
    pub(super) fn prune_strings(&mut self) {
        self.recent_ports = Default::default();
        self.port_lists.retain(|p| p.holders() > 1);
        self.strings.retain(|s| Arc::strong_count(s) > 1);
        self.strings_after_prune = self.strings.len();
    }

    /// The interned list equal to `ports`. The lists used last are tried
    /// first, without building and hashing the list: most services and
    /// slices in a row share one (3% of the first sync's instructions).
    pub(super) fn ports(&mut self, ports: Vec<PortIn>) -> Ports {
        let same = |held: &&Ports| {
            held.len() == ports.len()
                && held
                    .iter()
                    .zip(&ports)
                    .all(|(h, p)| h.port == p.port && h.proto == p.proto && *h.name == *p.name)
        };
        if let Some(hit) = self.recent_ports.iter().flatten().find(same) {
            return hit.clone();
        }
        let list = self.intern_ports(ports);
        self.recent_ports.rotate_right(1);
        self.recent_ports[0] = Some(list.clone());
        list
    }

    fn intern_ports(&mut self, ports: Vec<PortIn>) -> Ports {
        let ports: Vec<Port> = ports
            .into_iter()
            .map(|p| Port {
                name: self.intern(&p.name),
                proto: p.proto,
                port: p.port,
            })
            .collect();
        if let Some(existing) = self.port_lists.get(&ports[..]) {
            return existing.clone();
        }
        let arc = Ports::from(ports);
        self.port_lists.insert(arc.clone());
        arc
    }

    /// Endpoints with their hostnames interned.
    pub(super) fn endpoints(&mut self, endpoints: Vec<(IpAddr, Option<String>)>) -> Endpoints {
        let endpoints = endpoints
            .into_iter()
            .map(|(addr, host)| (addr, host.map(|h| self.intern(&h))));
        Endpoints::new(endpoints.collect())
    }
}
