//! Rows of the directive table ([`super::DIRECTIVES`]) for what the
//! router does before any plugin answers: which block serves a query
//! (`view`), the labels its plugins read (`metadata`), and `autopath`'s
//! search walk; kept in a file of their own so the table stays within the
//! size limit.

use super::spec::Spec;
use crate::config::effective::print;
use crate::query::metadata;
use crate::query::plugins::autopath;
use crate::query::route::view;

/// `metadata [ZONES...]`: labels other plugins read (`view`, `log`).
pub const METADATA: Spec = Spec {
    name: "metadata",
    options: false,
    parse: |d, c| metadata::parse(d, &c.server.zones, &mut c.server.metadata, c.errors),
    enabled: |s, _| s.metadata.is_some(),
    print: |b, s, _| metadata::print(b, s.metadata.as_ref()),
};

/// `view NAME { expr ... }`: the block serves the queries it accepts.
pub const VIEW: Spec = Spec {
    name: "view",
    options: true,
    parse: |d, c| view::setup::parse(d, &mut c.server.view, c.errors),
    enabled: |s, _| s.view.is_some(),
    print: |b, s, _| view::print::view(b, s.view.as_ref()),
};

/// `autopath [ZONE...] RESOLV-CONF|@kubernetes`: a pod's search path walked here.
pub const AUTOPATH: Spec = Spec {
    name: "autopath",
    options: false,
    parse: |d, c| c.server.autopath = autopath::setup::autopath(d, c.dir, c.errors).map(|a| (a, d.name.pos.clone())),
    enabled: |s, _| s.autopath.is_some(),
    print: print::autopath,
};
