//! The table's rows of the zones served as zone files: `file` (a file
//! named in the Corefile), `auto` (a directory's zone files) and
//! `secondary` (transferred from a primary).

use super::Spec;
use crate::config::effective::print as effective;
use crate::query::plugins::auto;
use crate::query::plugins::file::setup as file;
use crate::query::plugins::secondary::{print, setup};

/// `file`, after `kubernetes` as in CoreDNS's `plugin.cfg`.
pub(super) const FILE: Spec = Spec {
    name: "file",
    options: true,
    parse: |d, c| {
        let dir = crate::config::root::dir(c.server.root.as_deref(), c.dir);
        c.server.files.extend(file::file(d, &c.server.zones, dir, c.errors))
    },
    enabled: |s, _| !s.files.is_empty(),
    print: effective::file,
};

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
