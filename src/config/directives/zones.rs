//! The table's rows of the zones served from elsewhere than a file named
//! in the Corefile: `secondary` (transferred from a primary).

use super::Spec;
use crate::query::plugins::secondary::{print, setup};

/// `secondary`, after `file` as in CoreDNS's `plugin.cfg`.
pub(super) const SECONDARY: Spec = Spec {
    name: "secondary",
    options: true,
    parse: |d, c| c.server.secondaries.push(setup::parse(d, &c.server.zones, c.errors)),
    enabled: |s, _| !s.secondaries.is_empty(),
    print: |b, s, _| s.secondaries.iter().for_each(|z| print::secondary(b, z)),
};
