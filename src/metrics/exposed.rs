//! Metric families a plugin keeps per server block, rendered on
//! `/metrics` without the page naming the plugin: each plugin's counters
//! implement [`Exposed`], and [`render`] writes every family of the
//! catalogue's [`PER_BLOCK`] list with the series of each block's.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use super::catalogue::{Family, PER_BLOCK};

/// A plugin's counters of one server block.
pub trait Exposed: Send + Sync {
    /// The families it counts in, as listed in [`PER_BLOCK`]; `series`
    /// indexes them.
    fn families(&self) -> &'static [Family];

    /// The series lines of family `i` (one `name{labels} value` a line).
    fn series(&self, i: usize, s: &mut String);
}

/// Every family of [`PER_BLOCK`], heads written also when no block has
/// the plugin, each with the series of the blocks' counters in `all`
/// (blocks sharing a `server` label count in one series, as a Prometheus
/// counter vector keyed by the label would).
pub fn render(all: &[Arc<dyn Exposed>], s: &mut String) {
    let mut lines = String::new();
    for families in PER_BLOCK {
        let ours = || {
            all.iter()
                .filter(|e| e.families().first().map(|f| f.name) == families.first().map(|f| f.name))
        };
        for (i, family) in families.iter().enumerate() {
            family.head(s);
            lines.clear();
            ours().for_each(|e| e.series(i, &mut lines));
            summed(&lines, s);
        }
    }
}

/// `lines` into `s`, the values of lines of one series (the same name and
/// labels) summed into the first of them.
fn summed(lines: &str, s: &mut String) {
    let mut series: Vec<(&str, Option<u64>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for line in lines.lines() {
        let count = line
            .rsplit_once(' ')
            .and_then(|(k, v)| Some((k, v.parse::<u64>().ok()?)));
        let Some((name, n)) = count else {
            series.push((line, None)); // not a count: as written
            continue;
        };
        match at.get(name).and_then(|&i| series.get_mut(i)) {
            Some((_, Some(sum))) => *sum += n,
            _ => {
                at.insert(name, series.len());
                series.push((name, Some(n)));
            }
        }
    }
    for (name, n) in series {
        let _ = match n {
            Some(n) => writeln!(s, "{name} {n}"),
            None => writeln!(s, "{name}"),
        };
    }
}
