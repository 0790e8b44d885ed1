//! Metric families a plugin keeps per server block, rendered on
//! `/metrics` without the page naming the plugin: each plugin's counters
//! implement [`Exposed`], and [`render`] writes every family of the
//! catalogue's [`PER_BLOCK`] list with the series of each block's
//! (summed over the blocks sharing their labels, for counters that say so:
//! [`Exposed::sum`]).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use super::catalogue::{Family, PER_BLOCK};

/// A plugin's counters of one server block.
pub trait Exposed: Send + Sync {
    /// The families it counts in, as listed in [`PER_BLOCK`]; `series`
    /// indexes them.
    fn families(&self) -> &'static [Family];

    /// The series lines of family `i` (one `name{labels} value` a line).
    fn series(&self, i: usize, s: &mut String);

    /// For counters whose series are summed over the blocks that share
    /// their label values (blocks of one listener share the `server`
    /// label): adds family `i`'s series into `sums` (label values in the
    /// family's order, to the count) and says true; false (the default):
    /// they are written by [`Exposed::series`].
    fn sum(&self, _i: usize, _sums: &mut BTreeMap<Vec<String>, u64>) -> bool {
        false
    }
}

/// Every family of [`PER_BLOCK`], heads written also when no block has
/// the plugin, each with the series of the blocks' counters in `all`.
pub fn render(all: &[Arc<dyn Exposed>], s: &mut String) {
    for families in PER_BLOCK {
        let ours = || {
            all.iter()
                .filter(|e| e.families().first().map(|f| f.name) == families.first().map(|f| f.name))
        };
        for (i, family) in families.iter().enumerate() {
            family.head(s);
            let mut sums = BTreeMap::new();
            ours().filter(|e| !e.sum(i, &mut sums)).for_each(|e| e.series(i, s));
            for (values, n) in sums {
                let labels: Vec<String> = (family.labels.iter().zip(values))
                    .map(|(l, v)| format!("{l}=\"{v}\""))
                    .collect();
                let _ = writeln!(s, "{}{{{}}} {n}", family.name, labels.join(","));
            }
        }
    }
}
