//! How `clusterdns check` prints `secondary`: its zones, every primary
//! with its port, `catalog` with its members, and `fallthrough`, so the printout loads again the same.

use crate::corefile::words::{names, with, Block};
use crate::query::plugins::secondary::setup::SecondaryConfig;

pub(crate) fn secondary(b: &mut Block, s: &SecondaryConfig) {
    let from: Vec<String> = s.from.iter().map(ToString::to_string).collect();
    let mut options = vec![format!("transfer from {}", from.join(" "))];
    options.extend(s.catalog.as_ref().map(|c| with("catalog", &names(c))));
    options.extend(s.fallthrough.as_ref().map(|f| with("fallthrough", &names(f))));
    b.directive(with("secondary", &names(&s.zones)), &options);
}
