//! The table's rows of the zones served from elsewhere than a file named
//! in the Corefile: `auto` (a directory's zone files) and `secondary`
//! (transferred from a primary).

use super::Spec;
use crate::query::plugins::auto;
use crate::query::plugins::secondary::{print, setup};

/// `auto`, after `file` as in CoreDNS's `plugin.cfg`.
pub(super) const AUTO: Spec = Spec {
    name: "auto",
    options: true,
    parse: |d, c| {
        let dir = crate::config::root::dir(c.server.root.as_deref(), c.dir);
        c.server
            .autos
            .push(auto::setup::parse(d, &c.server.zones, dir, c.errors))
    },
    enabled: |s, _| !s.autos.is_empty(),
    print: |b, s, _| s.autos.iter().for_each(|a| auto::print::auto(b, a)),
};

/// `secondary`, after `auto` as in CoreDNS's `plugin.cfg`.
pub(super) const SECONDARY: Spec = Spec {
    name: "secondary",
    options: true,
    parse: |d, c| c.server.secondaries.push(setup::parse(d, &c.server.zones, c.errors)),
    enabled: |s, _| !s.secondaries.is_empty(),
    print: |b, s, _| s.secondaries.iter().for_each(|z| print::secondary(b, z)),
};
